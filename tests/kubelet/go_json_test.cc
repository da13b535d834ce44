#include "tests/kubelet/go_json.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace kubelet {
namespace {

TEST(GoJsonTest, EscapesLikeEncodingJson) {
  EXPECT_EQ(R"("a\"b\\c")", GoJsonString("a\"b\\c"));
  EXPECT_EQ(R"("\u003cb\u003e \u0026")", GoJsonString("<b> &"));
  EXPECT_EQ(R"("\n\r\t\u0001\u001f")", GoJsonString("\n\r\t\x01\x1f"));
  EXPECT_EQ("\"\xc3\xa9\xe2\x82\xac\"", GoJsonString("\xc3\xa9\xe2\x82\xac"));  // raw UTF-8
  EXPECT_EQ(R"("\u2028\u2029")", GoJsonString("\xe2\x80\xa8\xe2\x80\xa9"));
  EXPECT_EQ(R"("a\ufffdb\ufffd")", GoJsonString("a\xff"
                                                "b\xc3"));
  EXPECT_EQ("\"\x7f/\"", GoJsonString("\x7f/"));  // DEL and '/' are not escaped
}

TEST(GoJsonTest, ObjectIsCompactAndSortedBytewise) {
  EXPECT_EQ(R"({"B":"2","a":"1","kubernetes.io/x":""})",
            GoJsonObject({{"a", "1"}, {"B", "2"}, {"kubernetes.io/x", ""}}));
  EXPECT_EQ("{}", GoJsonObject({}));
}

TEST(GoJsonTest, Base64IsStandardWithPadding) {
  EXPECT_EQ("YWRtaW4=", Base64Encode("admin"));
  EXPECT_EQ("czNjcjN0", Base64Encode("s3cr3t"));
  EXPECT_EQ("", Base64Encode(""));
  EXPECT_EQ("/w==", Base64Encode("\xff"));
  EXPECT_EQ("+/8A", Base64Encode(std::string("\xfb\xff\x00", 3)));
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
