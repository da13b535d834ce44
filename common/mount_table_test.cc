// Mounts tmpfs and binds; registered with ctest under `unshare -m --propagation private`, so
// nothing here is visible outside the test's own mount namespace.
#include "common/mount_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>

namespace flexcsi {
namespace {

class MountTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/flexcsi-mount-table-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    src_ = dir_ + "/src";
    dst_ = dir_ + "/dst";
    ASSERT_EQ(::mkdir(src_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dst_.c_str(), 0755), 0);
  }
  void TearDown() override {
    for (int i = 0; i < 4 && IsMountPoint(dst_); ++i) Unmount(dst_);
    for (int i = 0; i < 4 && IsMountPoint(src_); ++i) Unmount(src_);
    ::unlink((src_ + "/file").c_str());
    ::rmdir(src_.c_str());
    ::rmdir(dst_.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_, src_, dst_;
};

TEST_F(MountTableTest, ReadMountTableContainsRoot) {
  StatusOr<std::vector<MountEntry>> table = ReadMountTable();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  bool found_root = false;
  for (const MountEntry& e : *table) found_root |= (e.target == "/");
  EXPECT_TRUE(found_root);
}

TEST_F(MountTableTest, PlainDirectoryIsNotAMountPoint) {
  EXPECT_FALSE(IsMountPoint(dst_));
  EXPECT_EQ(FindByTarget(dst_).status().code(), Code::kNotFound);
}

TEST_F(MountTableTest, MountTmpfsShowsInTableWithOptions) {
  ASSERT_TRUE(Mount("flexcsi-test", dst_, "tmpfs", "size=1m,noatime").ok());
  StatusOr<MountEntry> entry = FindByTarget(dst_ + "/");
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  EXPECT_EQ(entry->fstype, "tmpfs");
  EXPECT_EQ(entry->source, "flexcsi-test");
  EXPECT_NE(entry->options.find("noatime"), std::string::npos);
  ASSERT_TRUE(Unmount(dst_).ok());
  EXPECT_FALSE(IsMountPoint(dst_));
}

TEST_F(MountTableTest, ReadOnlyBindRefusesWrites) {
  ASSERT_TRUE(Mount("flexcsi-test", src_, "tmpfs", "size=1m").ok());
  { std::ofstream(src_ + "/file") << "data"; }
  Status bound = BindMount(src_, dst_, /*readonly=*/true);
  ASSERT_TRUE(bound.ok()) << bound.ToString();
  StatusOr<MountEntry> entry = FindByTarget(dst_);
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->options.rfind("ro", 0), 0u) << entry->options;
  {
    std::ifstream in(dst_ + "/file");
    std::string content;
    in >> content;
    EXPECT_EQ(content, "data");
  }
  int fd = ::open((dst_ + "/new").c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EROFS);
  if (fd >= 0) ::close(fd);
  ASSERT_TRUE(Unmount(dst_).ok());
  ASSERT_TRUE(Unmount(src_).ok());
}

TEST_F(MountTableTest, BindMountOfAFileOntoAFile) {
  std::string file_src = dir_ + "/src/file";
  std::string file_dst = dir_ + "/dst-file";
  { std::ofstream(file_src) << "x"; }
  { std::ofstream(file_dst) << ""; }
  ASSERT_TRUE(BindMount(file_src, file_dst, false).ok());
  EXPECT_TRUE(IsMountPoint(file_dst));
  EXPECT_TRUE(Unmount(file_dst).ok());
  ::unlink(file_dst.c_str());
}

TEST_F(MountTableTest, UnmountWhileBusyIsFailedPrecondition) {
  ASSERT_TRUE(Mount("flexcsi-test", dst_, "tmpfs", "size=1m").ok());
  int fd = ::open((dst_ + "/held").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Unmount(dst_).code(), Code::kFailedPrecondition);
  ::close(fd);
  EXPECT_TRUE(Unmount(dst_).ok());
}

TEST_F(MountTableTest, UnmountOfPlainDirectoryFails) {
  EXPECT_FALSE(Unmount(dst_).ok());
}

TEST_F(MountTableTest, MountOfUnknownFilesystemFails) {
  Status status = Mount("none", dst_, "no-such-fs-type", "");
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(status.message().empty());
}

TEST(JoinMountOptionsTest, SkipsEmptyOptions) {
  EXPECT_EQ(JoinMountOptions({"ro", "", "noatime"}), "ro,noatime");
  EXPECT_EQ(JoinMountOptions({}), "");
}

}  // namespace
}  // namespace flexcsi
