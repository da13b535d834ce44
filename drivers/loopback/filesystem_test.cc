// mkfs/blkid/resize2fs against a real loop device (root only); nothing is mounted.
#include "drivers/loopback/filesystem.h"

#include <stdlib.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/loop_device.h"

namespace flexcsi {
namespace loopback {
namespace {

class FilesystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/flexcsi-fs-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    file_ = dir_ + "/disk.img";
    ASSERT_TRUE(CreateSparseFile(file_, 16 << 20).ok());
    StatusOr<std::string> device = AttachLoopDevice(file_);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = *device;
  }
  void TearDown() override {
    DetachLoopDevices(file_);
    boost::filesystem::remove_all(dir_);
  }
  std::string dir_, file_, device_;
};

TEST_F(FilesystemTest, ProbeFindsNothingOrTheType) {
  StatusOr<std::string> blank = ProbeFilesystem(device_);
  ASSERT_TRUE(blank.ok()) << blank.status().ToString();
  EXPECT_EQ(*blank, "");
  ASSERT_TRUE(MakeFilesystem(device_, "ext4").ok());
  EXPECT_EQ(*ProbeFilesystem(device_), "ext4");
}

TEST_F(FilesystemTest, UnsupportedFilesystemIsRefused) {
  EXPECT_EQ(MakeFilesystem(device_, "vfat").code(), Code::kInvalidArgument);
  EXPECT_EQ(*ProbeFilesystem(device_), "");  // and nothing was written
}

TEST_F(FilesystemTest, UnmountedExt4GrowsToItsDevice) {
  ASSERT_TRUE(MakeFilesystem(device_, "ext4").ok());
  ASSERT_TRUE(GrowFile(file_, 48 << 20).ok());
  ASSERT_TRUE(RefreshLoopDeviceSize(device_).ok());
  Status grown = GrowUnmountedFilesystem("ext4", device_);
  ASSERT_TRUE(grown.ok()) << grown.ToString();
  // A second call finds nothing to do.
  EXPECT_TRUE(GrowUnmountedFilesystem("ext4", device_).ok());
  EXPECT_EQ(*ProbeFilesystem(device_), "ext4");
}

TEST_F(FilesystemTest, UnmountedGrowthIgnoresXfs) {
  EXPECT_TRUE(GrowUnmountedFilesystem("xfs", device_).ok());
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
