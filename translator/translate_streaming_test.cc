// `flexcsi translate` streams lists: these tests hold it to what the command wrote when it
// parsed everything first (the oracle below is that algorithm, on the library), on generated
// dumps, with reads cut anywhere, huge items, unusual key orders and errors mid-stream.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <streambuf>

#include <gtest/gtest.h>

#include "bench/generate_pv_list.h"
#include "common/yaml_json.h"
#include "translator/flexvolume_rules.h"
#include "translator/translate_command.h"
#include "translator/translate_output.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

// Serves its text in reads of at most `chunk` bytes, as a pipe may.
class ChunkedBuf : public std::streambuf {
 public:
  ChunkedBuf(std::string text, size_t chunk) : text_(std::move(text)), chunk_(chunk) {
    setg(text_.data(), text_.data(), text_.data());
  }

 protected:
  int_type underflow() override {
    if (pos_ >= text_.size()) return traits_type::eof();
    size_t n = std::min(chunk_, text_.size() - pos_);
    setg(text_.data() + pos_, text_.data() + pos_, text_.data() + pos_ + n);
    pos_ += n;
    return traits_type::to_int_type(text_[pos_ - n]);
  }
  std::streamsize xsgetn(char* s, std::streamsize n) override {
    if (gptr() == egptr() && underflow() == traits_type::eof()) return 0;
    std::streamsize got = std::min<std::streamsize>(n, egptr() - gptr());
    std::memcpy(s, gptr(), static_cast<size_t>(got));
    gbump(static_cast<int>(got));
    return got;
  }

 private:
  std::string text_;
  size_t chunk_;
  size_t pos_ = 0;
};

struct Result {
  int status;
  std::string out, err;
};

Result RunCommand(const std::vector<std::string>& args, const std::string& input,
                  size_t chunk = 1 << 20) {
  ChunkedBuf buf(input, chunk);
  std::istream in(&buf);
  std::ostringstream out, err;
  int status = RunTranslateCommand(args, in, out, err);
  return {status, out.str(), err.str()};
}

std::string RulesFile() {
  static const std::string path = [] {
    std::string p = testing::TempDir() + "/translate_streaming_rules." + std::to_string(getpid());
    std::ofstream(p) << bench::kFlexVolumeRulesJson;
    return p;
  }();
  return path;
}

std::vector<std::string> ToCsi(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"to-csi", "pv", "--rules", RulesFile()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// What `to-csi pv` printed when it parsed every document first: translatable PVs translated,
// failures left out, other objects unchanged; one output alone, several in a List (JSON) or
// as "---" documents (YAML).
std::string Oracle(std::vector<Json> docs, bool yaml) {
  auto rules = ParseFlexVolumeRulesText(bench::kFlexVolumeRulesJson);
  Translator t(*rules);
  auto translate = [&](const Json& item, std::vector<Json>* into) {
    std::string kind = item.is_object() && item.contains("kind") ? item["kind"].dump() : "";
    bool pv = item.is_object() && (kind.empty() || kind == "\"PersistentVolume\"");
    if (!pv || !t.IsPVMigratable(item)) {
      bool flex = pv && item.contains("spec") && item["spec"].contains("flexVolume");
      if (!flex) into->push_back(item);
      return;
    }
    auto out = t.TranslateInTreePVToCSI(item);
    if (out.ok()) into->push_back(*out);
  };
  std::vector<Json> outputs;
  for (Json& doc : docs) {
    Json* items = doc.is_array()
                      ? &doc
                      : (doc.is_object() && doc.contains("items") ? &doc["items"] : nullptr);
    if (items != nullptr) {
      std::vector<Json> translated;
      for (const Json& item : *items) translate(item, &translated);
      *items = translated;
      outputs.push_back(doc);
    } else {
      translate(doc, &outputs);
    }
  }
  std::string text;
  if (yaml) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i > 0 || outputs.size() > 1) text += "---\n";
      text += JsonToYaml(outputs[i]);
    }
    return text;
  }
  if (outputs.size() == 1) return outputs[0].dump(2) + "\n";
  return Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", outputs}}.dump(2) + "\n";
}

std::string GeneratedList(uint64_t count, bench::ListFormat format, uint64_t seed = 7) {
  std::ostringstream out;
  bench::WritePVList(out, seed, count, format);
  return out.str();
}

TEST(TranslateStreamingTest, GeneratedListMatchesOldOutput) {
  std::string text = GeneratedList(300, bench::ListFormat::kJson);
  std::string want = Oracle({Json::parse(text)}, false);
  for (size_t chunk : {size_t{1} << 20, size_t{4093}, size_t{7}}) {
    Result r = RunCommand(ToCsi(), text, chunk);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, want) << "reads of " << chunk;
    EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "summary: 300 translated, 0 unchanged, 0 failed");
  }
  Result yaml_out = RunCommand(ToCsi({"-o", "yaml"}), text);
  EXPECT_EQ(yaml_out.out, Oracle({Json::parse(text)}, true));
  Result compact = RunCommand(ToCsi({"--compact"}), text);
  EXPECT_EQ(compact.out, Json::parse(want).dump() + "\n");
}

TEST(TranslateStreamingTest, YamlListMatchesOldOutput) {
  std::string text = GeneratedList(60, bench::ListFormat::kYaml);
  StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
  ASSERT_TRUE(docs.ok());
  Result r = RunCommand(ToCsi(), text, 4093);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Oracle(*docs, true));
  Result json_out = RunCommand(ToCsi({"-o", "json"}), text);
  EXPECT_EQ(json_out.out, Oracle(*docs, false));
}

TEST(TranslateStreamingTest, MultiDocYamlMatchesOldOutput) {
  std::string text;
  for (uint64_t i = 0; i < 40; ++i) text += "---\n" + JsonToYaml(bench::GeneratePV(3, i));
  text += "---\nkind: ConfigMap\nmetadata: {name: cm}\n---\n" +
          GeneratedList(5, bench::ListFormat::kYaml);
  StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
  ASSERT_TRUE(docs.ok());
  Result r = RunCommand(ToCsi(), text, 999);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Oracle(*docs, true));
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "summary: 45 translated, 1 unchanged, 0 failed");
  Result json_out = RunCommand(ToCsi({"-o", "json"}), text);
  EXPECT_EQ(json_out.out, Oracle(*docs, false));
}

TEST(TranslateStreamingTest, ItemsBeforeKindAndApiVersion) {
  // kubectl prints kind after items; this input even puts a key that sorts before "items"
  // after them, which the stream cannot place: a small input is translated again, whole.
  std::string items = Json(Json::array({bench::GeneratePV(1, 0), bench::GeneratePV(1, 1)})).dump();
  for (std::string text : {R"({"items":)" + items + R"(,"kind":"List","apiVersion":"v1"})",
                           R"({"metadata":{},"items":)" + items + R"(,"kind":"List"})"}) {
    Result r = RunCommand(ToCsi(), text);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, Oracle({Json::parse(text)}, false));
  }
  // An object with an items array that turns out not to be a List is one object.
  std::string not_list = R"({"items":[1,2],"kind":"Thing","metadata":{"name":"t"}})";
  Result r = RunCommand(ToCsi(), not_list);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: expected a PersistentVolume, got kind \"Thing\"\n");
}

TEST(TranslateStreamingTest, LargeUnstreamableListIsAnError) {
  // Beyond what is held in memory the output has begun; a key that had to come first is an error.
  std::string text = GeneratedList(2500, bench::ListFormat::kJson);
  ASSERT_GT(text.size(), TranslateOutput::kHoldLimit);
  text.insert(text.rfind('}'), R"(, "apiVersion": "v2")");
  Result r = RunCommand(ToCsi(), text);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            "error: stdin: cannot translate this input as a stream: key \"apiVersion\" follows "
            "the items of a list\n");
}

TEST(TranslateStreamingTest, HugeItemsPassThrough) {
  Json pv = bench::GeneratePV(1, 2);
  pv["metadata"]["annotations"]["huge"] = std::string(6 << 20, 'x');
  Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", {bench::GeneratePV(1, 1), pv}}};
  std::string text = list.dump();
  Result r = RunCommand(ToCsi(), text, 65536);
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 200);
  EXPECT_TRUE(r.out == Oracle({list}, false));
}

TEST(TranslateStreamingTest, BadItemIsReportedAndSkipped) {
  std::string text = GeneratedList(2500, bench::ListFormat::kJson);
  Json list = Json::parse(text);
  list["items"][1500]["spec"]["gcePersistentDisk"] = "not an object";
  list["items"][1500]["spec"].erase("awsElasticBlockStore");
  std::string name = list["items"][1500]["metadata"]["name"];
  Result r = RunCommand(ToCsi(), list.dump(4));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, Oracle({list}, false));
  EXPECT_EQ(r.err.substr(0, r.err.find("summary")),
            "error: PersistentVolume \"" + name +
                "\" (item 1501): invalid field spec.gcePersistentDisk: expected object, got "
                "string\n");
  EXPECT_NE(r.err.find("summary: 2499 translated, 0 unchanged, 1 failed\n"), std::string::npos);
}

TEST(TranslateStreamingTest, EarlySyntaxErrorLeavesStdoutEmpty) {
  std::string text = GeneratedList(100, bench::ListFormat::kJson);
  text.insert(text.find('\n', text.size() / 2) + 1, "}");  // between two members
  Result r = RunCommand(ToCsi(), text, 4096);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: stdin: " + ParseJsonText(text).status().message() + "\n");
}

TEST(TranslateStreamingTest, LateSyntaxErrorIsPlaced) {
  // Output has begun; the error still names the line and column the whole-text parser would.
  std::string text = GeneratedList(2500, bench::ListFormat::kJson);
  text.insert(text.find('\n', text.size() - 5000) + 1, "x");
  Result r = RunCommand(ToCsi(), text);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: stdin: " + ParseJsonText(text).status().message() + "\n");
}

TEST(TranslateStreamingTest, TopLevelArrayAndEmptyList) {
  std::string array = Json::array({bench::GeneratePV(2, 3), Json{{"kind", "Secret"}}}).dump();
  Result r = RunCommand(ToCsi(), array, 5);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Oracle({Json::parse(array)}, false));
  for (const char* empty :
       {R"({"kind":"List","items":[]})", "[]", R"({"kind":"List","items":null})"}) {
    Result e = RunCommand(ToCsi(), empty);
    EXPECT_EQ(e.status, 0) << empty << e.err;
    EXPECT_EQ(e.out, Oracle({Json::parse(empty)}, false)) << empty;
  }
}

TEST(TranslateStreamingTest, ItemsSimdjsonRefusesMixWithTheOthers) {
  // Items simdjson takes are translated from its document; one with an integer beyond 64 bits
  // (nlohmann makes it a float) is parsed by nlohmann. Repeated and unsorted keys, objects
  // that stay as they are and an item that fails sit between them. Output, error lines and
  // summary are the old algorithm's, in every output format.
  std::string text = R"({"items":[)" + bench::GeneratePV(3, 1).dump() + "," +
                     R"({"spec":{"cinder":{"volumeID":"a"},"cinder":{"volumeID":"b"},
                         "capacity":{"storage":123456789012345678901234567890}},
                        "kind":"PersistentVolume","metadata":{"name":"big"}},)" +
                     R"({"metadata":{"name":"z","name":"dup"},"spec":{"rbd":{"image":"i",
                         "monitors":["m"]},"accessModes":["ReadWriteOnce","ReadOnlyMany"]}},)" +
                     R"({"kind":"Secret","data":{"k":"dg=="}},)" +
                     R"({"kind":"PersistentVolume","metadata":{"name":"bad"},
                         "spec":{"gcePersistentDisk":{"pdName":5}}},)" +
                     R"({"spec":{"awsElasticBlockStore":{"volumeID":"x","partition":-0},
                         "nodeAffinity":{}},"metadata":{"labels":{
                         "topology.kubernetes.io/zone":"us-east-1a"}}},)" +
                     bench::GeneratePV(3, 2).dump() + R"(],"kind":"List","apiVersion":"v1"})";
  const Json list = Json::parse(text);
  for (size_t chunk : {size_t{1} << 20, size_t{13}}) {
    Result r = RunCommand(ToCsi(), text, chunk);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, Oracle({list}, false)) << "reads of " << chunk;
    EXPECT_EQ(r.err.substr(0, r.err.find("summary")),
              "error: PersistentVolume \"bad\" (item 5): invalid field spec.gcePersistentDisk"
              ".pdName: expected string, got number\n");
    EXPECT_NE(r.err.find("summary: 5 translated, 1 unchanged, 1 failed\n"), std::string::npos);
  }
  EXPECT_EQ(RunCommand(ToCsi({"--compact"}), text).out,
            Json::parse(Oracle({list}, false)).dump() + "\n");
  EXPECT_EQ(RunCommand(ToCsi({"-o", "yaml"}), text).out, Oracle({list}, true));
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi

namespace flexcsi {
namespace translator {
namespace {

TEST(TranslateStreamingTest, YamlAliasAcrossItemsIsReadWhole) {
  // An item cannot be read alone when it refers to an anchor in another: small inputs are
  // read whole, as before.
  std::string text =
      "apiVersion: v1\nitems:\n- metadata: {name: a}\n  spec:\n    cinder: &src {volumeID: c1}\n"
      "- metadata: {name: b}\n  spec:\n    cinder: *src\nkind: List\n";
  Result r = RunCommand(ToCsi(), text);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Oracle(*ParseYamlDocuments(text), true));
}

TEST(TranslateStreamingTest, LateYamlSyntaxErrorIsPlaced) {
  std::string text = GeneratedList(3700, bench::ListFormat::kYaml);
  ASSERT_GT(text.size(), TranslateOutput::kHoldLimit);
  text.insert(text.find("\n  spec:", text.size() - 3000) + 1, "  bad: [\n");
  Result r = RunCommand(ToCsi(), text);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: stdin: " + ParseYamlDocuments(text).status().message() + "\n");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
