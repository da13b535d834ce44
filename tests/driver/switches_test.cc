// Each switch changes what the driver advertises and how it behaves; the combinations are the
// driver shapes found in the wild (README.md "Driver shapes").
#include <errno.h>
#include <sys/stat.h>

#include <algorithm>

#include "common/command_runner.h"
#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::ControllerServiceCapability;
using csi::v1::NodeServiceCapability;
using csi::v1::PluginCapability;
using csi::v1::VolumeCapability;
using grpc::StatusCode;

class SwitchesTest : public DriverTest {
 protected:
  std::vector<int> ControllerCaps() {
    csi::v1::ControllerGetCapabilitiesResponse out;
    EXPECT_TRUE(controller_
                    ->ControllerGetCapabilities(NewContext().get(),
                                                csi::v1::ControllerGetCapabilitiesRequest(), &out)
                    .ok());
    std::vector<int> caps;
    for (const auto& c : out.capabilities()) caps.push_back(c.rpc().type());
    return caps;
  }
  std::vector<int> NodeCaps() {
    csi::v1::NodeGetCapabilitiesResponse out;
    EXPECT_TRUE(
        node_->NodeGetCapabilities(NewContext().get(), csi::v1::NodeGetCapabilitiesRequest(), &out)
            .ok());
    std::vector<int> caps;
    for (const auto& c : out.capabilities()) caps.push_back(c.rpc().type());
    return caps;
  }
  bool PluginExpands() {
    csi::v1::GetPluginCapabilitiesResponse out;
    EXPECT_TRUE(identity_
                    ->GetPluginCapabilities(NewContext().get(),
                                            csi::v1::GetPluginCapabilitiesRequest(), &out)
                    .ok());
    for (const auto& c : out.capabilities()) {
      if (c.has_volume_expansion() &&
          c.volume_expansion().type() == PluginCapability::VolumeExpansion::ONLINE) {
        return true;
      }
    }
    return false;
  }
  static bool Has(const std::vector<int>& caps, int cap) {
    return std::find(caps.begin(), caps.end(), cap) != caps.end();
  }
};

class DefaultSwitchesTest : public SwitchesTest {};

TEST_F(DefaultSwitchesTest, AdvertisesEverything) {
  EXPECT_TRUE(Has(ControllerCaps(), ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
  EXPECT_TRUE(Has(ControllerCaps(), ControllerServiceCapability::RPC::EXPAND_VOLUME));
  EXPECT_TRUE(Has(ControllerCaps(), ControllerServiceCapability::RPC::CREATE_DELETE_SNAPSHOT));
  EXPECT_TRUE(
      Has(ControllerCaps(), ControllerServiceCapability::RPC::LIST_VOLUMES_PUBLISHED_NODES));
  EXPECT_TRUE(Has(NodeCaps(), NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  EXPECT_TRUE(Has(NodeCaps(), NodeServiceCapability::RPC::EXPAND_VOLUME));
  EXPECT_TRUE(Has(NodeCaps(), NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP));
  EXPECT_TRUE(PluginExpands());
  csi::v1::NodeGetInfoResponse info;
  ASSERT_TRUE(node_->NodeGetInfo(NewContext().get(), csi::v1::NodeGetInfoRequest(), &info).ok());
  EXPECT_EQ(info.node_id(), node_id());
  EXPECT_GT(info.max_volumes_per_node(), 0);
  EXPECT_EQ(info.accessible_topology().segments().at("topology.loopback.csi.flexcsi.io/node"),
            node_id());
  csi::v1::ProbeResponse probe;
  ASSERT_TRUE(identity_->Probe(NewContext().get(), csi::v1::ProbeRequest(), &probe).ok());
  EXPECT_TRUE(probe.ready().value());
}

// A node either stages without mounting or does not stage at all, not both.
TEST_F(DefaultSwitchesTest, ExclusiveShapesRefused) {
  DriverProcess both(PathIn("both.sock"), PathIn("both-state"), PathIn("both.log"),
                     {"--stage-without-mount", "--no-stage-unstage"});
  EXPECT_FALSE(both.Start());
  EXPECT_NE(both.Log().find("exclude each other"), std::string::npos) << both.Log();
}

class NoStageTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-stage-unstage"}; }
};

TEST_F(NoStageTest, LastUnpublishDetaches) {
  EXPECT_FALSE(Has(NodeCaps(), NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  const VolumeCapability cap =
      MountCapability("", VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER);
  const std::string id = CreateVolume("pvc-nostage", 16 * kMiB, cap);
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(MakeDir("staging"));
  *stage.mutable_volume_capability() = cap;
  EXPECT_EQ(Call(stage).error_code(), StatusCode::UNIMPLEMENTED);

  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Publish(id, "", PathIn("pods/a"), cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, "", PathIn("pods/a"), cap));  // repeat
  ASSERT_NO_FATAL_FAILURE(Publish(id, "", PathIn("pods/b"), cap));
  WriteFile(PathIn("pods/a/x"), "shared");
  EXPECT_EQ(ReadFile(PathIn("pods/b/x")), "shared");
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a")));
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);  // still used by pods/b
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/b")));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

class NoAttachTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-attach"}; }
};

TEST_F(NoAttachTest, NodeWorksWithoutPublishContext) {
  EXPECT_FALSE(Has(ControllerCaps(), ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-noattach", 16 * kMiB, cap);
  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id(node_id());
  *cp.mutable_volume_capability() = cap;
  csi::v1::ControllerPublishVolumeResponse out;
  EXPECT_EQ(Call(cp, &out).error_code(), StatusCode::UNIMPLEMENTED);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a"), cap));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

class NoExpandTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-expand"}; }
};

TEST_F(NoExpandTest, NeitherAdvertisedNorServed) {
  EXPECT_FALSE(Has(ControllerCaps(), ControllerServiceCapability::RPC::EXPAND_VOLUME));
  EXPECT_FALSE(Has(NodeCaps(), NodeServiceCapability::RPC::EXPAND_VOLUME));
  EXPECT_FALSE(PluginExpands());
  const std::string id = CreateVolume("pvc-noexpand", 8 * kMiB, MountCapability());
  csi::v1::ControllerExpandVolumeRequest e;
  e.set_volume_id(id);
  e.mutable_capacity_range()->set_required_bytes(16 * kMiB);
  csi::v1::ControllerExpandVolumeResponse e_out;
  EXPECT_EQ(controller_->ControllerExpandVolume(NewContext().get(), e, &e_out).error_code(),
            StatusCode::UNIMPLEMENTED);
  csi::v1::NodeExpandVolumeRequest ne;
  ne.set_volume_id(id);
  ne.set_volume_path(MakeDir("x"));
  csi::v1::NodeExpandVolumeResponse ne_out;
  EXPECT_EQ(node_->NodeExpandVolume(NewContext().get(), ne, &ne_out).error_code(),
            StatusCode::UNIMPLEMENTED);
}

// csi-driver-host-path's shape: NodeStage records (here: attaches and formats too) but mounts
// nothing; NodePublish mounts the device itself at each target.
class NoMountStageTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--stage-without-mount"}; }
};

TEST_F(NoMountStageTest, PublishMountsTheDevice) {
  EXPECT_TRUE(Has(NodeCaps(), NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  EXPECT_TRUE(Has(ControllerCaps(), ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-hostpath-shape", 16 * kMiB, cap);
  const auto context = ControllerPublish(id, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  csi::v1::NodePublishVolumeRequest early;
  early.set_volume_id(id);
  early.set_staging_target_path(staging);
  early.set_target_path(PathIn("pods/a"));
  *early.mutable_volume_capability() = cap;
  EXPECT_EQ(Call(early).error_code(), StatusCode::FAILED_PRECONDITION) << "publish before stage";

  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));  // repeat
  EXPECT_FALSE(IsMountPoint(staging)) << "the staging path must stay unmounted";
  const std::vector<std::string> devices = LoopDevicesBelow(state_dir());
  ASSERT_EQ(devices.size(), 1u) << "stage attaches the device";
  csi::v1::NodeStageVolumeRequest elsewhere;
  elsewhere.set_volume_id(id);
  elsewhere.set_staging_target_path(MakeDir("staging-b"));
  *elsewhere.mutable_volume_capability() = cap;
  EXPECT_EQ(Call(elsewhere).error_code(), StatusCode::FAILED_PRECONDITION);

  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a"), cap));
  StatusOr<MountEntry> mounted = FindByTarget(PathIn("pods/a"));
  ASSERT_TRUE(mounted.ok());
  EXPECT_EQ(mounted->source, devices[0]) << "the target is not a mount of the device";
  EXPECT_EQ(mounted->root, "/");
  WriteFile(PathIn("pods/a/f"), "direct");
  EXPECT_FALSE(IsMountPoint(staging));
  // Stats at the staging path: the device, in a normal condition.
  csi::v1::NodeGetVolumeStatsRequest stats;
  stats.set_volume_id(id);
  stats.set_volume_path(staging);
  csi::v1::NodeGetVolumeStatsResponse stats_out;
  grpc::Status s = node_->NodeGetVolumeStats(NewContext().get(), stats, &stats_out);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_FALSE(stats_out.volume_condition().abnormal()) << stats_out.volume_condition().message();

  csi::v1::NodeUnstageVolumeRequest unstage;
  unstage.set_volume_id(id);
  unstage.set_staging_target_path(staging);
  EXPECT_EQ(Call(unstage).error_code(), StatusCode::FAILED_PRECONDITION) << "still published";
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a")));
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u) << "unstage, not unpublish, detaches";
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));  // repeat
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
  // The data lives on: stage and publish again.
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/b"), cap));
  EXPECT_EQ(ReadFile(PathIn("pods/b/f")), "direct");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/b")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

// A driver killed with publications in place finds them again: repeats are OK and each target
// keeps its own read-only flag, conflicts included.
TEST_F(NoMountStageTest, CrashKeepsPublications) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-crash", 16 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/rw"), cap, false));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/ro"), cap, true));
  ASSERT_NO_FATAL_FAILURE(RestartDriver(/*crash=*/true));
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/rw"), cap, false));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/ro"), cap, true));
  csi::v1::NodePublishVolumeRequest flipped;
  flipped.set_volume_id(id);
  flipped.set_staging_target_path(staging);
  flipped.set_target_path(PathIn("pods/ro"));
  *flipped.mutable_volume_capability() = cap;
  EXPECT_EQ(Call(flipped).error_code(), StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(CreateFileErrno(PathIn("pods/ro")), EROFS);
  EXPECT_EQ(CreateFileErrno(PathIn("pods/rw")), 0);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/rw")));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/ro")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
}

// ControllerPublishVolume(readonly) makes the attachment read-only: every target, whatever its
// own flag, is then a read-only filesystem.
TEST_F(NoMountStageTest, ReadOnlyAttachmentIsReadOnly) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-ro-attach", 16 * kMiB, cap);
  // Format it first through a writable attachment: a read-only one cannot make a filesystem.
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/w"), cap));
  WriteFile(PathIn("pods/w/f"), "before");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/w")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));

  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id(node_id());
  cp.set_readonly(true);
  *cp.mutable_volume_capability() = cap;
  csi::v1::ControllerPublishVolumeResponse cp_out;
  ASSERT_TRUE(Call(cp, &cp_out).ok());
  const std::map<std::string, std::string> context(cp_out.publish_context().begin(),
                                                   cp_out.publish_context().end());
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_staging_target_path(staging);
  publish.set_target_path(PathIn("pods/r"));
  *publish.mutable_volume_capability() = cap;
  publish.mutable_publish_context()->insert(context.begin(), context.end());
  ASSERT_TRUE(Call(publish).ok());
  EXPECT_EQ(ReadFile(PathIn("pods/r/f")), "before");
  EXPECT_EQ(CreateFileErrno(PathIn("pods/r")), EROFS);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/r")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
}

// Growth in this shape, xfs (it grows online with CAP_SYS_ADMIN alone): through a writable
// target even when the path the CO names is a read-only pod's target, mounted first.
TEST_F(NoMountStageTest, GrowsViaWritableTarget) {
  const VolumeCapability cap = MountCapability("xfs");
  const std::string id = CreateVolume("pvc-grow", 300 * kMiB, cap, {{"fsType", "xfs"}});
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/ro"), cap, true));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/rw"), cap, false));
  const int64_t before = FilesystemBytes(PathIn("pods/rw"));
  csi::v1::ControllerExpandVolumeRequest grow;
  grow.set_volume_id(id);
  grow.mutable_capacity_range()->set_required_bytes(400 * kMiB);
  csi::v1::ControllerExpandVolumeResponse grow_out;
  ASSERT_TRUE(controller_->ControllerExpandVolume(NewContext().get(), grow, &grow_out).ok());
  csi::v1::NodeExpandVolumeRequest node_grow;
  node_grow.set_volume_id(id);
  node_grow.set_volume_path(PathIn("pods/ro"));
  node_grow.set_staging_target_path(staging);
  node_grow.mutable_capacity_range()->set_required_bytes(400 * kMiB);
  csi::v1::NodeExpandVolumeResponse node_grow_out;
  grpc::Status s = node_->NodeExpandVolume(NewContext().get(), node_grow, &node_grow_out);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_GT(FilesystemBytes(PathIn("pods/ro")), before + 64 * kMiB);
  EXPECT_EQ(CreateFileErrno(PathIn("pods/ro")), EROFS);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/ro")));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/rw")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

// Staged and published nowhere, the staging path (an empty directory) still names the volume
// for NodeExpandVolume: ext4 grows offline.
TEST_F(NoMountStageTest, GrowsOfflineAtStaging) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-grow-offline", 16 * kMiB, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap));
  csi::v1::ControllerExpandVolumeRequest grow;
  grow.set_volume_id(id);
  grow.mutable_capacity_range()->set_required_bytes(48 * kMiB);
  csi::v1::ControllerExpandVolumeResponse grow_out;
  ASSERT_TRUE(controller_->ControllerExpandVolume(NewContext().get(), grow, &grow_out).ok());
  csi::v1::NodeExpandVolumeRequest node_grow;
  node_grow.set_volume_id(id);
  node_grow.set_volume_path(staging);
  node_grow.mutable_capacity_range()->set_required_bytes(48 * kMiB);
  csi::v1::NodeExpandVolumeResponse node_grow_out;
  grpc::Status s = node_->NodeExpandVolume(NewContext().get(), node_grow, &node_grow_out);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(node_grow_out.capacity_bytes(), 48 * kMiB);
  EXPECT_FALSE(IsMountPoint(staging));
  // Grown now, not at the next mount: the superblock says so.
  const std::vector<std::string> devices = LoopDevicesBelow(state_dir());
  ASSERT_EQ(devices.size(), 1u);
  StatusOr<std::string> super = RunCommand({"dumpe2fs", "-h", devices[0]});
  ASSERT_TRUE(super.ok()) << super.status().ToString();
  auto field = [&](const std::string& name) -> int64_t {
    size_t at = super->find(name + ":");
    return at == std::string::npos ? 0 : std::stoll(super->substr(at + name.size() + 1));
  };
  EXPECT_GT(field("Block count") * field("Block size"), 40 * kMiB) << *super;
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/rw"), cap, false));
  EXPECT_GT(FilesystemBytes(PathIn("pods/rw")), 40 * kMiB);
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/rw")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

// Block in this shape: stage attaches, publish binds the device node.
class NoMountNoAttachTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override {
    return {"--stage-without-mount", "--no-attach"};
  }
};

TEST_F(NoMountNoAttachTest, BlockAndMount) {
  EXPECT_FALSE(Has(ControllerCaps(), ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
  EXPECT_TRUE(Has(NodeCaps(), NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  MakeDir("pods");
  const std::string block = CreateVolume("pvc-b", 8 * kMiB, BlockCapability());
  const std::string staging_b = MakeDir("staging-b");
  ASSERT_NO_FATAL_FAILURE(Stage(block, staging_b, BlockCapability()));
  EXPECT_FALSE(IsMountPoint(staging_b));
  ASSERT_NO_FATAL_FAILURE(Publish(block, staging_b, PathIn("pods/dev"), BlockCapability()));
  struct stat st;
  ASSERT_EQ(::stat(PathIn("pods/dev").c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode)) << "the block target is not the device node";

  const std::string fs = CreateVolume("pvc-f", 16 * kMiB, MountCapability());
  const std::string staging_f = MakeDir("staging-f");
  ASSERT_NO_FATAL_FAILURE(Stage(fs, staging_f, MountCapability()));
  ASSERT_NO_FATAL_FAILURE(Publish(fs, staging_f, PathIn("pods/fs"), MountCapability()));
  EXPECT_FALSE(IsMountPoint(staging_f));
  WriteFile(PathIn("pods/fs/x"), "x");

  ASSERT_NO_FATAL_FAILURE(Unpublish(block, PathIn("pods/dev")));
  ASSERT_NO_FATAL_FAILURE(Unstage(block, staging_b));
  ASSERT_NO_FATAL_FAILURE(Unpublish(fs, PathIn("pods/fs")));
  ASSERT_NO_FATAL_FAILURE(Unstage(fs, staging_f));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
}

class NoStageNoAttachTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override {
    return {"--no-stage-unstage", "--no-attach"};
  }
};

TEST_F(NoStageNoAttachTest, PublishAlone) {
  EXPECT_FALSE(Has(ControllerCaps(), ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME));
  EXPECT_FALSE(Has(NodeCaps(), NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME));
  const std::string id = CreateVolume("pvc-bare", 16 * kMiB, MountCapability());
  MakeDir("pods");
  ASSERT_NO_FATAL_FAILURE(Publish(id, "", PathIn("pods/a"), MountCapability()));
  WriteFile(PathIn("pods/a/x"), "bare");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a")));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(Publish(id, "", PathIn("pods/b"), MountCapability(), true));
  EXPECT_EQ(ReadFile(PathIn("pods/b/x")), "bare");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/b")));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

// A driver without VOLUME_MOUNT_GROUP: kubelet must not send volume_mount_group (it applies
// fsGroup itself); one that arrives anyway is refused before anything is attached or mounted.
class NoMountGroupTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-volume-mount-group"}; }
};

TEST_F(NoMountGroupTest, RefusedWhenSent) {
  EXPECT_FALSE(Has(NodeCaps(), NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP));
  VolumeCapability grouped = MountCapability();
  grouped.mutable_mount()->set_volume_mount_group("2000");
  const std::string id = CreateVolume("pvc-nogroup", 16 * kMiB, MountCapability());
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(staging);
  *stage.mutable_volume_capability() = grouped;
  EXPECT_EQ(Call(stage).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty()) << "a refused stage attached the device";
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, MountCapability()));
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_staging_target_path(staging);
  publish.set_target_path(PathIn("pods/a"));
  *publish.mutable_volume_capability() = grouped;
  grpc::Status s = Call(publish);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("VOLUME_MOUNT_GROUP"), std::string::npos) << Describe(s);
  EXPECT_FALSE(IsMountPoint(PathIn("pods/a")));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/a"), MountCapability()));
  struct stat st;
  ASSERT_EQ(::stat(PathIn("pods/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 0u) << "the root's group changed without a mount group";
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/a")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
}

class ExtraNodeTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--extra-node-id", "node-other"}; }
};

TEST_F(ExtraNodeTest, SecondNodeIsFailedPrecondition) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-two-nodes", 8 * kMiB, cap);
  ControllerPublish(id, cap);
  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id("node-other");
  *cp.mutable_volume_capability() = cap;
  csi::v1::ControllerPublishVolumeResponse out;
  grpc::Status s = Call(cp, &out);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find(node_id()), std::string::npos) << s.error_message();
  // Same node, different readonly flag: incompatible.
  cp.set_node_id(node_id());
  cp.set_readonly(true);
  EXPECT_EQ(Call(cp, &out).error_code(), StatusCode::ALREADY_EXISTS);
  // After unpublishing from the first node the other may have it.
  csi::v1::ControllerUnpublishVolumeRequest cu;
  cu.set_volume_id(id);
  cu.set_node_id(node_id());
  ASSERT_TRUE(Call(cu).ok());
  cp.set_node_id("node-other");
  cp.set_readonly(false);
  EXPECT_TRUE(Call(cp, &out).ok());
  csi::v1::ListVolumesResponse list;
  ASSERT_TRUE(
      controller_->ListVolumes(NewContext().get(), csi::v1::ListVolumesRequest(), &list).ok());
  ASSERT_EQ(list.entries_size(), 1);
  ASSERT_EQ(list.entries(0).status().published_node_ids_size(), 1);
  EXPECT_EQ(list.entries(0).status().published_node_ids(0), "node-other");
}

class TwoEndpointsTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override {
    return {"--endpoint", "unix://" + second_socket()};
  }
  std::string second_socket() const { return PathIn("second.sock"); }
};

// One process serving the CO's controller socket and kubelet's plugin socket shares one state,
// so a volume created through one is staged through the other.
TEST_F(TwoEndpointsTest, BothSocketsServeOneState) {
  auto channel =
      grpc::CreateChannel("unix://" + second_socket(), grpc::InsecureChannelCredentials());
  auto second_controller = csi::v1::Controller::NewStub(channel);
  csi::v1::CreateVolumeResponse created;
  grpc::Status s = second_controller->CreateVolume(
      NewContext().get(), CreateRequest("pvc-two-sockets", 8 * kMiB, MountCapability()), &created);
  ASSERT_TRUE(s.ok()) << Describe(s);
  const std::string staging = MakeDir("staging");
  ASSERT_NO_FATAL_FAILURE(Stage(created.volume().volume_id(), staging, MountCapability()));
  ASSERT_NO_FATAL_FAILURE(Unstage(created.volume().volume_id(), staging));
  second_controller.reset();
  channel.reset();
  driver_->Stop();
  struct stat st;
  EXPECT_NE(::stat(second_socket().c_str(), &st), 0) << "second socket left behind";
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
