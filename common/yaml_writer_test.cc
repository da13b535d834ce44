// JsonToYaml against the yaml-cpp emitter it replaced: the emitter, driven exactly as
// JsonToYaml drove it, is the oracle, and every case must come out byte for byte the same.
#include "common/yaml_writer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/generate_pv_list.h"
#include "common/yaml_json.h"
#include "tests/support/yaml_emitter_oracle.h"

namespace flexcsi {
namespace {

using yaml_oracle::OracleYaml;

using Json = nlohmann::json;

// Shows control and non-ASCII bytes, so that a failure is readable.
std::string Visible(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n\n";
    } else if (c < 0x20 || c >= 0x7F || c == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// JsonToYaml writes what yaml-cpp's emitter wrote wherever that reads back as the value, and
// otherwise text that does (yaml_oracle::JsonToYamlProblem lists where the emitter was wrong).
::testing::AssertionResult SameAsOracle(const Json& value) {
  const std::string problem = yaml_oracle::JsonToYamlProblem(value);
  if (problem.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "for " << Visible(value.dump(-1, ' ', false, Json::error_handler_t::replace)) << ": "
         << problem << "\nyaml-cpp wrote:\n"
         << Visible(OracleYaml(value)) << "\nJsonToYaml wrote:\n"
         << Visible(JsonToYaml(value));
}

// Each string as a document, a key, a value, a list item, and a key with a nested value; and
// after a tab, which makes it double-quoted, so that its bytes go through the escaping.
::testing::AssertionResult StringSameAsOracle(const std::string& s) {
  Json cases[] = {
      Json(s),
      Json("\t" + s),
      Json{{s, 1}},
      Json{{"k", s}, {"m", {{s, Json::array({s, s})}}}},
      Json::array({s, Json::array({s}), Json{{s, Json::object()}}}),
  };
  for (const Json& value : cases) {
    ::testing::AssertionResult result = SameAsOracle(value);
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

TEST(YamlWriterTest, HandPickedStrings) {
  std::vector<std::string> strings = {"",
                                      " ",
                                      "  ",
                                      " a",
                                      "a ",
                                      "a  b",
                                      "\ta",
                                      "a\t",
                                      "a\tb",
                                      "a: b",
                                      "a:b",
                                      "a:",
                                      ":",
                                      "::",
                                      "a :b",
                                      "a #b",
                                      "a#b",
                                      "#a",
                                      " #",
                                      "a\n",
                                      "\na",
                                      "a\nb",
                                      "a\r\nb",
                                      "a\rb",
                                      "\ra",
                                      "a\r",
                                      "\r\n",
                                      "line one\nline two\n",
                                      "a\"b",
                                      "a\\b",
                                      "\"",
                                      "\\",
                                      "'",
                                      "a'b",
                                      "a\bb",
                                      "a\fb",
                                      "a\vb",
                                      std::string("a\0b", 3),
                                      std::string(1, '\0'),
                                      "\x01",
                                      "\x1f",
                                      "a\x7f",
                                      "\x7f",
                                      "caf\xc3\xa9",
                                      "\xc2\x85",
                                      "a\xc2\x85",
                                      "\xc2\x80",
                                      "\xc2\x9f",
                                      "\xc2\xa0",
                                      "\xc2\xa1",
                                      "\xef\xbb\xbf",
                                      "a\xef\xbb\xbf",
                                      "\xef\xbf\xbe",
                                      "\xef\xbf\xbf",
                                      "\xef\xbf\xbd",
                                      "\xef\xb7\x90",
                                      "\xf0\x9f\x98\x80",
                                      "\xed\xa0\x80",
                                      "\xf4\x90\x80\x80",
                                      "\xc0\x80",
                                      "\xc1\xbf",
                                      "\xe0\x80\x80",
                                      "\xdf\xbf",
                                      "\xe0\xa0\x80",
                                      "\x80",
                                      "a\x80",
                                      "\xff",
                                      "\xfe",
                                      "\xf8\x88\x80\x80\x80",
                                      "\xe2\x82",
                                      "\xe2\x82x",
                                      "\xc3",
                                      "\xf0\x9f\x98",
                                      "1",
                                      "-1",
                                      "+1",
                                      "01",
                                      "0x1F",
                                      "0o17",
                                      "1e3",
                                      "1E3",
                                      "1.5",
                                      ".5",
                                      "5.",
                                      ".inf",
                                      "-.inf",
                                      ".nan",
                                      "~",
                                      "null",
                                      "Null",
                                      "NULL",
                                      "nUll",
                                      "true",
                                      "True",
                                      "TRUE",
                                      "tRue",
                                      "false",
                                      "yes",
                                      "Yes",
                                      "no",
                                      "on",
                                      "On",
                                      "off",
                                      "y",
                                      "n",
                                      "Y",
                                      "N",
                                      "-",
                                      "--",
                                      "---",
                                      "- a",
                                      "-a",
                                      "?",
                                      "? a",
                                      "?a",
                                      ":a",
                                      ": a",
                                      "...",
                                      "a,b",
                                      "=",
                                      "<<",
                                      "a b c",
                                      "http://example.com/a?b=c#d",
                                      "us-east-1a",
                                      "10Gi",
                                      "kubernetes.io/pv-protection",
                                      std::string(1024, 'k'),
                                      std::string(1025, 'k'),
                                      std::string(5000, 'x') + ": y",
                                      std::string(1025, ' '),
                                      std::string(2000, '\n')};
  for (char c : std::string("-?:,[]{}#&*!|>'\"%@`")) {
    for (std::string rest : {"", "a", " ", " a", "\t", ":", "-"}) strings.push_back(c + rest);
  }
  for (const std::string& s : strings) EXPECT_TRUE(StringSameAsOracle(s));
}

TEST(YamlWriterTest, EveryStringOfOneAndTwoBytes) {
  int failures = 0;
  for (int a = 0; a < 256 && failures < 5; ++a) {
    std::string one(1, static_cast<char>(a));
    if (!StringSameAsOracle(one)) {
      ADD_FAILURE() << StringSameAsOracle(one).message();
      ++failures;
    }
    for (int b = 0; b < 256 && failures < 5; ++b) {
      std::string two = one + static_cast<char>(b);
      ::testing::AssertionResult result = SameAsOracle(Json{{two, "\t" + two}});
      if (!result) {
        ADD_FAILURE() << result.message();
        ++failures;
      }
    }
  }
}

TEST(YamlWriterTest, EveryThreeCharacterStringOfTheTrickyOnes) {
  // The characters yaml-cpp's plain-scalar rules look at, and the bytes of BOM and C1 controls.
  std::string alphabet = "a -?:#,'\"\t\n\r\\~\x7f\x01\xc2\x85\x80\xef\xbb\xbf";
  alphabet.push_back('\0');
  int failures = 0;
  for (char a : alphabet) {
    for (char b : alphabet) {
      for (char c : alphabet) {
        std::string s{a, b, c};
        ::testing::AssertionResult result = SameAsOracle(Json{{s, s}, {"k", "\t" + s}});
        if (!result && ++failures <= 5) ADD_FAILURE() << result.message();
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(YamlWriterTest, HandPickedValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Json> values = {
      Json(),
      Json(true),
      Json(false),
      Json(0),
      Json(-1),
      Json(std::numeric_limits<int64_t>::min()),
      Json(std::numeric_limits<int64_t>::max()),
      Json(std::numeric_limits<uint64_t>::max()),
      Json(1e100),
      Json(-0.0),
      Json(0.1),
      Json(1.5e-7),
      Json(123456789012345678.0),
      Json(nan),
      Json(inf),
      Json(-inf),
      Json::object(),
      Json::array(),
      Json::array({Json::array()}),
      Json::array({Json::object()}),
      Json::array({Json::array({Json::array({1, 2}), Json::array()}), Json::array({3})}),
      Json::array({Json{{"a", 1}, {"b", Json::array({1, Json{{"c", Json::object()}}})}}}),
      Json{{"a", Json::object()}, {"b", Json::array()}, {"c", nullptr}, {"d", Json::object()}},
      Json{{"a", {{"b", {{"c", {{"d", Json::array({Json::array({Json::object()})})}}}}}}}},
      Json{{"", ""}, {"1", 1}, {"true", true}, {"null", nullptr}, {"yes", "no"}, {"f", 1.25}},
      Json::array({nullptr, true, 1, -2, 0.5, "s", Json::object(), Json::array()}),
  };
  for (const std::string& key : {std::string(1025, 'k'), std::string(1024, 'k'),
                                 std::string(1100, ' ') + "#", std::string(1025, '1')}) {
    for (const Json& value : {Json("v"), Json::object(), Json::array(), Json(nullptr),
                              Json{{"a", 1}, {"b", 2}}, Json::array({1, Json::array({2})}),
                              Json{{key, Json{{key, 1}}}}, Json::array({Json{{key, 1}}})}) {
      values.push_back(Json{{key, value}});
      values.push_back(Json{{"a", 1}, {key, value}, {"z", value}});
      values.push_back(Json::array({Json{{key, value}}}));
    }
  }
  for (const Json& value : values) {
    EXPECT_TRUE(SameAsOracle(value));
    EXPECT_TRUE(SameAsOracle(Json{{"k", value}}));
    EXPECT_TRUE(SameAsOracle(Json::array({value, value})));
    EXPECT_TRUE(SameAsOracle(Json{{"k", Json::array({Json{{"j", value}}})}}));
  }
}

// A deterministic generator (no std distributions, whose output differs between libraries)
// biased toward the characters and shapes the emitter treats specially.
class RandomJson {
 public:
  explicit RandomJson(uint64_t seed) : state_(seed) {}

  Json Value(int depth) {
    switch (Below(depth > 4 ? 6 : 9)) {
      case 0:
        return nullptr;
      case 1:
        return Below(2) == 0;
      case 2:
        return Number();
      case 3:
      case 4:
      case 5:
        return String();
      case 6: {
        Json map = Json::object();
        for (uint64_t n = Below(5); n > 0; --n) map[Key()] = Value(depth + 1);
        return map;
      }
      default: {
        Json seq = Json::array();
        for (uint64_t n = Below(5); n > 0; --n) seq.push_back(Value(depth + 1));
        return seq;
      }
    }
  }

 private:
  uint64_t Next() {  // splitmix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }

  Json Number() {
    static const double kDoubles[] = {0.0,
                                      -0.0,
                                      0.1,
                                      1e100,
                                      -1e-300,
                                      1.5,
                                      3.0,
                                      2.5e15,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity()};
    switch (Below(4)) {
      case 0:
        return static_cast<int64_t>(Next());
      case 1:
        return Next();
      case 2:
        return static_cast<int64_t>(Below(2001)) - 1000;
      default:
        return kDoubles[Below(sizeof(kDoubles) / sizeof(kDoubles[0]))];
    }
  }

  std::string Key() {
    if (Below(50) == 0) {
      std::string key = String();
      while (key.size() <= 1024) key += String() + "k";
      return key;
    }
    return String();
  }

  std::string String() {
    static const char* const kWords[] = {"null",
                                         "~",
                                         "true",
                                         "yes",
                                         "on",
                                         "Off",
                                         "1",
                                         "0x1F",
                                         "1e3",
                                         ".inf",
                                         "-1.5",
                                         "a: b",
                                         "a #b",
                                         "- ",
                                         "? ",
                                         ": ",
                                         "---",
                                         "\xc3\xa9",
                                         "\xc2\x85",
                                         "\xc2\x80",
                                         "\xc2\xa0",
                                         "\xef\xbb\xbf",
                                         "\xef\xbf\xbe",
                                         "\xef\xbf\xbd",
                                         "\xf0\x9f\x98\x80",
                                         "\xed\xa0\x80",
                                         "\xf4\x90\x80\x80",
                                         "\xc0\x80",
                                         "\xc1\xbf",
                                         "\xe0\x80\x80",
                                         "\xe2\x82",
                                         "\x80",
                                         "\xff",
                                         "\xf8\x88\x80\x80\x80",
                                         "\r\n",
                                         "ab",
                                         "xyz",
                                         "10Gi",
                                         "pd-ssd",
                                         "us-east1-b"};
    static const char kChars[] = "-?:,[]{}#&*!|>'\"%@` \t\n\r\\~.0123456789eE+xyYnN";
    std::string s;
    for (uint64_t n = Below(8); n > 0; --n) {
      switch (Below(4)) {
        case 0:
          s += kWords[Below(sizeof(kWords) / sizeof(kWords[0]))];
          break;
        case 1:
          s += static_cast<char>(Below(0x20));
          break;
        case 2:
          s += Below(4) == 0 ? '\x7f' : static_cast<char>(0x80 + Below(0x80));
          break;
        default:
          s += kChars[Below(sizeof(kChars) - 1)];
          break;
      }
    }
    return s;
  }

  uint64_t state_;
};

TEST(YamlWriterTest, RandomValues) {
  RandomJson random(20240611);
  int failures = 0;
  for (int i = 0; i < 20000; ++i) {
    Json value = random.Value(0);
    ::testing::AssertionResult result = SameAsOracle(value);
    if (!result && ++failures <= 3) ADD_FAILURE() << "value " << i << ": " << result.message();
  }
  EXPECT_EQ(failures, 0);
}

TEST(YamlWriterTest, GeneratedPersistentVolumes) {
  Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", Json::array()}};
  for (uint64_t seed : {1, 7}) {
    for (uint64_t i = 0; i < 300; ++i) {
      Json pv = bench::GeneratePV(seed, i);
      EXPECT_TRUE(SameAsOracle(pv)) << "seed " << seed << ", PV " << i;
      list["items"].push_back(std::move(pv));
    }
  }
  EXPECT_TRUE(SameAsOracle(list));
}

// Where yaml-cpp's emitter wrote text that YAML 1.1 readers (libyaml, kubectl's go-yaml) read
// as something else or refuse, in every place a string can stand.
TEST(YamlWriterTest, ReadsBackWhereTheEmitterDidNot) {
  const std::vector<std::string> specials = {"\x7f",
                                             "\r",
                                             "\r\n",
                                             "\xc2\x85",
                                             "\xc2\x81",
                                             "\xe2\x80\xa8",
                                             "\xe2\x80\xa9",
                                             "\xef\xbf\xbe",
                                             "\xef\xbf\xbf",
                                             "\xef\xb7\x90",
                                             "\xf0\x9f\xbf\xbe"};
  std::vector<std::string> strings = {"---",  "...",  "--- x", "... x", "---\tx", "--- ",
                                      "....", "----", "---x",  "a\xff", "\xc3"};
  for (const std::string& c : specials) {
    for (const std::string& around : {c, "a" + c + "b", c + "b", "a" + c, "a b" + c + " c"}) {
      strings.push_back(around);
    }
  }
  for (const std::string& s : strings) {
    for (const Json& value :
         {Json(s), Json{{s, 1}}, Json{{"k", s}}, Json{{"k", {{s, Json::array({s})}}}},
          Json::array({s, Json::array({s}), Json{{s, s}}}), Json{{"k", Json::array({s})}}}) {
      EXPECT_TRUE(SameAsOracle(value)) << Visible(s);
      EXPECT_TRUE(yaml_oracle::HasNoYamlText(value) ||
                  yaml_oracle::ReadsBack(JsonToYaml(value), value))
          << Visible(value.dump(-1, ' ', false, Json::error_handler_t::replace)) << " as\n"
          << Visible(JsonToYaml(value));
    }
  }
}

// YAML takes an implicit key of at most 1024 characters as written, quotes and escapes
// included; a longer one needs the explicit "? " form.
TEST(YamlWriterTest, KeysNearTheImplicitKeyLimitReadBack) {
  for (size_t n = 1015; n <= 1030; ++n) {
    for (const char* suffix : {"", " ", "\t", "\"", "\x7f"}) {
      const std::string key = std::string(n, 'k') + suffix;
      EXPECT_TRUE(SameAsOracle(Json{{key, 1}})) << n << " + " << Visible(suffix);
      EXPECT_TRUE(SameAsOracle(Json{{key, {{"a", Json::array({1})}}}})) << n;
    }
  }
  // Readers count characters, not bytes (found by translate_fuzz): two-byte letters with a few
  // escapes stay under the limit as written; many escapes alone go over it.
  std::string cyrillic;
  for (int i = 0; i < 505; ++i) cyrillic += "\xd0\x9a";
  for (const std::string& key :
       {cyrillic, cyrillic + cyrillic, cyrillic + std::string(10, '\t'), std::string(520, '\t'),
        std::string(300, '\x01'), cyrillic + std::string(300, '\x01')}) {
    EXPECT_TRUE(SameAsOracle(Json{{key, 1}})) << key.size();
    EXPECT_TRUE(SameAsOracle(Json{{"k", {{key, Json::array({1})}}}})) << key.size();
  }
}

TEST(YamlWriterTest, AppendsAfterExistingText) {
  Json value = {{"a", Json::array({1, Json{{"b", "c"}}})}};
  std::string text = "prefix";
  AppendJsonAsYaml(value, &YamlStringNeedsQuotes, &text);
  EXPECT_EQ(text, "prefix" + OracleYaml(value).substr(0, OracleYaml(value).size() - 1));
}

}  // namespace
}  // namespace flexcsi
