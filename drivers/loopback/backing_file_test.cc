#include "drivers/loopback/backing_file.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <fstream>

namespace flexcsi {
namespace loopback {
namespace {

class BackingFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/flexcsi-file-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { boost::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(BackingFileTest, SparseFileHasSizeButNoBlocks) {
  const std::string path = dir_ + "/v.img";
  ASSERT_TRUE(CreateSparseFile(path, 1 << 30).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 30);
  EXPECT_LT(st.st_blocks * 512, 1 << 20);
  EXPECT_EQ(CreateSparseFile(path, 1).code(), Code::kAlreadyExists);
}

TEST_F(BackingFileTest, CopyKeepsContentAndGrowsToTheRequestedSize) {
  const std::string source = dir_ + "/a.img";
  ASSERT_TRUE(CreateSparseFile(source, 4 << 20).ok());
  {
    std::fstream f(source, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f << "payload";
  }
  const std::string copy = dir_ + "/b.img";
  ASSERT_TRUE(CopySparseFile(source, copy, 8 << 20).ok());
  EXPECT_EQ(*FileSize(copy), 8 << 20);
  std::ifstream in(copy, std::ios::binary);
  in.seekg(1 << 20);
  char buf[8] = {0};
  in.read(buf, 7);
  EXPECT_STREQ(buf, "payload");
  EXPECT_FALSE(boost::filesystem::exists(copy + ".partial"));
}

TEST_F(BackingFileTest, GrowNeverShrinks) {
  const std::string path = dir_ + "/v.img";
  ASSERT_TRUE(CreateSparseFile(path, 4 << 20).ok());
  ASSERT_TRUE(GrowFile(path, 1 << 20).ok());
  EXPECT_EQ(*FileSize(path), 4 << 20);
  ASSERT_TRUE(GrowFile(path, 6 << 20).ok());
  EXPECT_EQ(*FileSize(path), 6 << 20);
}

TEST_F(BackingFileTest, RemoveIsIdempotentAndMissingSizeIsNotFound) {
  const std::string path = dir_ + "/v.img";
  ASSERT_TRUE(CreateSparseFile(path, 1).ok());
  EXPECT_TRUE(RemoveFile(path).ok());
  EXPECT_TRUE(RemoveFile(path).ok());
  EXPECT_EQ(FileSize(path).status().code(), Code::kNotFound);
}

TEST(NewIdTest, PrefixedAndUnique) {
  std::string a = NewId("vol-");
  std::string b = NewId("vol-");
  EXPECT_EQ(a.rfind("vol-", 0), 0u);
  EXPECT_EQ(a.size(), 4u + 16u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
