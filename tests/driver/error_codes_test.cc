// Each mistake a CO can make gets the code the CSI spec names for it.
#include <algorithm>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;
using grpc::StatusCode;

class ErrorCodesTest : public DriverTest {
 protected:
  csi::v1::NodeStageVolumeRequest StageRequest(const std::string& id, const std::string& path,
                                               const VolumeCapability& cap) {
    csi::v1::NodeStageVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(path);
    *r.mutable_volume_capability() = cap;
    return r;
  }
  csi::v1::NodePublishVolumeRequest PublishRequest(const std::string& id,
                                                   const std::string& staging,
                                                   const std::string& target,
                                                   const VolumeCapability& cap) {
    csi::v1::NodePublishVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(staging);
    r.set_target_path(target);
    *r.mutable_volume_capability() = cap;
    return r;
  }
};

TEST_F(ErrorCodesTest, CreateNeedsNameAndCapabilities) {
  csi::v1::CreateVolumeResponse out;
  csi::v1::CreateVolumeRequest r = CreateRequest("", 8 * kMiB, MountCapability());
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
  r.set_name("pvc-no-caps");
  r.clear_volume_capabilities();
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
  VolumeCapability no_access_type;
  no_access_type.mutable_access_mode()->set_mode(VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  *r.add_volume_capabilities() = no_access_type;
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ErrorCodesTest, CreateRejectsBadCapOrParams) {
  csi::v1::CreateVolumeResponse out;
  EXPECT_EQ(Call(CreateRequest(
                     "a", 8 * kMiB,
                     MountCapability("", VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER)),
                 &out)
                .error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(CreateRequest("b", 8 * kMiB, MountCapability("vfat")), &out).error_code(),
            StatusCode::INVALID_ARGUMENT);
  csi::v1::CreateVolumeRequest r = CreateRequest("c", 8 * kMiB, MountCapability());
  (*r.mutable_parameters())["fsType"] = "zfs";
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ErrorCodesTest, CreateVolumeCapacityOutOfRange) {
  csi::v1::CreateVolumeResponse out;
  csi::v1::CreateVolumeRequest r = CreateRequest("pvc-range", 16 * kMiB, MountCapability());
  r.mutable_capacity_range()->set_limit_bytes(8 * kMiB);
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::OUT_OF_RANGE);
  r = CreateRequest("pvc-huge", int64_t{1} << 50, MountCapability());
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::OUT_OF_RANGE);
}

TEST_F(ErrorCodesTest, SameNameOtherSizeExists) {
  CreateVolume("pvc-same", 8 * kMiB, MountCapability());
  csi::v1::CreateVolumeResponse out;
  EXPECT_EQ(Call(CreateRequest("pvc-same", 32 * kMiB, MountCapability()), &out).error_code(),
            StatusCode::ALREADY_EXISTS);
}

TEST_F(ErrorCodesTest, CapabilityFsTypeChoosesFs) {
  csi::v1::CreateVolumeResponse out;
  grpc::Status s = Call(CreateRequest("pvc-cap-xfs", 16 * kMiB, MountCapability("xfs")), &out);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(out.volume().volume_context().at("fsType"), "xfs");
  EXPECT_EQ(out.volume().capacity_bytes(), 300 * kMiB);  // xfs minimum
  csi::v1::CreateVolumeRequest r =
      CreateRequest("pvc-cap-conflict", 16 * kMiB, MountCapability("xfs"));
  (*r.mutable_parameters())["fsType"] = "ext4";
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ErrorCodesTest, BlockCannotSeedFilesystem) {
  const std::string block_id = CreateVolume("pvc-raw", 8 * kMiB, BlockCapability());
  csi::v1::CreateVolumeResponse out;
  csi::v1::CreateVolumeRequest r = CreateRequest("pvc-from-raw", 8 * kMiB, MountCapability());
  r.mutable_volume_content_source()->mutable_volume()->set_volume_id(block_id);
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::INVALID_ARGUMENT);
  r = CreateRequest("pvc-from-raw-block", 8 * kMiB, BlockCapability());
  r.mutable_volume_content_source()->mutable_volume()->set_volume_id(block_id);
  EXPECT_TRUE(Call(r, &out).ok());
}

TEST_F(ErrorCodesTest, UnknownContentSourceNotFound) {
  csi::v1::CreateVolumeResponse out;
  csi::v1::CreateVolumeRequest r = CreateRequest("pvc-from-nothing", 8 * kMiB, MountCapability());
  r.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id("snap-missing");
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::NOT_FOUND);
  r.mutable_volume_content_source()->mutable_volume()->set_volume_id("vol-missing");
  EXPECT_EQ(Call(r, &out).error_code(), StatusCode::NOT_FOUND);
}

TEST_F(ErrorCodesTest, UnknownVolumeIsNotFound) {
  const std::string staging = MakeDir("staging");
  EXPECT_EQ(Call(StageRequest("vol-missing", staging, MountCapability())).error_code(),
            StatusCode::NOT_FOUND);
  EXPECT_EQ(
      Call(PublishRequest("vol-missing", staging, PathIn("t"), MountCapability())).error_code(),
      StatusCode::NOT_FOUND);
  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id("vol-missing");
  cp.set_node_id(node_id());
  *cp.mutable_volume_capability() = MountCapability();
  csi::v1::ControllerPublishVolumeResponse cp_out;
  EXPECT_EQ(Call(cp, &cp_out).error_code(), StatusCode::NOT_FOUND);
  csi::v1::ValidateVolumeCapabilitiesRequest v;
  v.set_volume_id("vol-missing");
  *v.add_volume_capabilities() = MountCapability();
  csi::v1::ValidateVolumeCapabilitiesResponse v_out;
  EXPECT_EQ(controller_->ValidateVolumeCapabilities(NewContext().get(), v, &v_out).error_code(),
            StatusCode::NOT_FOUND);
  csi::v1::ControllerGetVolumeRequest g;
  g.set_volume_id("vol-missing");
  csi::v1::ControllerGetVolumeResponse g_out;
  EXPECT_EQ(controller_->ControllerGetVolume(NewContext().get(), g, &g_out).error_code(),
            StatusCode::NOT_FOUND);
  csi::v1::ControllerExpandVolumeRequest e;
  e.set_volume_id("vol-missing");
  e.mutable_capacity_range()->set_required_bytes(kMiB);
  csi::v1::ControllerExpandVolumeResponse e_out;
  EXPECT_EQ(controller_->ControllerExpandVolume(NewContext().get(), e, &e_out).error_code(),
            StatusCode::NOT_FOUND);
  csi::v1::NodeGetVolumeStatsRequest st;
  st.set_volume_id("vol-missing");
  st.set_volume_path(staging);
  csi::v1::NodeGetVolumeStatsResponse st_out;
  EXPECT_EQ(node_->NodeGetVolumeStats(NewContext().get(), st, &st_out).error_code(),
            StatusCode::NOT_FOUND);
  // Deleting what does not exist is success.
  csi::v1::DeleteVolumeRequest d;
  d.set_volume_id("vol-missing");
  EXPECT_TRUE(Call(d).ok());
}

TEST_F(ErrorCodesTest, MissingFieldsInvalid) {
  const std::string id = CreateVolume("pvc-fields", 8 * kMiB, MountCapability());
  const std::string staging = MakeDir("staging");
  EXPECT_EQ(Call(StageRequest("", staging, MountCapability())).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(StageRequest(id, "", MountCapability())).error_code(),
            StatusCode::INVALID_ARGUMENT);
  csi::v1::NodeStageVolumeRequest no_cap = StageRequest(id, staging, MountCapability());
  no_cap.clear_volume_capability();
  EXPECT_EQ(Call(no_cap).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(PublishRequest(id, staging, "", MountCapability())).error_code(),
            StatusCode::INVALID_ARGUMENT);
  csi::v1::NodeUnpublishVolumeRequest up;
  up.set_volume_id(id);
  EXPECT_EQ(Call(up).error_code(), StatusCode::INVALID_ARGUMENT);
  csi::v1::NodeUnstageVolumeRequest us;
  us.set_volume_id(id);
  EXPECT_EQ(Call(us).error_code(), StatusCode::INVALID_ARGUMENT);
  csi::v1::DeleteVolumeRequest d;
  EXPECT_EQ(Call(d).error_code(), StatusCode::INVALID_ARGUMENT);
  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  *cp.mutable_volume_capability() = MountCapability();
  csi::v1::ControllerPublishVolumeResponse cp_out;
  EXPECT_EQ(Call(cp, &cp_out).error_code(), StatusCode::INVALID_ARGUMENT);  // no node id
  csi::v1::ControllerExpandVolumeRequest e;
  e.set_volume_id(id);
  csi::v1::ControllerExpandVolumeResponse e_out;
  EXPECT_EQ(controller_->ControllerExpandVolume(NewContext().get(), e, &e_out).error_code(),
            StatusCode::INVALID_ARGUMENT);  // no capacity range
  csi::v1::NodeGetVolumeStatsRequest st;
  st.set_volume_id(id);
  csi::v1::NodeGetVolumeStatsResponse st_out;
  EXPECT_EQ(node_->NodeGetVolumeStats(NewContext().get(), st, &st_out).error_code(),
            StatusCode::INVALID_ARGUMENT);
}

TEST_F(ErrorCodesTest, BlockAndMountDoNotMix) {
  const std::string block_id = CreateVolume("pvc-b", 8 * kMiB, BlockCapability());
  const std::string fs_id = CreateVolume("pvc-f", 8 * kMiB, MountCapability());
  const std::string staging = MakeDir("staging");
  EXPECT_EQ(Call(StageRequest(block_id, staging, MountCapability())).error_code(),
            StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Call(StageRequest(fs_id, staging, BlockCapability())).error_code(),
            StatusCode::FAILED_PRECONDITION);
  csi::v1::ValidateVolumeCapabilitiesRequest v;
  v.set_volume_id(block_id);
  *v.add_volume_capabilities() = MountCapability();
  csi::v1::ValidateVolumeCapabilitiesResponse v_out;
  ASSERT_TRUE(controller_->ValidateVolumeCapabilities(NewContext().get(), v, &v_out).ok());
  EXPECT_FALSE(v_out.has_confirmed());
  EXPECT_FALSE(v_out.message().empty());
  v.clear_volume_capabilities();
  *v.add_volume_capabilities() = BlockCapability();
  ASSERT_TRUE(controller_->ValidateVolumeCapabilities(NewContext().get(), v, &v_out).ok());
  EXPECT_TRUE(v_out.has_confirmed());
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty()) << "a refused stage must not attach";
}

TEST_F(ErrorCodesTest, StagedElsewhereOrOtherCap) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-conflict", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  VolumeCapability other = cap;
  other.mutable_mount()->add_mount_flags("noatime");
  EXPECT_EQ(Call(StageRequest(id, staging, other)).error_code(), StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(Call(StageRequest(id, MakeDir("staging-b"), cap)).error_code(),
            StatusCode::FAILED_PRECONDITION);

  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/t1"), cap));
  // Same target, different readonly: incompatible.
  csi::v1::NodePublishVolumeRequest ro = PublishRequest(id, staging, PathIn("pods/t1"), cap);
  ro.set_readonly(true);
  EXPECT_EQ(Call(ro).error_code(), StatusCode::ALREADY_EXISTS);
  // Another target may carry another capability (each pod its own): not a conflict.
  EXPECT_TRUE(Call(PublishRequest(id, staging, PathIn("pods/t2"), other)).ok());
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/t2")));
  // Not staged at the given staging path.
  EXPECT_EQ(Call(PublishRequest(id, PathIn("staging-b"), PathIn("pods/t3"), cap)).error_code(),
            StatusCode::FAILED_PRECONDITION);
  // Staging path missing although the node stages.
  EXPECT_EQ(Call(PublishRequest(id, "", PathIn("pods/t4"), cap)).error_code(),
            StatusCode::FAILED_PRECONDITION);
  // Unstage while published, delete while in use.
  csi::v1::NodeUnstageVolumeRequest us;
  us.set_volume_id(id);
  us.set_staging_target_path(staging);
  EXPECT_EQ(Call(us).error_code(), StatusCode::FAILED_PRECONDITION);
  csi::v1::DeleteVolumeRequest d;
  d.set_volume_id(id);
  EXPECT_EQ(Call(d).error_code(), StatusCode::FAILED_PRECONDITION);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/t1")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(ErrorCodesTest, SingleWriterPublishesOnce) {
  const VolumeCapability cap =
      MountCapability("", VolumeCapability::AccessMode::SINGLE_NODE_SINGLE_WRITER);
  const std::string id = CreateVolume("pvc-sn-sw", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/t1"), cap));
  EXPECT_EQ(Call(PublishRequest(id, staging, PathIn("pods/t2"), cap)).error_code(),
            StatusCode::FAILED_PRECONDITION);
  // Nor beside it under another access mode: the single writer's publication is exclusive.
  EXPECT_EQ(Call(PublishRequest(id, staging, PathIn("pods/t3"), MountCapability())).error_code(),
            StatusCode::FAILED_PRECONDITION);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/t1")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

TEST_F(ErrorCodesTest, DeleteWhileAttachedRefused) {
  const std::string id = CreateVolume("pvc-attached", 8 * kMiB, MountCapability());
  ControllerPublish(id, MountCapability());
  csi::v1::DeleteVolumeRequest d;
  d.set_volume_id(id);
  EXPECT_EQ(Call(d).error_code(), StatusCode::FAILED_PRECONDITION);
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
  EXPECT_TRUE(Call(d).ok());
}

TEST_F(ErrorCodesTest, ForbiddenMountFlagInvalid) {
  const std::string id = CreateVolume("pvc-flags", 8 * kMiB, MountCapability());
  VolumeCapability cap = MountCapability();
  cap.mutable_mount()->add_mount_flags("bind");
  EXPECT_EQ(Call(StageRequest(id, MakeDir("staging"), cap)).error_code(),
            StatusCode::INVALID_ARGUMENT);
}

TEST_F(ErrorCodesTest, PublishToUnknownNodeNotFound) {
  const std::string id = CreateVolume("pvc-node", 8 * kMiB, MountCapability());
  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id("node-elsewhere");
  *cp.mutable_volume_capability() = MountCapability();
  csi::v1::ControllerPublishVolumeResponse out;
  EXPECT_EQ(Call(cp, &out).error_code(), StatusCode::NOT_FOUND);
}

TEST_F(ErrorCodesTest, PaginationAndBadTokens) {
  for (int i = 0; i < 5; ++i)
    CreateVolume("pvc-page-" + std::to_string(i), kMiB, MountCapability());
  std::vector<std::string> seen;
  csi::v1::ListVolumesRequest r;
  r.set_max_entries(2);
  for (int page = 0; page < 10; ++page) {
    csi::v1::ListVolumesResponse out;
    grpc::Status s = controller_->ListVolumes(NewContext().get(), r, &out);
    ASSERT_TRUE(s.ok()) << Describe(s);
    EXPECT_LE(out.entries_size(), 2);
    for (const auto& e : out.entries()) seen.push_back(e.volume().volume_id());
    if (out.next_token().empty()) break;
    r.set_starting_token(out.next_token());
  }
  EXPECT_EQ(seen.size(), 5u);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());

  csi::v1::ListVolumesResponse out;
  r.set_starting_token("invalid-token");
  EXPECT_EQ(controller_->ListVolumes(NewContext().get(), r, &out).error_code(),
            StatusCode::ABORTED);
  r.set_starting_token("999999");
  EXPECT_EQ(controller_->ListVolumes(NewContext().get(), r, &out).error_code(),
            StatusCode::ABORTED);
  r.set_starting_token("");
  r.set_max_entries(-1);
  EXPECT_EQ(controller_->ListVolumes(NewContext().get(), r, &out).error_code(),
            StatusCode::INVALID_ARGUMENT);
  csi::v1::ListSnapshotsRequest ls;
  ls.set_starting_token("garbage");
  csi::v1::ListSnapshotsResponse ls_out;
  EXPECT_EQ(controller_->ListSnapshots(NewContext().get(), ls, &ls_out).error_code(),
            StatusCode::ABORTED);
}

TEST_F(ErrorCodesTest, UnimplementedRpcs) {
  csi::v1::ControllerModifyVolumeRequest m;
  m.set_volume_id("x");
  csi::v1::ControllerModifyVolumeResponse m_out;
  EXPECT_EQ(controller_->ControllerModifyVolume(NewContext().get(), m, &m_out).error_code(),
            StatusCode::UNIMPLEMENTED);
  csi::v1::GetSnapshotRequest g;
  g.set_snapshot_id("x");
  csi::v1::GetSnapshotResponse g_out;
  EXPECT_EQ(controller_->GetSnapshot(NewContext().get(), g, &g_out).error_code(),
            StatusCode::UNIMPLEMENTED);
  auto channel =
      grpc::CreateChannel("unix://" + driver_->socket_path(), grpc::InsecureChannelCredentials());
  auto group = csi::v1::GroupController::NewStub(channel);
  csi::v1::GroupControllerGetCapabilitiesResponse gc_out;
  EXPECT_EQ(group
                ->GroupControllerGetCapabilities(
                    NewContext().get(), csi::v1::GroupControllerGetCapabilitiesRequest(), &gc_out)
                .error_code(),
            StatusCode::UNIMPLEMENTED);
}

TEST_F(ErrorCodesTest, StatsOfUnmountedPathAbnormal) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-cond", 8 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_TRUE(Unmount(staging).ok());
  csi::v1::NodeGetVolumeStatsRequest st;
  st.set_volume_id(id);
  st.set_volume_path(staging);
  csi::v1::NodeGetVolumeStatsResponse out;
  ASSERT_TRUE(node_->NodeGetVolumeStats(NewContext().get(), st, &out).ok());
  EXPECT_TRUE(out.volume_condition().abnormal());
  st.set_volume_path(MakeDir("unrelated"));
  EXPECT_EQ(node_->NodeGetVolumeStats(NewContext().get(), st, &out).error_code(),
            StatusCode::NOT_FOUND);
  st.set_volume_path(PathIn("no/such/path"));
  EXPECT_EQ(node_->NodeGetVolumeStats(NewContext().get(), st, &out).error_code(),
            StatusCode::NOT_FOUND);
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
