// --shared-store: csi-loopback imitating network block storage. The fixture's driver is the
// controller and node A; a second csi-loopback with a state dir of its own and the same store is
// node B. A volume is attached to one node at a time, and moves with its data.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;
using grpc::StatusCode;

class SharedStoreTest : public DriverTest {
 protected:
  std::vector<std::string> ExtraFlags() const override {
    return {"--shared-store", PathIn("store")};
  }

  void StartNodeB() {
    node_b_ = std::make_unique<DriverProcess>(PathIn("node-b.sock"), PathIn("state-b"),
                                              PathIn("node-b.log"), ExtraFlags());
    ASSERT_TRUE(node_b_->Start());
    node_b_stub_ = csi::v1::Node::NewStub(grpc::CreateChannel(
        "unix://" + node_b_->socket_path(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    node_b_stub_.reset();
    if (node_b_) {
      node_b_->Stop();
      if (HasFailure()) std::cerr << "---- node B log ----\n" << node_b_->Log();
    }
    DriverTest::TearDown();
  }

  grpc::Status PublishTo(const std::string& node_id, const std::string& volume_id,
                       const VolumeCapability& cap,
                       std::map<std::string, std::string>* context = nullptr) {
    csi::v1::ControllerPublishVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_node_id(node_id);
    *r.mutable_volume_capability() = cap;
    csi::v1::ControllerPublishVolumeResponse out;
    grpc::Status s = Call(r, &out);
    if (context != nullptr) context->insert(out.publish_context().begin(),
                                            out.publish_context().end());
    return s;
  }

  grpc::Status UnpublishFrom(const std::string& node_id, const std::string& volume_id) {
    csi::v1::ControllerUnpublishVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_node_id(node_id);
    return Call(r);
  }

  static std::string StateOf(const std::string& state_dir) {
    std::ifstream f(state_dir + "/state.json");
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  }

  std::unique_ptr<DriverProcess> node_b_;
  std::unique_ptr<csi::v1::Node::Stub> node_b_stub_;
};

TEST_F(SharedStoreTest, VolumesLiveInTheStoreAndCarryNoTopology) {
  csi::v1::CreateVolumeRequest r = CreateRequest("pvc-shared", 8 * kMiB, MountCapability());
  // a requisite naming another node is no reason to refuse: every node reaches the store
  (*r.mutable_accessibility_requirements()->add_requisite()->mutable_segments())
      ["topology.loopback.csi.flexcsi.io/node"] = "somewhere-else";
  csi::v1::CreateVolumeResponse out;
  grpc::Status s = Call(r, &out);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(out.volume().accessible_topology_size(), 0);
  std::ifstream file(PathIn("store/volumes/" + out.volume().volume_id() + ".img"));
  EXPECT_TRUE(file.good());
  csi::v1::NodeGetInfoResponse info;
  ASSERT_TRUE(node_->NodeGetInfo(NewContext().get(), {}, &info).ok());
  EXPECT_FALSE(info.has_accessible_topology());
}

TEST_F(SharedStoreTest, OneNodeAtATimeAndTheDataMovesWithTheVolume) {
  ASSERT_NO_FATAL_FAILURE(StartNodeB());
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-moves", 16 * kMiB, cap);

  std::map<std::string, std::string> context_a;
  ASSERT_TRUE(PublishTo("node-a", id, cap, &context_a).ok());
  grpc::Status second = PublishTo("node-b", id, cap);
  EXPECT_EQ(second.error_code(), StatusCode::FAILED_PRECONDITION) << Describe(second);
  EXPECT_NE(second.error_message().find("node-a"), std::string::npos) << second.error_message();

  const std::string staging_a = MakeDir("a-staging"), target_a = PathIn("a-target");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging_a, cap, context_a));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging_a, target_a, cap));
  WriteFile(target_a + "/data", "written on node A");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target_a));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging_a));
  // still attached to A: B is refused until the controller unpublishes
  EXPECT_EQ(PublishTo("node-b", id, cap).error_code(), StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(UnpublishFrom("node-a", id).ok());

  std::map<std::string, std::string> context_b;
  ASSERT_TRUE(PublishTo("node-b", id, cap, &context_b).ok());
  const std::string staging_b = MakeDir("b-staging"), target_b = MakeDir("b-target");
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(staging_b);
  *stage.mutable_volume_capability() = cap;
  stage.mutable_publish_context()->insert(context_b.begin(), context_b.end());
  csi::v1::NodeStageVolumeResponse staged;
  grpc::Status s = node_b_stub_->NodeStageVolume(NewContext().get(), stage, &staged);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_NE(StateOf(PathIn("state-b")).find(id), std::string::npos);
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_staging_target_path(staging_b);
  publish.set_target_path(target_b);
  *publish.mutable_volume_capability() = cap;
  csi::v1::NodePublishVolumeResponse published;
  s = node_b_stub_->NodePublishVolume(NewContext().get(), publish, &published);
  ASSERT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(ReadFile(target_b + "/data"), "written on node A");

  csi::v1::NodeUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id(id);
  unpublish.set_target_path(target_b);
  csi::v1::NodeUnpublishVolumeResponse unpublished;
  ASSERT_TRUE(node_b_stub_->NodeUnpublishVolume(NewContext().get(), unpublish, &unpublished).ok());
  csi::v1::NodeUnstageVolumeRequest unstage;
  unstage.set_volume_id(id);
  unstage.set_staging_target_path(staging_b);
  csi::v1::NodeUnstageVolumeResponse unstaged;
  ASSERT_TRUE(node_b_stub_->NodeUnstageVolume(NewContext().get(), unstage, &unstaged).ok());
  // B keeps no record of a volume it no longer holds; the controller still knows it
  EXPECT_EQ(StateOf(PathIn("state-b")).find(id), std::string::npos);
  ASSERT_TRUE(UnpublishFrom("node-b", id).ok());
  EXPECT_TRUE(LoopDevicesBelow(test_dir()).empty());
  DeleteVolume(id);
}

TEST_F(SharedStoreTest, AVolumeMissingFromTheStoreIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(StartNodeB());
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id("no-such-volume");
  stage.set_staging_target_path(MakeDir("b-staging"));
  *stage.mutable_volume_capability() = MountCapability();
  csi::v1::NodeStageVolumeResponse out;
  EXPECT_EQ(node_b_stub_->NodeStageVolume(NewContext().get(), stage, &out).error_code(),
            StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
