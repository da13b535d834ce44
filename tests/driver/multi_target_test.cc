// One volume published at several targets at once, each with its own read-only flag and
// volume_mount_group, as kubelet does for pods that share a claim on one node. Runs against every
// driver shape: a staging mount (default), --stage-without-mount and --no-stage-unstage.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;
using grpc::StatusCode;

// The shape comes from the subclass: its flags, and whether it stages.
class MultiTargetTest : public DriverTest {
 protected:
  void RwRoGroups();
  void BlockRwRo();

  bool stages() const {
    const std::vector<std::string> flags = ExtraFlags();
    return std::find(flags.begin(), flags.end(), "--no-stage-unstage") == flags.end();
  }

  // The staging path kubelet would pass: empty when the node does not stage.
  std::string StageIfStaging(const std::string& id, const VolumeCapability& cap) {
    if (!stages()) return "";
    const std::string staging = MakeDir("staging");
    Stage(id, staging, cap);
    return staging;
  }
  static VolumeCapability WithGroup(VolumeCapability cap, const std::string& gid) {
    cap.mutable_mount()->set_volume_mount_group(gid);
    return cap;
  }
  csi::v1::NodePublishVolumeRequest PublishRequest(const std::string& id,
                                                   const std::string& staging,
                                                   const std::string& target,
                                                   const VolumeCapability& cap, bool readonly) {
    csi::v1::NodePublishVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(staging);
    r.set_target_path(target);
    *r.mutable_volume_capability() = cap;
    r.set_readonly(readonly);
    return r;
  }
  grpc::Status UnstageCall(const std::string& id, const std::string& staging) {
    csi::v1::NodeUnstageVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(staging);
    return Call(r);
  }
};

// Pod A writes with fsGroup 2000, pod B reads only, pod C writes with fsGroup 3000: all three
// at once, each target as requested, and each repeat or conflict judged at its own target.
void MultiTargetTest::RwRoGroups() {
  const VolumeCapability cap = MountCapability();
  const VolumeCapability cap_a = WithGroup(cap, "2000");
  const VolumeCapability cap_c = WithGroup(cap, "3000");
  const std::string id = CreateVolume("pvc-pods", 16 * kMiB, cap);
  std::string staging;
  ASSERT_NO_FATAL_FAILURE(staging = StageIfStaging(id, cap_a));
  MakeDir("pods");
  // The unprivileged probes of GroupCanCreateFile must reach the targets.
  ASSERT_EQ(::chmod(test_dir().c_str(), 0711), 0);
  const std::string a = PathIn("pods/a"), b = PathIn("pods/b"), c = PathIn("pods/c");

  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, a, cap_a, false));
  EXPECT_TRUE(GroupCanCreateFile(a, 2000)) << "fsGroup 2000 cannot write at pod A's target";
  EXPECT_FALSE(GroupCanCreateFile(a, 4444)) << "any group can write: the test proves nothing";
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, b, cap, true));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, c, cap_c, false));
  EXPECT_TRUE(GroupCanCreateFile(c, 3000)) << "fsGroup 3000 cannot write at pod C's target";

  EXPECT_EQ(CreateFileErrno(a), 0);
  EXPECT_EQ(CreateFileErrno(b), EROFS) << "pod B's target is not read-only";
  EXPECT_EQ(CreateFileErrno(c), 0);
  WriteFile(a + "/from-a", "shared");
  EXPECT_EQ(ReadFile(b + "/from-a"), "shared");
  EXPECT_EQ(ReadFile(c + "/from-a"), "shared");

  // Repeats at the same target succeed; the same target with another read-only flag or another
  // capability is ALREADY_EXISTS.
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, a, cap_a, false));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, b, cap, true));
  EXPECT_EQ(Call(PublishRequest(id, staging, a, cap_a, true)).error_code(),
            StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(Call(PublishRequest(id, staging, b, cap, false)).error_code(),
            StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(Call(PublishRequest(id, staging, c, cap_a, false)).error_code(),
            StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(CreateFileErrno(b), EROFS) << "a refused repeat changed pod B's target";
  if (stages()) {
    EXPECT_EQ(UnstageCall(id, staging).error_code(), StatusCode::FAILED_PRECONDITION);
  }

  // Pod A leaves; B and C keep working.
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, a));
  EXPECT_FALSE(IsMountPoint(a));
  EXPECT_EQ(ReadFile(b + "/from-a"), "shared");
  WriteFile(c + "/from-c", "still");
  EXPECT_EQ(ReadFile(b + "/from-c"), "still");
  EXPECT_EQ(CreateFileErrno(b), EROFS);
  if (stages()) {
    EXPECT_EQ(UnstageCall(id, staging).error_code(), StatusCode::FAILED_PRECONDITION);
  }
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, b));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, c));
  if (stages()) {
    ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  }
  EXPECT_EQ(MountPointsBelow(test_dir()), std::vector<std::string>{});
  EXPECT_EQ(LoopDevicesBelow(state_dir()), std::vector<std::string>{});
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

// A read-only block target is a read-only device beside the writable one.
void MultiTargetTest::BlockRwRo() {
  const VolumeCapability cap = BlockCapability();
  const std::string id = CreateVolume("pvc-block-pods", 8 * kMiB, cap);
  std::string staging;
  ASSERT_NO_FATAL_FAILURE(staging = StageIfStaging(id, cap));
  MakeDir("pods");
  const std::string rw = PathIn("pods/rw"), ro = PathIn("pods/ro");
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, rw, cap, false));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, ro, cap, true));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, ro, cap, true));  // repeat
  EXPECT_EQ(Call(PublishRequest(id, staging, ro, cap, false)).error_code(),
            StatusCode::ALREADY_EXISTS);

  int fd = ::open(rw.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "the writable block target does not open for writing";
  EXPECT_EQ(::pwrite(fd, "block!", 6, 4096), 6);
  ::fsync(fd);
  ::close(fd);
  // Linux lets a read-only block device be opened for writing; the write itself is refused.
  fd = ::open(ro.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    EXPECT_LT(::pwrite(fd, "nope!!", 6, 4096), 0) << "the read-only block target took a write";
    ::close(fd);
  }
  fd = ::open(ro.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  ASSERT_GE(fd, 0);
  alignas(4096) char buffer[4096];
  EXPECT_EQ(::pread(fd, buffer, sizeof(buffer), 4096), 4096);
  EXPECT_EQ(std::string(buffer, 6), "block!");
  ::close(fd);

  ASSERT_NO_FATAL_FAILURE(Unpublish(id, rw));
  EXPECT_TRUE(IsMountPoint(ro));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, ro));
  if (stages()) {
    ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  }
  EXPECT_EQ(MountPointsBelow(test_dir()), std::vector<std::string>{});
  EXPECT_EQ(LoopDevicesBelow(state_dir()), std::vector<std::string>{});
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

class DefaultShapeTest : public MultiTargetTest {};
TEST_F(DefaultShapeTest, RwRoGroups) { RwRoGroups(); }
TEST_F(DefaultShapeTest, BlockRwRo) { BlockRwRo(); }

class NoMountShapeTest : public MultiTargetTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--stage-without-mount"}; }
};
TEST_F(NoMountShapeTest, RwRoGroups) { RwRoGroups(); }
TEST_F(NoMountShapeTest, BlockRwRo) { BlockRwRo(); }

class NoStageShapeTest : public MultiTargetTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-stage-unstage"}; }
};
TEST_F(NoStageShapeTest, RwRoGroups) { RwRoGroups(); }
TEST_F(NoStageShapeTest, BlockRwRo) { BlockRwRo(); }

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
