// Values parsed through simdjson must be the values nlohmann's parser gives, and the streamed
// document must arrive in the pieces the command relies on.
#include "translator/json_stream.h"

#include <sstream>

#include <gtest/gtest.h>

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

StatusOr<Json> Parse(const std::string& text) {
  std::string padded = text + std::string(InputBuffer::kPadding, '\0');
  return ParseJsonValue(padded.data(), text.size());
}

TEST(JsonStreamTest, ValuesAreNlohmannsValues) {
  for (const char* text :
       {R"({"b":1,"a":[true,null,"x"],"b":2})",  // a later duplicate wins
        R"([0,-0,5,-5,18446744073709551615,-9223372036854775808,1.5,-0.0,1e2])",
        R"([123456789012345678901234567890, -123456789012345678901234567890])",  // floats
        R"(["\u0000 nul", "\ud83d\ude00", "\u00e9", "tab\tnew\nline"])", R"({})", R"([])"}) {
    StatusOr<Json> got = Parse(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().message();
    Json want = Json::parse(text);
    EXPECT_EQ(got->dump(), want.dump()) << text;
    EXPECT_EQ(*got, want) << text;
  }
  // nlohmann keeps non-negative integers unsigned.
  EXPECT_TRUE((*Parse("7")).is_number_unsigned());
  EXPECT_TRUE((*Parse("-7")).is_number_integer() && !(*Parse("-7")).is_number_unsigned());
}

TEST(JsonStreamTest, BadValuesAreErrorsInNlohmannsWords) {
  for (const char* text : {"{\"a\":}", "[1,]", "\"\xff\"", "\"\\ud800\"", "{\"a\" 1}", "01"}) {
    StatusOr<Json> got = Parse(text);
    ASSERT_FALSE(got.ok()) << text;
    std::string want;
    try {
      Json ignored = Json::parse(text);
      (void)ignored;
    } catch (const Json::exception& e) {
      want = e.what();
    }
    EXPECT_EQ("invalid JSON: " + want.substr(want.find("] ") + 2), got.status().message());
  }
}

// Records what the streamer hands over.
class Recorder : public JsonStreamHandler {
 public:
  Status OnDocument(Json doc) override { return Log("doc " + doc.dump()); }
  Status OnArrayBegin() override { return Log("array"); }
  Status OnArrayEnd() override { return Log("end array"); }
  bool ShouldStreamItems(const Json& head) override { return !head.contains("kind"); }
  Status OnListBegin(Json head) override { return Log("list " + head.dump()); }
  Status OnListEnd(Json tail) override { return Log("end list " + tail.dump()); }
  Status OnItem(Json item) override { return Log("item " + item.dump()); }
  std::string log;

 private:
  Status Log(const std::string& line) {
    log += line + "\n";
    return Status::Ok();
  }
};

std::string Stream(const std::string& text, Status* status) {
  std::istringstream in(text);
  InputBuffer input(in);
  Recorder recorder;
  *status = StreamJsonDocument(input, recorder);
  return recorder.log;
}

TEST(JsonStreamTest, ItemsArriveOneByOneWithKeysAroundThem) {
  Status s;
  EXPECT_EQ(Stream(R"( {"apiVersion":"v1","items":[{"a":1}, 2 ,"x"],"kind":"List"} )", &s),
            "list {\"apiVersion\":\"v1\"}\nitem {\"a\":1}\nitem 2\nitem \"x\"\n"
            "end list {\"kind\":\"List\"}\n");
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Stream("[[1],{}]", &s), "array\nitem [1]\nitem {}\nend array\n");
  EXPECT_EQ(Stream(R"({"items":[]})", &s), "list {}\nend list {}\n");
  // A kind before the items that the handler does not stream: the object arrives whole.
  EXPECT_EQ(Stream(R"({"kind":"Pod","items":[1]})", &s), "doc {\"items\":[1],\"kind\":\"Pod\"}\n");
  EXPECT_EQ(Stream(R"({"items":null,"kind":"List"})", &s),
            "doc {\"items\":null,\"kind\":\"List\"}\n");
}

TEST(JsonStreamTest, SyntaxErrorsAreNlohmannsMessages) {
  for (const char* text : {R"({"items":[{"a":1} {"b":2}]})", R"({"items":[1,2)", "[1]x",
                           R"({"a" 1})", R"({"items":[{"a":tru}]})", "[\"\xff\"]"}) {
    Status s;
    Stream(text, &s);
    ASSERT_FALSE(s.ok()) << text;
    std::string want;
    try {
      Json ignored = Json::parse(text);
      (void)ignored;
    } catch (const Json::exception& e) {
      want = e.what();
    }
    EXPECT_EQ(s.message(), "invalid JSON: " + want.substr(want.find("] ") + 2)) << text;
  }
}

TEST(JsonStreamTest, NestingDeeperThanTheLimitIsAnError) {
  std::string deep = "{\"items\":[" + std::string(511, '[') + std::string(511, ']') + "]}";
  Status s;
  Stream(deep, &s);
  EXPECT_EQ(s.message(), "invalid JSON: nested deeper than 512 levels");
  std::string ok = "{\"items\":[" + std::string(510, '[') + std::string(510, ']') + "]}";
  Stream(ok, &s);
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
