// Whole volume lives, the way a CO drives them, against the real driver with real loop devices
// and mounts.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;

class LifecycleTest : public DriverTest {};

// xfs, because it grows online with CAP_SYS_ADMIN alone; ext4 growth is covered below.
TEST_F(LifecycleTest, FilesystemFullLife) {
  const VolumeCapability cap =
      MountCapability("xfs", VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER);
  const std::map<std::string, std::string> xfs = {{"fsType", "xfs"}};
  const std::string id = CreateVolume("pvc-life", 300 * kMiB, cap, xfs);
  ASSERT_FALSE(id.empty());

  std::map<std::string, std::string> context = ControllerPublish(id, cap);
  EXPECT_FALSE(context["backingFile"].empty());

  const std::string staging = MakeDir("staging");
  const std::string target1 = PathIn("pods/a/mount");
  const std::string target2 = PathIn("pods/b/mount");
  MakeDir("pods/a");
  MakeDir("pods/b");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  EXPECT_TRUE(IsMountPoint(staging));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target1, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target2, cap));
  EXPECT_TRUE(IsMountPoint(target1));
  EXPECT_TRUE(IsMountPoint(target2));

  // Both targets show the same filesystem.
  WriteFile(target1 + "/hello.txt", "written through target 1");
  EXPECT_EQ(ReadFile(target2 + "/hello.txt"), "written through target 1");

  // Online expansion: the filesystem seen through a target grows.
  const int64_t before = FilesystemBytes(target1);
  csi::v1::ControllerExpandVolumeRequest expand;
  expand.set_volume_id(id);
  expand.mutable_capacity_range()->set_required_bytes(400 * kMiB);
  csi::v1::ControllerExpandVolumeResponse expanded;
  grpc::Status s = controller_->ControllerExpandVolume(NewContext().get(), expand, &expanded);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(expanded.capacity_bytes(), 400 * kMiB);
  EXPECT_TRUE(expanded.node_expansion_required());
  csi::v1::NodeExpandVolumeRequest node_expand;
  node_expand.set_volume_id(id);
  node_expand.set_volume_path(target1);
  node_expand.set_staging_target_path(staging);
  node_expand.mutable_capacity_range()->set_required_bytes(400 * kMiB);
  csi::v1::NodeExpandVolumeResponse node_expanded;
  s = node_->NodeExpandVolume(NewContext().get(), node_expand, &node_expanded);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(node_expanded.capacity_bytes(), 400 * kMiB);
  const int64_t after = FilesystemBytes(target1);
  EXPECT_GT(after, before + 80 * kMiB) << "before " << before << " after " << after;
  EXPECT_EQ(ReadFile(target2 + "/hello.txt"), "written through target 1");

  // Stats reflect the grown filesystem.
  csi::v1::NodeGetVolumeStatsRequest stats_request;
  stats_request.set_volume_id(id);
  stats_request.set_volume_path(target2);
  csi::v1::NodeGetVolumeStatsResponse stats;
  s = node_->NodeGetVolumeStats(NewContext().get(), stats_request, &stats);
  ASSERT_TRUE(s.ok()) << Describe(s);
  ASSERT_EQ(stats.usage_size(), 2);
  EXPECT_EQ(stats.usage(0).unit(), csi::v1::VolumeUsage::BYTES);
  EXPECT_EQ(stats.usage(0).total(), after);
  EXPECT_EQ(stats.usage(1).unit(), csi::v1::VolumeUsage::INODES);
  EXPECT_GT(stats.usage(1).total(), 0);
  EXPECT_FALSE(stats.volume_condition().abnormal());

  // Snapshot while in use, then restore into a new, larger volume.
  csi::v1::CreateSnapshotRequest snap_request;
  snap_request.set_name("snap-life");
  snap_request.set_source_volume_id(id);
  csi::v1::CreateSnapshotResponse snap;
  s = controller_->CreateSnapshot(NewContext().get(), snap_request, &snap);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_TRUE(snap.snapshot().ready_to_use());
  EXPECT_EQ(snap.snapshot().source_volume_id(), id);
  EXPECT_EQ(snap.snapshot().size_bytes(), 400 * kMiB);
  WriteFile(target1 + "/after-snapshot.txt", "not in the snapshot");

  csi::v1::CreateVolumeRequest restore = CreateRequest("pvc-restored", 500 * kMiB, cap);
  (*restore.mutable_parameters())["fsType"] = "xfs";
  restore.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id(
      snap.snapshot().snapshot_id());
  csi::v1::CreateVolumeResponse restored;
  s = Call(restore, &restored);
  ASSERT_TRUE(s.ok()) << Describe(s);
  const std::string restored_id = restored.volume().volume_id();
  EXPECT_EQ(restored.volume().content_source().snapshot().snapshot_id(),
            snap.snapshot().snapshot_id());
  const std::string staging2 = MakeDir("staging2");
  const std::string target3 = PathIn("pods/c/mount");
  MakeDir("pods/c");
  ASSERT_NO_FATAL_FAILURE(Stage(restored_id, staging2, cap, ControllerPublish(restored_id, cap)));
  ASSERT_NO_FATAL_FAILURE(Publish(restored_id, staging2, target3, cap));
  EXPECT_EQ(ReadFile(target3 + "/hello.txt"), "written through target 1");
  struct stat st;
  EXPECT_NE(::stat((target3 + "/after-snapshot.txt").c_str(), &st), 0);
  // Restoring into a larger volume grows the filesystem to it.
  EXPECT_GT(FilesystemBytes(target3), FilesystemBytes(target1) + 64 * kMiB);

  // Tear everything down in CO order.
  for (const auto& [volume, staging_path, targets] :
       std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {id, staging, {target1, target2}}, {restored_id, staging2, {target3}}}) {
    for (const std::string& target : targets) {
      ASSERT_NO_FATAL_FAILURE(Unpublish(volume, target));
      EXPECT_FALSE(IsMountPoint(target));
      EXPECT_NE(::stat(target.c_str(), &st), 0) << target << " should be removed";
    }
    ASSERT_NO_FATAL_FAILURE(Unstage(volume, staging_path));
    EXPECT_FALSE(IsMountPoint(staging_path));
    csi::v1::ControllerUnpublishVolumeRequest unpublish;
    unpublish.set_volume_id(volume);
    unpublish.set_node_id(node_id());
    s = Call(unpublish);
    ASSERT_TRUE(s.ok()) << Describe(s);
    ASSERT_NO_FATAL_FAILURE(DeleteVolume(volume));
  }
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());

  csi::v1::DeleteSnapshotRequest delete_snap;
  delete_snap.set_snapshot_id(snap.snapshot().snapshot_id());
  csi::v1::DeleteSnapshotResponse deleted;
  s = controller_->DeleteSnapshot(NewContext().get(), delete_snap, &deleted);
  ASSERT_TRUE(s.ok()) << Describe(s);
  csi::v1::ListVolumesResponse list;
  s = controller_->ListVolumes(NewContext().get(), csi::v1::ListVolumesRequest(), &list);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(list.entries_size(), 0);
}

TEST_F(LifecycleTest, BlockIsRawDeviceOnFileTarget) {
  const VolumeCapability cap = BlockCapability();
  const std::string id = CreateVolume("pvc-block", 16 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  const std::string target = PathIn("pods/a/dev");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, ControllerPublish(id, cap)));
  EXPECT_FALSE(IsMountPoint(staging));  // block staging only attaches
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));

  // Raw bytes written at an offset come back.
  {
    FILE* f = std::fopen(target.c_str(), "r+");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4 * kMiB, SEEK_SET);
    std::fputs("raw-bytes", f);
    std::fclose(f);
  }
  {
    FILE* f = std::fopen(target.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4 * kMiB, SEEK_SET);
    char buf[10] = {0};
    ASSERT_EQ(std::fread(buf, 1, 9, f), 9u);
    std::fclose(f);
    EXPECT_STREQ(buf, "raw-bytes");
  }

  // A read-only publication is a read-only device: writes through it fail, reads see the data.
  const std::string ro_target = PathIn("pods/a/dev-ro");
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, ro_target, cap, /*readonly=*/true));
  {
    // The kernel may let the open succeed; the write itself must fail.
    int fd = ::open(ro_target.c_str(), O_WRONLY);
    if (fd >= 0) {
      char block[512] = {1};
      EXPECT_LT(::pwrite(fd, block, sizeof(block), 0), 0) << "read-only block target wrote";
      ::close(fd);
    }
    FILE* f = std::fopen(ro_target.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4 * kMiB, SEEK_SET);
    char buf[10] = {0};
    ASSERT_EQ(std::fread(buf, 1, 9, f), 9u);
    std::fclose(f);
    EXPECT_STREQ(buf, "raw-bytes");
  }
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, ro_target));

  // Expanding a block volume needs no node step: the controller refreshes the device.
  csi::v1::ControllerExpandVolumeRequest expand;
  expand.set_volume_id(id);
  expand.mutable_capacity_range()->set_required_bytes(32 * kMiB);
  csi::v1::ControllerExpandVolumeResponse expanded;
  grpc::Status s = controller_->ControllerExpandVolume(NewContext().get(), expand, &expanded);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_FALSE(expanded.node_expansion_required());
  csi::v1::NodeGetVolumeStatsRequest stats_request;
  stats_request.set_volume_id(id);
  stats_request.set_volume_path(target);
  csi::v1::NodeGetVolumeStatsResponse stats;
  s = node_->NodeGetVolumeStats(NewContext().get(), stats_request, &stats);
  ASSERT_TRUE(s.ok()) << Describe(s);
  ASSERT_EQ(stats.usage_size(), 1);
  EXPECT_EQ(stats.usage(0).total(), 32 * kMiB);

  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
  EXPECT_NE(::stat(target.c_str(), &st), 0);
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

// Growing a mounted ext4 needs CAP_SYS_RESOURCE. Where the driver has it, NodeExpand grows the
// filesystem online; where it lacks it (unprivileged containers), NodeExpand answers
// FAILED_PRECONDITION and the filesystem grows offline at the next NodeStage.
TEST_F(LifecycleTest, Ext4GrowsOnlineOrAtNextStage) {
  const VolumeCapability cap = MountCapability("ext4");
  const std::string id = CreateVolume("pvc-ext4-grow", 32 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  const std::string target = PathIn("pods/a/mount");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
  StatusOr<MountEntry> mounted = FindByTarget(target);
  ASSERT_TRUE(mounted.ok());
  EXPECT_EQ(mounted->fstype, "ext4");
  WriteFile(target + "/keep", "survives growth");
  const int64_t before = FilesystemBytes(target);

  csi::v1::ControllerExpandVolumeRequest expand;
  expand.set_volume_id(id);
  expand.mutable_capacity_range()->set_required_bytes(96 * kMiB);
  csi::v1::ControllerExpandVolumeResponse expanded;
  ASSERT_TRUE(controller_->ControllerExpandVolume(NewContext().get(), expand, &expanded).ok());
  EXPECT_TRUE(expanded.node_expansion_required());
  csi::v1::NodeExpandVolumeRequest node_expand;
  node_expand.set_volume_id(id);
  node_expand.set_volume_path(target);
  csi::v1::NodeExpandVolumeResponse node_expanded;
  grpc::Status s = node_->NodeExpandVolume(NewContext().get(), node_expand, &node_expanded);
  if (s.ok()) {
    EXPECT_GT(FilesystemBytes(target), before + 48 * kMiB);
    ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
    ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  } else {
    ASSERT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(s);
    EXPECT_NE(s.error_message().find("CAP_SYS_RESOURCE"), std::string::npos);
    ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
    ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
    ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
    ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
    EXPECT_GT(FilesystemBytes(target), before + 48 * kMiB);
    EXPECT_EQ(ReadFile(target + "/keep"), "survives growth");
    ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
    ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  }
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

TEST_F(LifecycleTest, ReadOnlyTargetBesideWritable) {
  const VolumeCapability cap =
      MountCapability("", VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER);
  const std::string id = CreateVolume("pvc-ro", 16 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  MakeDir("pods/b");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a/rw"), cap, false));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/b/ro"), cap, true));
  WriteFile(PathIn("pods/a/rw/f"), "x");
  EXPECT_EQ(ReadFile(PathIn("pods/b/ro/f")), "x");
  std::ofstream denied(PathIn("pods/b/ro/g"));
  EXPECT_FALSE(denied.is_open());
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a/rw")));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/b/ro")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

TEST_F(LifecycleTest, MountGroupOwnsTheRoot) {
  VolumeCapability cap = MountCapability();
  cap.mutable_mount()->set_volume_mount_group("4321");
  const std::string id = CreateVolume("pvc-group", 16 * kMiB, MountCapability());
  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a/m"), cap));
  struct stat st;
  ASSERT_EQ(::stat(PathIn("pods/a/m").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_TRUE(st.st_mode & S_ISGID);
  EXPECT_TRUE(st.st_mode & S_IWGRP);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a/m")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(LifecycleTest, CloneIntoALargerVolume) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-src", 16 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a/m"), cap));
  WriteFile(PathIn("pods/a/m/data"), "cloned");

  csi::v1::CreateVolumeRequest clone = CreateRequest("pvc-clone", 48 * kMiB, cap);
  clone.mutable_volume_content_source()->mutable_volume()->set_volume_id(id);
  csi::v1::CreateVolumeResponse cloned;
  grpc::Status s = Call(clone, &cloned);
  ASSERT_TRUE(s.ok()) << Describe(s);
  const std::string staging2 = MakeDir("staging2");
  ASSERT_NO_FATAL_FAILURE(Stage(cloned.volume().volume_id(), staging2, cap));
  EXPECT_EQ(ReadFile(staging2 + "/data"), "cloned");
  EXPECT_GT(FilesystemBytes(staging2), 40 * kMiB);  // the larger clone's filesystem was grown
  ASSERT_NO_FATAL_FAILURE(Unstage(cloned.volume().volume_id(), staging2));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a/m")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
