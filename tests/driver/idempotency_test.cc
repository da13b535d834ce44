// Every call repeated, and calls in orders a CO may produce after losing track of things.
#include <sys/stat.h>

#include <thread>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;

class IdempotencyTest : public DriverTest {};

TEST_F(IdempotencyTest, EveryCallTwice) {
  const VolumeCapability cap = MountCapability();
  csi::v1::CreateVolumeRequest create = CreateRequest("pvc-twice", 16 * kMiB, cap);
  csi::v1::CreateVolumeResponse first, second;
  ASSERT_TRUE(Call(create, &first).ok());
  grpc::Status s = Call(create, &second);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(first.volume().volume_id(), second.volume().volume_id());
  EXPECT_EQ(first.volume().capacity_bytes(), second.volume().capacity_bytes());
  const std::string id = first.volume().volume_id();

  std::map<std::string, std::string> context1 = ControllerPublish(id, cap);
  std::map<std::string, std::string> context2 = ControllerPublish(id, cap);
  EXPECT_EQ(context1["backingFile"], context2["backingFile"]);

  const std::string staging = MakeDir("staging");
  MakeDir("pods/a");
  const std::string target = PathIn("pods/a/m");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context1));
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context1));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));

  // Repeats stack nothing: exactly one mount at each path, one loop device.
  StatusOr<std::vector<MountEntry>> table = ReadMountTable();
  ASSERT_TRUE(table.ok());
  int at_staging = 0, at_target = 0;
  for (const MountEntry& e : *table) {
    at_staging += e.target == staging;
    at_target += e.target == target;
  }
  EXPECT_EQ(at_staging, 1);
  EXPECT_EQ(at_target, 1);
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);

  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  csi::v1::ControllerUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id(id);
  unpublish.set_node_id(node_id());
  EXPECT_TRUE(Call(unpublish).ok());
  EXPECT_TRUE(Call(unpublish).ok());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));

  csi::v1::CreateSnapshotRequest snap;
  snap.set_name("never-mind");
  snap.set_source_volume_id(id);
  csi::v1::CreateSnapshotResponse out;
  EXPECT_EQ(controller_->CreateSnapshot(NewContext().get(), snap, &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(IdempotencyTest, SnapshotCreateAndDeleteTwice) {
  const std::string id = CreateVolume("pvc-snap", 8 * kMiB, MountCapability());
  csi::v1::CreateSnapshotRequest snap;
  snap.set_name("snap-twice");
  snap.set_source_volume_id(id);
  csi::v1::CreateSnapshotResponse a, b;
  ASSERT_TRUE(controller_->CreateSnapshot(NewContext().get(), snap, &a).ok());
  ASSERT_TRUE(controller_->CreateSnapshot(NewContext().get(), snap, &b).ok());
  EXPECT_EQ(a.snapshot().snapshot_id(), b.snapshot().snapshot_id());
  EXPECT_EQ(a.snapshot().creation_time().seconds(), b.snapshot().creation_time().seconds());
  csi::v1::DeleteSnapshotRequest del;
  del.set_snapshot_id(a.snapshot().snapshot_id());
  csi::v1::DeleteSnapshotResponse out;
  EXPECT_TRUE(controller_->DeleteSnapshot(NewContext().get(), del, &out).ok());
  EXPECT_TRUE(controller_->DeleteSnapshot(NewContext().get(), del, &out).ok());
}

TEST_F(IdempotencyTest, RestoreRepeatAfterSnapshotGone) {
  const std::string id = CreateVolume("pvc-origin", 8 * kMiB, MountCapability());
  csi::v1::CreateSnapshotRequest snap;
  snap.set_name("snap-gone");
  snap.set_source_volume_id(id);
  csi::v1::CreateSnapshotResponse snap_out;
  ASSERT_TRUE(controller_->CreateSnapshot(NewContext().get(), snap, &snap_out).ok());
  csi::v1::CreateVolumeRequest restore = CreateRequest("pvc-restore", 8 * kMiB, MountCapability());
  restore.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id(
      snap_out.snapshot().snapshot_id());
  csi::v1::CreateVolumeResponse first, second;
  ASSERT_TRUE(Call(restore, &first).ok());
  csi::v1::DeleteSnapshotRequest del;
  del.set_snapshot_id(snap_out.snapshot().snapshot_id());
  csi::v1::DeleteSnapshotResponse del_out;
  ASSERT_TRUE(controller_->DeleteSnapshot(NewContext().get(), del, &del_out).ok());
  grpc::Status s = Call(restore, &second);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(first.volume().volume_id(), second.volume().volume_id());
}

TEST_F(IdempotencyTest, UnstageNeverStagedIsOk) {
  const std::string id = CreateVolume("pvc-never", 8 * kMiB, MountCapability());
  ASSERT_NO_FATAL_FAILURE(Unstage(id, MakeDir("staging")));
}

TEST_F(IdempotencyTest, UnpublishUnknownTargetOk) {
  const std::string id = CreateVolume("pvc-unknown-target", 8 * kMiB, MountCapability());
  const std::string target = MakeDir("pods/never/m");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
  struct stat st;
  EXPECT_NE(::stat(target.c_str(), &st), 0);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("does/not/exist")));
}

TEST_F(IdempotencyTest, ControllerUnpublishUnknownOk) {
  csi::v1::ControllerUnpublishVolumeRequest r;
  r.set_volume_id("vol-unknown");
  r.set_node_id(node_id());
  EXPECT_TRUE(Call(r).ok());
  r.set_volume_id(CreateVolume("pvc-never-published", 8 * kMiB, MountCapability()));
  EXPECT_TRUE(Call(r).ok());
  r.clear_node_id();  // all nodes
  EXPECT_TRUE(Call(r).ok());
}

// A driver that crashed between mounting a target and recording it still owns that mount; a
// mount it never made is left alone.
TEST_F(IdempotencyTest, UnpublishUndoesOnlyOwnMount) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-unrecorded", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  const std::string ours = MakeDir("pods/ours");
  ASSERT_TRUE(BindMount(staging, ours, false).ok());
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, ours));
  EXPECT_FALSE(IsMountPoint(ours));
  struct stat st;
  EXPECT_NE(::stat(ours.c_str(), &st), 0);

  const std::string foreign = MakeDir("pods/foreign");
  ASSERT_TRUE(Mount("foreign", foreign, "tmpfs", "size=1m").ok());
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, foreign));
  EXPECT_TRUE(IsMountPoint(foreign));
  ASSERT_TRUE(Unmount(foreign).ok());
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(IdempotencyTest, RestageAfterMountVanished) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-vanish", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  WriteFile(staging + "/keep", "kept");
  ASSERT_TRUE(Unmount(staging).ok());  // someone else unmounted it behind the driver's back
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  EXPECT_TRUE(IsMountPoint(staging));
  EXPECT_EQ(ReadFile(staging + "/keep"), "kept");  // same filesystem, not reformatted
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(IdempotencyTest, ConcurrentStagesOneDevice) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-race", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  std::vector<grpc::Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      csi::v1::NodeStageVolumeRequest r;
      r.set_volume_id(id);
      r.set_staging_target_path(staging);
      *r.mutable_volume_capability() = cap;
      results[i] = Call(r);
    });
  }
  for (auto& t : threads) t.join();
  for (const grpc::Status& s : results) EXPECT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(IdempotencyTest, DifferentVolumesInParallel) {
  const VolumeCapability cap = MountCapability();
  constexpr int kVolumes = 3;
  std::vector<std::string> failures(kVolumes);
  std::vector<std::thread> threads;
  for (int i = 0; i < kVolumes; ++i) {
    threads.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      csi::v1::CreateVolumeResponse created;
      grpc::Status s = Call(CreateRequest("pvc-parallel-" + n, 8 * kMiB, cap), &created);
      if (!s.ok()) return void(failures[i] = "create: " + Describe(s));
      const std::string id = created.volume().volume_id();
      csi::v1::NodeStageVolumeRequest stage;
      stage.set_volume_id(id);
      stage.set_staging_target_path(PathIn("staging-" + n));
      *stage.mutable_volume_capability() = cap;
      if (!(s = Call(stage)).ok()) return void(failures[i] = "stage: " + Describe(s));
      csi::v1::NodePublishVolumeRequest publish;
      publish.set_volume_id(id);
      publish.set_staging_target_path(PathIn("staging-" + n));
      publish.set_target_path(PathIn("pods-" + n + "/m"));
      *publish.mutable_volume_capability() = cap;
      if (!(s = Call(publish)).ok()) return void(failures[i] = "publish: " + Describe(s));
      WriteFile(PathIn("pods-" + n + "/m/who"), n);
      if (ReadFile(PathIn("pods-" + n + "/m/who")) != n) failures[i] = "data mixed up";
      csi::v1::NodeUnpublishVolumeRequest unpublish;
      unpublish.set_volume_id(id);
      unpublish.set_target_path(PathIn("pods-" + n + "/m"));
      if (!(s = Call(unpublish)).ok()) return void(failures[i] = "unpublish: " + Describe(s));
      csi::v1::NodeUnstageVolumeRequest unstage;
      unstage.set_volume_id(id);
      unstage.set_staging_target_path(PathIn("staging-" + n));
      if (!(s = Call(unstage)).ok()) return void(failures[i] = "unstage: " + Describe(s));
      csi::v1::DeleteVolumeRequest del;
      del.set_volume_id(id);
      if (!(s = Call(del)).ok()) failures[i] = "delete: " + Describe(s);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kVolumes; ++i) EXPECT_EQ(failures[i], "") << "volume " << i;
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
