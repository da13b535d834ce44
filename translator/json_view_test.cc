// A JsonView over a simdjson document must answer exactly as one over nlohmann's parse of the
// same text, and a PV must translate byte for byte the same through either: these tests hold
// the simdjson side to the nlohmann side on chosen values, on a generated dump (as written, with
// every key tangled behind decoys, and with a late duplicate that breaks one field) and on
// malformed PVs. SpecChanges, what the translation returns, is tested here too.
#include "translator/json_view.h"

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include "bench/generate_pv_list.h"
#include "tests/support/test_json.h"
#include "translator/json_text_writer.h"
#include "translator/spec_changes.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;
using Members = std::vector<std::pair<std::string, JsonView>>;

// A text parsed by simdjson; the element is valid as long as this object.
class SimdDoc {
 public:
  explicit SimdDoc(const std::string& text)
      : ok_(parser_.parse(text).get(root_) == simdjson::SUCCESS) {}
  bool ok() const { return ok_; }
  JsonView view() const { return JsonView::Of(root_); }

 private:
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
  bool ok_;
};

Members MembersOf(JsonView v) {
  Members out;
  v.ForEachMember([&](std::string_view k, JsonView x) { out.emplace_back(std::string(k), x); });
  return out;
}

// Everything `simd` answers, compared with `nl`, recursively.
void ExpectSameView(JsonView simd, JsonView nl, const std::string& path) {
  SCOPED_TRACE(path);
  ASSERT_EQ(static_cast<int>(simd.type()), static_cast<int>(nl.type()));
  EXPECT_EQ(simd.size(), nl.size());
  EXPECT_EQ(simd.empty(), nl.empty());
  EXPECT_EQ(bool(simd), bool(nl));
  EXPECT_FALSE(simd.Find("\x01 not there").present());
  switch (nl.type()) {
    case JsonView::Type::kString:
      EXPECT_EQ(simd.string_value(), nl.string_value());
      break;
    case JsonView::Type::kBoolean:
      EXPECT_EQ(simd.bool_value(), nl.bool_value());
      break;
    case JsonView::Type::kUnsigned:
      EXPECT_EQ(simd.unsigned_value(), nl.unsigned_value());
      [[fallthrough]];
    case JsonView::Type::kInteger:
      EXPECT_EQ(simd.int_value(), nl.int_value());
      break;
    case JsonView::Type::kFloat:
      EXPECT_EQ(simd.double_value(), nl.double_value());
      EXPECT_EQ(std::signbit(simd.double_value()), std::signbit(nl.double_value()));
      break;
    default:
      break;
  }
  if (!nl.is_object()) {
    EXPECT_FALSE(simd.Find("").present());
    EXPECT_TRUE(MembersOf(simd).empty());
  }
  if (!nl.is_array()) {
    int elements = 0;
    simd.ForEachElement([&](JsonView) { ++elements; });
    EXPECT_EQ(elements, 0);
  }
  if (nl.is_object()) {
    Members got = MembersOf(simd), want = MembersOf(nl);
    ASSERT_EQ(got.size(), want.size());
    // As written, with the last of repeated keys kept, the members are the distinct ones.
    std::map<std::string, JsonView> as_written;
    simd.ForEachMemberAsWritten(
        [&](std::string_view k, JsonView x) { as_written[std::string(k)] = x; });
    ASSERT_EQ(as_written.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].first, want[i].first) << "member " << i;
      const std::string sub = path + "." + want[i].first;
      ExpectSameView(got[i].second, want[i].second, sub);
      ExpectSameView(simd.Find(want[i].first), nl.Find(want[i].first), sub + " (Find)");
      ExpectSameView(as_written[want[i].first], want[i].second, sub + " (as written)");
    }
  }
  if (nl.is_array()) {
    std::vector<JsonView> got, want;
    simd.ForEachElement([&](JsonView x) { got.push_back(x); });
    nl.ForEachElement([&](JsonView x) { want.push_back(x); });
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectSameView(got[i], want[i], path + "[" + std::to_string(i) + "]");
    }
  }
}

void ExpectViewSameAsNlohmann(const std::string& text) {
  SCOPED_TRACE(text);
  SimdDoc doc(text);
  ASSERT_TRUE(doc.ok());
  const Json want = Json::parse(text);
  ExpectSameView(doc.view(), want, "$");
  const Json copy = doc.view().ToJson();
  EXPECT_EQ(copy, want);
  EXPECT_EQ(copy.dump(), want.dump());
  ExpectSameView(copy, want, "ToJson()");  // the same types (signed, unsigned) at every node
}

// 40 members written in descending order (more than WithSortedMembers holds inline), every
// third key repeated later with another value; or, with `in_order`, ascending and distinct.
std::string ManyMembers(bool in_order) {
  std::map<std::string, int> keys;
  for (int i = 0; i < 40; ++i) keys["k" + std::to_string(i)] = i;
  std::string text = "{";
  auto add = [&](const std::string& k, const std::string& v) {
    text += "\"" + k + "\":" + v + ",";
  };
  if (in_order) {
    for (const auto& [k, i] : keys) add(k, std::to_string(i));
  } else {
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) add(it->first, "{\"v\":1}");
    for (int i = 0; i < 40; i += 3) add("k" + std::to_string(i), i % 2 ? "null" : "\"again\"");
  }
  text.back() = '}';
  return text;
}

TEST(JsonViewTest, SimdjsonAnswersAsNlohmann) {
  for (const std::string& text : std::vector<std::string>{
           R"({"b":1,"a":{"y":[1,{"q":null}],"x":null},"c":"s"})", R"({"a":{"x":1},"a":null})",
           R"({"a":null,"a":{"x":1}})",
           R"({"a":{"x":1},"a":{"y":2}})",  // the later object replaces, not merges
           R"({"k":1,"k":"2","k":[3]})", R"({"a":1,"a":2,"b":3})", R"({"b":1,"a":2,"b":3})",
           R"({})", R"([])", R"([{}, [], [[]], {"":{}}, {"":1,"":2}])",
           // Byte order: "Z" < "a" < "z" < "\u00e9" (c3 a9) < "\u00ff" (c3 bf) < U+1F600.
           R"({"\u00e9":1,"z":2,"Z":3,"\u00ff":4,"\ud83d\ude00":5,"a\u0000b":6,"a":7,"\u00e9":8})",
           R"([0,-1,9223372036854775807,9223372036854775808,18446744073709551615,
               -9223372036854775808,1.5,1e300,-0.0,0.0,1E2,0.1,-1.5e-300,5e-324,1e-400,-1e-400,
               1e23,123456789012345678901234567890e-10])",
           R"({"a\"b":1,"a\\b":2,"a\/b":3,"a/b":4,"\u0041":5,"A":6})",
           R"({"n":0,"m":-1,"u":18446744073709551615,"f":1.5,"t":true,"x":false,"z":null})",
           R"([true,false,null,"","tab\t\"q\"\\ \/"])", "true", "false", "null", R"("s")", "42",
           "-42", "1.5", ManyMembers(false), ManyMembers(true)}) {
    ExpectViewSameAsNlohmann(text);
  }
}

// nlohmann parses "-0" as a signed integer 0; simdjson's tape keeps only the value 0, so the
// view calls it unsigned (json_view.h). Everything a caller can read of it is the same: the
// value, its text, equality, and (TranslationParityTest below) every translation.
TEST(JsonViewTest, NegativeZeroIntegerDiffersFromNlohmannOnlyInSignedness) {
  SimdDoc doc(R"({"partition":-0})");
  ASSERT_TRUE(doc.ok());
  const Json want = Json::parse(R"({"partition":-0})");
  JsonView simd = doc.view().Find("partition"), nl = JsonView(want).Find("partition");
  EXPECT_EQ(nl.type(), JsonView::Type::kInteger);
  EXPECT_EQ(simd.type(), JsonView::Type::kUnsigned);
  EXPECT_TRUE(simd.is_number_integer());
  EXPECT_EQ(simd.int_value(), 0);
  EXPECT_EQ(simd.int_value(), nl.int_value());
  const Json copy = doc.view().ToJson();
  EXPECT_EQ(copy, want);
  EXPECT_EQ(copy.dump(), want.dump());
  EXPECT_EQ(copy.dump(), R"({"partition":0})");
}

TEST(JsonViewTest, AbsentAndNull) {
  JsonView absent;
  EXPECT_EQ(absent.type(), JsonView::Type::kAbsent);
  EXPECT_FALSE(absent.present());
  EXPECT_FALSE(absent);
  EXPECT_FALSE(absent.is_null());
  EXPECT_EQ(absent.size(), 0u);
  EXPECT_TRUE(absent.empty());
  EXPECT_FALSE(absent.Find("a").present());
  EXPECT_TRUE(MembersOf(absent).empty());
  int calls = 0;
  absent.ForEachElement([&](JsonView) { ++calls; });
  absent.ForEachMemberAsWritten([&](std::string_view, JsonView) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(absent.ToJson().is_null());

  const Json null_json;
  SimdDoc null_doc("null");
  for (JsonView null_view : {JsonView(null_json), null_doc.view()}) {
    EXPECT_TRUE(null_view.present());
    EXPECT_TRUE(null_view.is_null());
    EXPECT_FALSE(null_view);
  }
}

TEST(JsonViewTest, FindOnNonObjectsIsAbsent) {
  for (const char* text : {R"([{"a":1}])", R"("a")", "1", "-1", "1.5", "true", "null"}) {
    SCOPED_TRACE(text);
    SimdDoc doc(text);
    ASSERT_TRUE(doc.ok());
    const Json json = Json::parse(text);
    for (JsonView v : {doc.view(), JsonView(json)}) {
      EXPECT_FALSE(v.Find("a").present());
      EXPECT_FALSE(v.Find("").present());
    }
  }
}

TEST(SpecChangesTest, SetAndRemoveKeepOneChangePerKeyInKeyOrder) {
  SpecChanges changes;
  changes.Set("z", 1);
  changes.Set("a", 2);
  changes.Remove("m");
  changes.Set("z", 3);
  changes.Set("b", 4);
  changes.Remove("b");  // a removal replaces the earlier Set
  std::vector<std::string> keys;
  for (const auto& c : changes.changes()) keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "m", "z"}));
  ASSERT_NE(changes.Find("z"), nullptr);
  EXPECT_EQ(*changes.Find("z")->value, Json(3));
  EXPECT_FALSE(changes.Find("b")->value.has_value());
  EXPECT_EQ(changes.Find("q"), nullptr);

  Json pv = J(R"({"kind":"PV","spec":{"m":1,"b":[],"keep":true,"a":0}})");
  changes.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, J(R"({"kind":"PV","spec":{"a":2,"keep":true,"z":3}})"));
}

TEST(SpecChangesTest, CopyAndMoveFormsApplyTheSame) {
  SpecChanges changes;
  changes.Remove("gcePersistentDisk");
  changes.Set("csi", J(R"({"driver":"d","volumeHandle":"h"})"));
  changes.RenameTopologyKey("old", "new");
  const Json pv = J(R"({"spec":{"gcePersistentDisk":{},"nodeAffinity":{"required":{
      "nodeSelectorTerms":[{"matchExpressions":[{"key":"old"},{"key":"other"}]}]}}}})");
  Json by_copy = pv, again = pv, by_move = pv;
  changes.ApplyTo(by_copy);
  changes.ApplyTo(again);  // the copying form leaves the changes as they were
  std::move(changes).ApplyTo(by_move);
  EXPECT_JSON_EQ(by_copy, J(R"({"spec":{"csi":{"driver":"d","volumeHandle":"h"},"nodeAffinity":{
      "required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"new"},{"key":"other"}]}]}}}})"));
  EXPECT_JSON_EQ(again, by_copy);
  EXPECT_JSON_EQ(by_move, by_copy);
}

Json AffinityWithKeys(const std::string& exprs) {
  return J(R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":)" +
           exprs + "}]}}}}");
}

TEST(SpecChangesTest, RenamesApplyInOrder) {
  SpecChanges chain;
  chain.RenameTopologyKey("a", "b");
  chain.RenameTopologyKey("b", "c");
  Json pv = AffinityWithKeys(R"([{"key":"a"},{"key":"b"},{"key":"c"},{"key":"d"}])");
  chain.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, AffinityWithKeys(R"([{"key":"c"},{"key":"c"},{"key":"c"},{"key":"d"}])"));

  SpecChanges reversed;
  reversed.RenameTopologyKey("b", "c");
  reversed.RenameTopologyKey("a", "b");
  pv = AffinityWithKeys(R"([{"key":"a"},{"key":"b"}])");
  reversed.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, AffinityWithKeys(R"([{"key":"b"},{"key":"c"}])"));
}

TEST(SpecChangesTest, RenamesLeaveMalformedShapesAlone) {
  SpecChanges changes;
  changes.RenameTopologyKey("k", "renamed");
  for (const char* affinity :
       {R"(null)", R"("k")", R"({"required":5})", R"({"required":{"nodeSelectorTerms":{}}})",
        R"({"required":{"nodeSelectorTerms":{"matchExpressions":[{"key":"k"}]}}})",
        R"({"required":{"nodeSelectorTerms":[null,5,{"matchExpressions":{"key":"k"}}]}})",
        R"({"required":{"nodeSelectorTerms":[{"matchExpressions":[null,"k",{"key":1},
            {"key":["k"]},{"Key":"k"}]}]}})"}) {
    Json pv = J(std::string(R"({"spec":{"nodeAffinity":)") + affinity + "}}");
    const Json before = pv;
    changes.ApplyTo(pv);
    EXPECT_JSON_EQ(pv, before);
  }
  // What does fit is renamed past what does not.
  Json pv = J(R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[null,7,
      {"matchExpressions":[{"key":2},{"key":"k"}]}]}}}})");
  changes.ApplyTo(pv);
  EXPECT_EQ(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][2].dump(),
            R"({"matchExpressions":[{"key":2},{"key":"renamed"}]})");
}

TEST(SpecChangesTest, TopologyOperationsApplyInOrder) {
  SpecChanges changes;
  changes.RenameTopologyKey("a", "b");
  changes.AddTopologyRequirement(J(R"({"key":"a","values":["x"]})"));
  changes.RenameTopologyKey("a", "c");
  Json pv = J(R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"a"}]},null]}}}})");
  changes.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, J(R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"b"},{"key":"c","values":["x"]}]},
      {"matchExpressions":[{"key":"c","values":["x"]}]}]}}}})"));
  // An addition creates the node affinity; renames alone do not.
  pv = J(R"({"spec":{}})");
  changes.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, J(R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"c","values":["x"]}]}]}}}})"));
  SpecChanges renames;
  renames.RenameTopologyKey("a", "b");
  pv = J(R"({"spec":{}})");
  renames.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, J(R"({"spec":{}})"));
}

TEST(SpecChangesTest, NoChangesAddNoSpec) {
  Json pv = J(R"({"kind":"PersistentVolume"})");
  SpecChanges().ApplyTo(pv);
  const SpecChanges none;
  none.ApplyTo(pv);
  EXPECT_JSON_EQ(pv, J(R"({"kind":"PersistentVolume"})"));
}

// ---- Translation through either parser ---------------------------------------------------

std::string Outcome(const Status& s) { return s.ok() ? "ok" : s.ToString(); }

// The simdjson view of `pv` translates to what nlohmann's does: the same error, or the same
// changes (both application forms, and the text written from the view with the changes, give
// the nlohmann PV's bytes).
// nlohmann's text of `j`; a translation may leave bytes that are no UTF-8 (a URL's %82), which
// every writer of ours replaces with U+FFFD.
std::string Dump(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

testing::AssertionResult SameTranslation(const Translator& t, JsonView simd, const Json& pv) {
  StatusOr<SpecChanges> changes = t.TranslateInTreePVToCSIChanges(simd);
  StatusOr<Json> want = t.TranslateInTreePVToCSI(pv);
  if (changes.status().code() != want.status().code() ||
      changes.status().message() != want.status().message()) {
    return testing::AssertionFailure()
           << "simdjson: " << Outcome(changes.status()) << "\nnlohmann: " << Outcome(want.status());
  }
  if (!want.ok()) return testing::AssertionSuccess();
  // Written straight from the view with the changes (what `flexcsi translate` does), in both
  // styles, and the view alone: nlohmann's bytes of the translated and of the input PV.
  for (JsonStyle style : {JsonStyle::kIndented, JsonStyle::kCompact}) {
    const int indent = style == JsonStyle::kIndented ? 2 : -1;
    std::string written, input;
    AppendTranslatedPVText(simd, *changes, style, 0, &written);
    AppendJsonText(simd, style, 0, &input);
    if (written != Dump(*want, indent) || input != Dump(pv, indent)) {
      return testing::AssertionFailure()
             << "written from the view:\n"
             << written << "\ninput as written: " << input << "\nnlohmann gives\n"
             << Dump(*want, indent);
    }
  }
  Json got = pv, moved = pv;
  changes->ApplyTo(got);
  std::move(*changes).ApplyTo(moved);
  if (Dump(got) != Dump(*want) || Dump(moved) != Dump(*want)) {
    return testing::AssertionFailure()
           << "simdjson gives\n"
           << Dump(got, 1) << "\n(moved: " << Dump(moved) << ")\nnlohmann gives\n"
           << Dump(*want, 1);
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult SameTranslation(const Translator& t, const std::string& text) {
  SimdDoc doc(text);
  if (!doc.ok()) return testing::AssertionFailure() << "simdjson does not parse " << text;
  testing::AssertionResult same = SameTranslation(t, doc.view(), Json::parse(text));
  if (!same) same << "\ninput: " << text;
  return same;
}

Translator WithBenchRules() {
  return Translator(*ParseFlexVolumeRulesText(bench::kFlexVolumeRulesJson));
}

TEST(TranslationParityTest, GeneratedDumpAsWritten) {
  std::ostringstream out;
  bench::WritePVList(out, 7, 3000, bench::ListFormat::kJson);
  const std::string text = out.str();
  const Json list = Json::parse(text);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(text).get(root), simdjson::SUCCESS);
  simdjson::dom::array items;
  ASSERT_EQ(root["items"].get(items), simdjson::SUCCESS);
  ASSERT_EQ(items.size(), 3000u);
  const Translator t = WithBenchRules();
  size_t i = 0, failures = 0;
  for (simdjson::dom::element item : items) {
    testing::AssertionResult same = SameTranslation(t, JsonView::Of(item), list["items"][i]);
    EXPECT_TRUE(same) << "item " << i;
    EXPECT_TRUE(t.TranslateInTreePVToCSIChanges(JsonView::Of(item)).ok()) << "item " << i;
    if (!static_cast<bool>(same) && ++failures == 5) break;
    ++i;
  }
}

// `value` as text that nlohmann parses back to `value`, written to trip a reader that takes
// members as written: each object's members in reverse key order, each after a decoy (the same
// key with a value of another type, which the real member replaces). Member number `late`
// (depth first, from 0) has its decoy after it instead, so that the decoy counts: a field of
// the wrong type, or null, written after a good one. *counter counts the members.
Json Decoy(const Json& v, int n) {
  if (v.is_string()) return n % 2 ? Json(7) : Json();
  if (v.is_object()) return n % 2 ? Json("decoy") : Json();
  if (v.is_array()) return n % 2 ? Json{{"decoy", 1}} : Json();
  if (v.is_null()) return Json::array({1});
  return Json("7");
}

void WriteTangled(const Json& value, int late, int* counter, std::string* out) {
  if (value.is_array()) {
    *out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) *out += ',';
      WriteTangled(value[i], late, counter, out);
    }
    *out += ']';
    return;
  }
  if (!value.is_object()) {
    *out += value.dump();
    return;
  }
  *out += '{';
  const auto& members = value.get_ref<const Json::object_t&>();
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    const int n = (*counter)++;
    const std::string key = Json(it->first).dump() + ":";
    const std::string decoy = key + Decoy(it->second, n).dump();
    if (it != members.rbegin()) *out += ',';
    if (n != late) *out += decoy + ",";
    *out += key;
    WriteTangled(it->second, late, counter, out);
    if (n == late) *out += "," + decoy;
  }
  *out += '}';
}

TEST(TranslationParityTest, TangledKeysAndLateDuplicates) {
  const Translator t = WithBenchRules();
  size_t failures = 0, late_errors = 0;
  for (uint64_t i = 0; i < 3000 && failures < 5; ++i) {
    const Json pv = bench::GeneratePV(7, i);
    int members = 0;
    std::string tangled;
    WriteTangled(pv, -1, &members, &tangled);
    ASSERT_EQ(Json::parse(tangled), pv);
    SimdDoc doc(tangled);
    ASSERT_TRUE(doc.ok());
    // Decoys that do not count change nothing: the translation is the original PV's.
    testing::AssertionResult same = SameTranslation(t, doc.view(), pv);
    EXPECT_TRUE(same) << "item " << i << ": " << tangled;

    int counter = 0;
    std::string late;
    WriteTangled(pv, static_cast<int>(i * 7919 % members), &counter, &late);
    testing::AssertionResult late_same = SameTranslation(t, late);
    EXPECT_TRUE(late_same) << "item " << i;
    late_errors += !t.TranslateInTreePVToCSI(Json::parse(late)).ok();
    failures += !static_cast<bool>(same) + !static_cast<bool>(late_same);
  }
  EXPECT_GT(late_errors, 100u);  // the late decoys reach fields the translation checks
}

std::string GceWithAffinity(const std::string& affinity) {
  return R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"z-a"}},"spec":{
      "gcePersistentDisk":{"pdName":"d"},"nodeAffinity":)" +
         affinity + "}}";
}

TEST(TranslationParityTest, MalformedPVs) {
  const char* const kTerm = R"({"required":{"nodeSelectorTerms":[{"matchExpressions":[)";
  std::vector<std::string> texts = {
      // malformed_input_test.cc's table.
      R"([1,2])",
      R"({"spec":{"gcePersistentDisk":{"pdName":5}}})",
      R"({"spec":{"gcePersistentDisk":"disk"}})",
      R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":4294967296}}})",
      R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":1.5}}})",
      R"({"metadata":{"labels":[]},"spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"metadata":{"labels":{"topology.kubernetes.io/zone":1}},"spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"cinder":{"volumeID":"v"},"nodeAffinity":{"required":{"nodeSelectorTerms":{}}}}})",
      R"({"spec":{"cinder":{"volumeID":"v"},"nodeAffinity":{"required":{"nodeSelectorTerms":[
          {"matchExpressions":[{"key":"k","values":[1]}]}]}}}})",
      R"({"spec":{"accessModes":"RWO","gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"rbd":{"image":"i","monitors":"m"}}})",
      R"({"spec":3})",
      // More of the same, and repeated keys.
      "null",
      R"("pv")",
      R"({})",
      R"({"metadata":{"name":"a\u0000\"b"},"spec":{"hostPath":{}}})",
      R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":-0}}})",
      R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":-1}}})",
      // The URL's %82 decodes to a byte that is no UTF-8 on its own (found by translate_fuzz):
      // both writers put U+FFFD there.
      R"({"spec":{"awsElasticBlockStore":{"volumeID":"aws://us-east-1b/vol-05f%820ab"}}})",
      R"({"metadata":{"labels":{"topology.kubernetes.io/zone":1,"failure-domain.beta.kubernetes.io/zone":true}},
          "spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"metadata":{"labels":{"topology.kubernetes.io/zone":1,"topology.kubernetes.io/zone":"z-a"}},
          "spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"z-a","topology.kubernetes.io/zone":1}},
          "spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      GceWithAffinity(R"("x")"),
      GceWithAffinity(R"({"required":[]})"),
      GceWithAffinity(R"({"required":{"nodeSelectorTerms":5}})"),
      GceWithAffinity(R"({"required":{"nodeSelectorTerms":[null]}})"),
      GceWithAffinity(R"({"required":{"nodeSelectorTerms":[5]}})"),
      GceWithAffinity(R"({"required":{"nodeSelectorTerms":[{"matchExpressions":{}}]}})"),
      GceWithAffinity(std::string(kTerm) + R"("r"]}]}})"),
      GceWithAffinity(std::string(kTerm) + R"({"key":1,"values":["z-a"]}]}]}})"),
      GceWithAffinity(std::string(kTerm) +
                      R"({"key":"topology.kubernetes.io/zone","values":"z"}]}]}})"),
      GceWithAffinity(std::string(kTerm) + R"({"key":"k","values":[1]},{"key":2}]}]}})"),
      GceWithAffinity(R"({"required":5},"nodeAffinity":{"required":{"nodeSelectorTerms":[]}})"),
      GceWithAffinity(R"({"required":{"nodeSelectorTerms":[]}},"nodeAffinity":{"required":5})"),
      R"({"spec":{"gcePersistentDisk":{"pdName":"d"}},"spec":null})",
      R"({"spec":null,"spec":{"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"gcePersistentDisk":{"pdName":"d"}},"spec":5})",
      R"({"spec":{"gcePersistentDisk":{"pdName":"d"},"gcePersistentDisk":null}})",
      R"({"spec":{"gcePersistentDisk":null,"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"gcePersistentDisk":{"pdName":"a"},"gcePersistentDisk":{"pdName":7}}})",
      R"({"spec":{"gcePersistentDisk":{"pdName":7},"gcePersistentDisk":{"pdName":"b"}}})",
      R"({"spec":{"cinder":{"volumeID":"v"},"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"gcePersistentDisk":{"pdName":"d"},"cinder":{"volumeID":"v"}}})",
      R"({"metadata":5,"metadata":{"name":"n"},"spec":{"cinder":{"volumeID":"v"}}})",
      R"({"metadata":{"name":"n"},"metadata":{"name":7},"spec":{"nfs":{}}})",
      R"({"spec":{"accessModes":"RWO","accessModes":["ReadWriteOnce"],"gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"accessModes":["ReadWriteOnce"],"accessModes":"RWO","gcePersistentDisk":{"pdName":"d"}}})",
      R"({"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":1}}}})",
      R"({"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":1,"volumeID":"lv"}}}})",
      R"({"spec":{"flexVolume":{"driver":"acme/lvm","options":{"vg":"a","vg":["b"],"volumeID":"lv"}}}})",
      R"({"spec":{"flexVolume":{"driver":7}}})",
      R"({"spec":{"flexVolume":{"driver":"acme/other"}}})",
      R"({"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":"v"}},"flexVolume":null}})",
      R"({"metadata":{"annotations":{"openstorage.io/auth-secret-name":5}},"spec":{"portworxVolume":{"volumeID":"v"}}})",
      R"({"spec":{"azureFile":{"secretName":"s","shareName":"x"},"claimRef":{"namespace":"a"},"claimRef":{"namespace":7}}})",
      R"({"spec":{"rbd":{"image":"i","monitors":["m"],"secretRef":{"name":"s"},"secretRef":{"name":5}}}})",
  };
  const Translator t = WithBenchRules();
  for (const std::string& text : texts) EXPECT_TRUE(SameTranslation(t, text));
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
