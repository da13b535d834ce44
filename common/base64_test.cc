#include "common/base64.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(Base64Test, DecodesKubeletSecretValuesFromTheSpecExample) {
  // flexvolume.md §7.1: username=admin, password=s3cr3t.
  EXPECT_EQ(*Base64Decode("YWRtaW4="), "admin");
  EXPECT_EQ(*Base64Decode("czNjcjN0"), "s3cr3t");
}

TEST(Base64Test, RoundTripsEveryByteValueInBothAlphabets) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t len : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    const std::string bytes = all.substr(0, len);
    EXPECT_EQ(*Base64Decode(Base64Encode(bytes)), bytes) << len;
    EXPECT_EQ(*Base64Decode(Base64UrlEncode(bytes)), bytes) << len;
    EXPECT_EQ(Base64UrlEncode(bytes).find_first_of("+/="), std::string::npos);
  }
}

TEST(Base64Test, RejectsBadCharactersAndLengths) {
  EXPECT_EQ(Base64Decode("YW*h").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Base64Decode("Y").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Base64Decode("YW===").status().code(), Code::kInvalidArgument);
}

TEST(Base64Test, StandardDecodingIsGosForByteFields) {
  EXPECT_EQ(*Base64DecodeStandard("YWJj\nZA==\r\n"), "abcd");
  EXPECT_FALSE(Base64DecodeStandard("YWJjZA").ok());    // padding required
  EXPECT_FALSE(Base64DecodeStandard("YW*jZA==").ok());  // not base64
  EXPECT_FALSE(Base64DecodeStandard("-_-_").ok());      // URL alphabet
  EXPECT_TRUE(Base64Decode("-_-_").ok());               // the lenient reader takes it
}

}  // namespace
}  // namespace flexcsi
