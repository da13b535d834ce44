// Attaches real loop devices (root only) to files in a temp dir; TearDown detaches every one of
// them, because loop devices outlive the test process.
#include "drivers/loopback/loop_device.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "drivers/loopback/backing_file.h"

namespace flexcsi {
namespace loopback {
namespace {

class LoopDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/flexcsi-loop-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    file_ = dir_ + "/disk.img";
    ASSERT_TRUE(CreateSparseFile(file_, 8 << 20).ok());
  }
  void TearDown() override {
    DetachLoopDevices(file_);
    EXPECT_TRUE(LoopDevicesFor(file_)->empty());
    boost::filesystem::remove_all(dir_);
  }
  std::string dir_, file_;
};

TEST_F(LoopDeviceTest, AttachReusesTheDeviceOfTheSameFile) {
  EXPECT_TRUE(LoopDevicesFor(file_)->empty());
  StatusOr<std::string> first = AttachLoopDevice(file_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->rfind("/dev/loop", 0), 0u) << *first;
  StatusOr<std::string> second = AttachLoopDevice(file_);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(LoopDevicesFor(file_)->size(), 1u);
  EXPECT_EQ(*BlockDeviceSize(*first), 8 << 20);
}

// Nodes imitated on one machine share its loop devices: a node whose attachment is gone (lost,
// then back) must not detach the device another node attached since, even under the same
// number.
TEST_F(LoopDeviceTest, DetachesOnlyTheAttachmentItsSequenceNames) {
  StatusOr<std::string> first = AttachLoopDevice(file_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const uint64_t first_seq = LoopDeviceSequence(*first);
  ASSERT_NE(first_seq, 0u);
  ASSERT_TRUE(DetachLoopDevices(file_).ok());
  StatusOr<std::string> second = AttachLoopDevice(file_);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(LoopDeviceSequence(*second), first_seq);
  EXPECT_TRUE(DetachLoopDeviceAttachment(*first, first_seq, file_).ok());
  EXPECT_EQ(LoopDevicesFor(file_)->size(), 1u) << "another attachment was detached";
  EXPECT_TRUE(DetachLoopDeviceAttachment(*second, LoopDeviceSequence(*second), file_).ok());
  EXPECT_TRUE(LoopDevicesFor(file_)->empty());
}

// A DaemonSet upgrade replaces the csi-loopback container that attached a device; the kernel
// then names the device's file only by its path within the container's (gone) mount.
TEST_F(LoopDeviceTest, FoundAfterTheMountItWasAttachedThroughIsGone) {
  const std::string mount_point = dir_ + "/mnt";
  ASSERT_TRUE(boost::filesystem::create_directory(mount_point));
  const std::string attach = "unshare -m --propagation private sh -c 'mount --bind " + dir_ + " " +
                             mount_point + " && losetup -f " + mount_point +
                             "/disk.img' >/dev/null 2>&1";
  ASSERT_EQ(std::system(attach.c_str()), 0);
  StatusOr<std::vector<std::string>> found = LoopDevicesFor(file_);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u) << "the device attached through the gone mount is not found";
  StatusOr<std::string> again = AttachLoopDevice(file_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, found->front()) << "a second device for the same file";
  ASSERT_TRUE(DetachLoopDevices(file_).ok());
  EXPECT_TRUE(LoopDevicesFor(file_)->empty());
}

TEST_F(LoopDeviceTest, RefreshPicksUpAGrownFile) {
  StatusOr<std::string> device = AttachLoopDevice(file_);
  ASSERT_TRUE(device.ok());
  ASSERT_TRUE(GrowFile(file_, 16 << 20).ok());
  EXPECT_EQ(*BlockDeviceSize(*device), 8 << 20);  // not yet
  ASSERT_TRUE(RefreshLoopDeviceSize(*device).ok());
  EXPECT_EQ(*BlockDeviceSize(*device), 16 << 20);
}

TEST_F(LoopDeviceTest, ReadOnlyDeviceIsSeparateAndRefusesWrites) {
  StatusOr<std::string> rw = AttachLoopDevice(file_);
  StatusOr<std::string> ro = AttachLoopDevice(file_, /*readonly=*/true);
  ASSERT_TRUE(rw.ok());
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_NE(*rw, *ro);
  EXPECT_EQ(*AttachLoopDevice(file_, true), *ro);
  EXPECT_EQ(*AttachLoopDevice(file_, false), *rw);
  EXPECT_EQ(LoopDevicesFor(file_)->size(), 2u);
  // The kernel may let the open succeed; the write itself must fail.
  int fd = ::open(ro->c_str(), O_WRONLY);
  if (fd >= 0) {
    char block[512] = {1};
    EXPECT_LT(::pwrite(fd, block, sizeof(block), 0), 0);
    ::close(fd);
  }
}

TEST_F(LoopDeviceTest, DetachIsIdempotent) {
  ASSERT_TRUE(AttachLoopDevice(file_).ok());
  EXPECT_TRUE(DetachLoopDevices(file_).ok());
  EXPECT_TRUE(LoopDevicesFor(file_)->empty());
  EXPECT_TRUE(DetachLoopDevices(file_).ok());
}

TEST_F(LoopDeviceTest, MissingBackingFileIsNotFound) {
  EXPECT_EQ(AttachLoopDevice(dir_ + "/absent.img").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
