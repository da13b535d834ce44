// The writer must give nlohmann's bytes exactly: `flexcsi translate` output is compared byte
// for byte with what it wrote before the writer existed.
#include "translator/json_text_writer.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

void ExpectSameAsNlohmann(const Json& value) {
  std::string indented, compact;
  AppendJsonText(value, JsonStyle::kIndented, 0, &indented);
  AppendJsonText(value, JsonStyle::kCompact, 0, &compact);
  EXPECT_EQ(indented, value.dump(2, ' ', false, Json::error_handler_t::replace));
  EXPECT_EQ(compact, value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

TEST(JsonTextWriterTest, ScalarsAndNestingMatchNlohmann) {
  ExpectSameAsNlohmann(Json::parse(R"({"a":{"b":[1,-2,18446744073709551615,-9223372036854775808,
      2.5,1e100,-0.0,0.1,true,false,null,{},[],[{}],{"x":[]}],"":"empty key"},"z":"last"})"));
  ExpectSameAsNlohmann(Json::array());
  ExpectSameAsNlohmann(Json::object());
  ExpectSameAsNlohmann(Json("plain"));
  ExpectSameAsNlohmann(Json(std::nan("")));
}

TEST(JsonTextWriterTest, StringEscapesMatchNlohmann) {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls.push_back(static_cast<char>(c));
  ExpectSameAsNlohmann(Json{{"controls", controls},
                            {"quotes \"and\" \\backslashes\\ /slash/", "\x7f del"},
                            {"utf8", "z\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe4\xb8\xad"}});
}

TEST(JsonTextWriterTest, InvalidUtf8IsReplacedLikeNlohmann) {
  // Values read from YAML may hold any bytes; nlohmann writes U+FFFD for each bad sequence.
  for (const char* bad : {"a\xff", "\xc3", "x\xc3(y", "\xe2\x82", "\xed\xa0\x80 surrogate",
                          "\xf4\x90\x80\x80 too big", "\xc0\xaf overlong", "ok \xf0\x9f\x98"}) {
    ExpectSameAsNlohmann(Json{{"k", std::string(bad)}, {std::string(bad), 1}});
  }
}

TEST(JsonTextWriterTest, NestedLevelIndentsLikeAnElement) {
  Json item = Json::parse(R"({"a":[1,{"b":2}]})");
  Json wrapper = {{"items", Json::array({item})}};
  std::string nested = "{\n  \"items\": [\n    ";
  AppendJsonText(item, JsonStyle::kIndented, 2, &nested);
  nested += "\n  ]\n}";
  EXPECT_EQ(nested, wrapper.dump(2));
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
