#include "translator/md5.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace translator {
namespace {

TEST(Md5Test, KnownDigests) {
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex("10.70.53.126:6789"), "b7f67366bb43f32e07d8a261a7840da9");
  EXPECT_EQ(Md5Hex("10.70.53.126:6789,10.70.53.156:6789"), "7982de6a23b77bce50b1ba9f2e879cce");
  EXPECT_EQ(Md5Hex(std::string(1000, 'a')), "cabe45dcc9ae5b66ba86600cca6b8ba8");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
