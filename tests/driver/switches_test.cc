// Each --no-* switch changes what the driver advertises and how it behaves.
#include <sys/stat.h>

#include <algorithm>

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

TEST_F(DefaultSwitchesTest, AdvertisesEverythingAndNodeInfoCarriesTopology) {
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

class NoStageTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-stage-unstage"}; }
};

TEST_F(NoStageTest, PublishAttachesFormatsAndMountsAndLastUnpublishDetaches) {
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

TEST_F(NoAttachTest, NoControllerPublishAndNodeWorksWithoutPublishContext) {
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

TEST_F(NoExpandTest, ExpansionIsNeitherAdvertisedNorServed) {
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

class ExtraNodeTest : public SwitchesTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--extra-node-id", "node-other"}; }
};

TEST_F(ExtraNodeTest, SingleNodeVolumePublishedToAnotherNodeIsFailedPrecondition) {
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
TEST_F(TwoEndpointsTest, BothSocketsServeTheSameVolumes) {
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
