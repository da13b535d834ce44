// --shared-store: two csi-loopback processes (node A = the fixture's driver, node B = a second
// one), each with its own node id and state dir, over one shared store, as network block storage
// reached from two nodes. Real loop devices and mounts, in the test's private mount namespace.
#include <algorithm>
#include <set>
#include <thread>

#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;
using Mode = csi::v1::VolumeCapability::AccessMode;

constexpr char kNodeB[] = "node-b";

// The CSI services of one csi-loopback process.
struct Client {
  explicit Client(const std::string& socket_path) {
    auto channel = grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials());
    controller = csi::v1::Controller::NewStub(channel);
    node = csi::v1::Node::NewStub(channel);
  }
  std::unique_ptr<csi::v1::Controller::Stub> controller;
  std::unique_ptr<csi::v1::Node::Stub> node;
};

class SharedStoreTest : public DriverTest {
 protected:
  std::vector<std::string> ExtraFlags() const override {
    return {"--shared-store", test_dir() + "/shared"};
  }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(DriverTest::SetUp());
    node_b_ = std::make_unique<DriverProcess>(PathIn("b.sock"), PathIn("state-b"), PathIn("b.log"),
                                              ExtraFlags(), kNodeB);
    ASSERT_TRUE(node_b_->Start());
    a_ = std::make_unique<Client>(driver_->socket_path());
    b_ = std::make_unique<Client>(node_b_->socket_path());
  }

  void TearDown() override {
    a_.reset();
    b_.reset();
    if (node_b_) {
      node_b_->Stop();
      if (HasFailure()) std::cerr << "---- node B csi-loopback log ----\n" << node_b_->Log();
    }
    DriverTest::TearDown();
  }

  static grpc::Status Publish(Client& via, const std::string& volume_id, const std::string& node,
                              const VolumeCapability& capability,
                              std::map<std::string, std::string>* context = nullptr) {
    csi::v1::ControllerPublishVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_node_id(node);
    *r.mutable_volume_capability() = capability;
    csi::v1::ControllerPublishVolumeResponse out;
    grpc::Status status = via.controller->ControllerPublishVolume(NewContext().get(), r, &out);
    if (context) *context = {out.publish_context().begin(), out.publish_context().end()};
    return status;
  }

  static grpc::Status Unpublish(Client& via, const std::string& volume_id,
                                const std::string& node) {
    csi::v1::ControllerUnpublishVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_node_id(node);
    csi::v1::ControllerUnpublishVolumeResponse out;
    return via.controller->ControllerUnpublishVolume(NewContext().get(), r, &out);
  }

  static grpc::Status Stage(Client& on, const std::string& volume_id, const std::string& path,
                            const VolumeCapability& capability,
                            const std::map<std::string, std::string>& context) {
    csi::v1::NodeStageVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_staging_target_path(path);
    *r.mutable_volume_capability() = capability;
    for (const auto& [key, value] : context) (*r.mutable_publish_context())[key] = value;
    csi::v1::NodeStageVolumeResponse out;
    return on.node->NodeStageVolume(NewContext().get(), r, &out);
  }

  static grpc::Status Unstage(Client& on, const std::string& volume_id, const std::string& path) {
    csi::v1::NodeUnstageVolumeRequest r;
    r.set_volume_id(volume_id);
    r.set_staging_target_path(path);
    csi::v1::NodeUnstageVolumeResponse out;
    return on.node->NodeUnstageVolume(NewContext().get(), r, &out);
  }

  static std::set<std::string> PublishedNodes(Client& via, const std::string& volume_id) {
    csi::v1::ControllerGetVolumeRequest r;
    r.set_volume_id(volume_id);
    csi::v1::ControllerGetVolumeResponse out;
    grpc::Status status = via.controller->ControllerGetVolume(NewContext().get(), r, &out);
    EXPECT_TRUE(status.ok()) << Describe(status);
    return {out.status().published_node_ids().begin(), out.status().published_node_ids().end()};
  }

  std::unique_ptr<DriverProcess> node_b_;
  std::unique_ptr<Client> a_;
  std::unique_ptr<Client> b_;
};

TEST_F(SharedStoreTest, SingleNodeVolumeMovesFromAToBWithItsData) {
  const VolumeCapability cap = MountCapability("ext4", Mode::SINGLE_NODE_WRITER);
  csi::v1::CreateVolumeResponse created;
  ASSERT_TRUE(Call(CreateRequest("pvc-move", 16 * kMiB, cap), &created).ok());
  const std::string id = created.volume().volume_id();
  EXPECT_EQ(created.volume().accessible_topology_size(), 0) << "shared storage has no topology";
  for (Client* client : {a_.get(), b_.get()}) {
    csi::v1::NodeGetInfoResponse info;
    ASSERT_TRUE(client->node->NodeGetInfo(NewContext().get(), {}, &info).ok());
    EXPECT_FALSE(info.has_accessible_topology()) << info.node_id();
  }

  std::map<std::string, std::string> context;
  ASSERT_TRUE(Publish(*a_, id, node_id(), cap, &context).ok());
  ASSERT_TRUE(Publish(*a_, id, node_id(), cap).ok()) << "publishing again is idempotent";
  // Node B's own controller sees the record in the shared store and refuses, as the spec asks
  // for a single-node volume published to another node.
  grpc::Status refused = Publish(*b_, id, kNodeB, cap);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(refused);
  refused = Publish(*a_, id, kNodeB, cap);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(refused);
  EXPECT_EQ(PublishedNodes(*b_, id), std::set<std::string>{node_id()});

  const std::string staging_a = MakeDir("a/staging");
  grpc::Status status = Stage(*a_, id, staging_a, cap, context);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_EQ(LoopDevicesBelow(test_dir() + "/shared").size(), 1u);
  WriteFile(staging_a + "/data", "written on node A");
  ASSERT_TRUE(Unstage(*a_, id, staging_a).ok());
  EXPECT_TRUE(LoopDevicesBelow(test_dir()).empty()) << "node A detached its loop device";
  ASSERT_TRUE(Unpublish(*a_, id, node_id()).ok());
  ASSERT_TRUE(Unpublish(*a_, id, node_id()).ok()) << "unpublishing again is idempotent";
  ASSERT_TRUE(Unpublish(*b_, id, node_id()).ok()) << "and from either process";

  status = Publish(*b_, id, kNodeB, cap, &context);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_EQ(PublishedNodes(*a_, id), std::set<std::string>{kNodeB});
  const std::string staging_b = MakeDir("b/staging");
  status = Stage(*b_, id, staging_b, cap, context);
  ASSERT_TRUE(status.ok()) << Describe(status);
  EXPECT_EQ(ReadFile(staging_b + "/data"), "written on node A");
  ASSERT_TRUE(Unstage(*b_, id, staging_b).ok());
  ASSERT_TRUE(Unpublish(*b_, id, kNodeB).ok());
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(id);
  csi::v1::DeleteVolumeResponse deleted;
  ASSERT_TRUE(b_->controller->DeleteVolume(NewContext().get(), del, &deleted).ok());
  csi::v1::ControllerGetVolumeRequest get;
  get.set_volume_id(id);
  csi::v1::ControllerGetVolumeResponse got;
  EXPECT_EQ(a_->controller->ControllerGetVolume(NewContext().get(), get, &got).error_code(),
            grpc::StatusCode::NOT_FOUND)
      << "node A sees the deletion made through node B";
  EXPECT_TRUE(LoopDevicesBelow(test_dir()).empty());
}

TEST_F(SharedStoreTest, MultiNodeModePublishesToBothNodes) {
  const VolumeCapability multi = MountCapability("ext4", Mode::MULTI_NODE_MULTI_WRITER);
  const std::string id = CreateVolume("pvc-multi", 16 * kMiB, multi);
  ASSERT_TRUE(Publish(*a_, id, node_id(), multi).ok());
  grpc::Status status = Publish(*b_, id, kNodeB, multi);
  ASSERT_TRUE(status.ok()) << Describe(status);
  ASSERT_TRUE(Publish(*b_, id, kNodeB, multi).ok()) << "idempotent";
  EXPECT_EQ(PublishedNodes(*a_, id), (std::set<std::string>{node_id(), kNodeB}));
  // A single-node publication to a third node is refused while others hold it.
  status = Publish(*a_, id, "node-c", MountCapability("ext4", Mode::SINGLE_NODE_WRITER));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(status);
  ASSERT_TRUE(Unpublish(*a_, id, node_id()).ok());
  ASSERT_TRUE(Unpublish(*b_, id, kNodeB).ok());
  EXPECT_TRUE(PublishedNodes(*a_, id).empty());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

TEST_F(SharedStoreTest, ConcurrentWritersLoseNothing) {
  // Both processes create volumes at the same time, then race to publish each one to their own
  // node: the file lock must keep every record, and exactly one node wins each volume.
  const VolumeCapability cap = MountCapability("ext4", Mode::SINGLE_NODE_WRITER);
  constexpr int kPerNode = 8;
  std::vector<std::string> ids_a, ids_b;
  auto create = [&](Client* client, const std::string& prefix, std::vector<std::string>* ids) {
    for (int i = 0; i < kPerNode; ++i) {
      csi::v1::CreateVolumeResponse out;
      grpc::Status s = client->controller->CreateVolume(
          NewContext().get(), CreateRequest(prefix + std::to_string(i), 8 * kMiB, cap), &out);
      EXPECT_TRUE(s.ok()) << Describe(s);
      ids->push_back(out.volume().volume_id());
    }
  };
  std::thread ta(create, a_.get(), "pvc-a-", &ids_a);
  std::thread tb(create, b_.get(), "pvc-b-", &ids_b);
  ta.join();
  tb.join();
  csi::v1::ListVolumesResponse listed;
  ASSERT_TRUE(b_->controller->ListVolumes(NewContext().get(), {}, &listed).ok());
  EXPECT_EQ(listed.entries_size(), 2 * kPerNode);

  std::vector<std::string> all = ids_a;
  all.insert(all.end(), ids_b.begin(), ids_b.end());
  std::vector<grpc::StatusCode> won_a(all.size()), won_b(all.size());
  auto publish = [&](Client* client, const std::string& node, std::vector<grpc::StatusCode>* out) {
    for (size_t i = 0; i < all.size(); ++i)
      (*out)[i] = Publish(*client, all[i], node, cap).error_code();
  };
  std::thread pa(publish, a_.get(), node_id(), &won_a);
  std::thread pb(publish, b_.get(), std::string(kNodeB), &won_b);
  pa.join();
  pb.join();
  for (size_t i = 0; i < all.size(); ++i) {
    const bool a_won = won_a[i] == grpc::StatusCode::OK;
    const bool b_won = won_b[i] == grpc::StatusCode::OK;
    EXPECT_NE(a_won, b_won) << all[i] << ": exactly one node gets a single-node volume";
    EXPECT_EQ(a_won ? won_b[i] : won_a[i], grpc::StatusCode::FAILED_PRECONDITION) << all[i];
    EXPECT_EQ(PublishedNodes(*a_, all[i]).size(), 1u) << all[i];
  }
}

TEST_F(SharedStoreTest, PublicationSurvivesAKilledDriver) {
  const VolumeCapability cap = MountCapability("ext4", Mode::SINGLE_NODE_WRITER);
  const std::string id = CreateVolume("pvc-crash", 16 * kMiB, cap);
  std::map<std::string, std::string> context;
  ASSERT_TRUE(Publish(*a_, id, node_id(), cap, &context).ok());
  const std::string staging = MakeDir("a/staging");
  ASSERT_TRUE(Stage(*a_, id, staging, cap, context).ok());

  // kill -9 node A's driver and start it again: the shared record and A's own staging record
  // are both still there.
  a_.reset();
  ASSERT_NO_FATAL_FAILURE(RestartDriver(/*crash=*/true));
  a_ = std::make_unique<Client>(driver_->socket_path());
  EXPECT_EQ(PublishedNodes(*b_, id), std::set<std::string>{node_id()});
  grpc::Status refused = Publish(*b_, id, kNodeB, cap);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << Describe(refused);
  ASSERT_TRUE(Stage(*a_, id, staging, cap, context).ok()) << "repeat after restart is recognised";
  EXPECT_EQ(LoopDevicesBelow(test_dir()).size(), 1u);

  // Killing node B's driver meanwhile loses nothing either.
  node_b_->Kill();
  b_.reset();
  node_b_ = std::make_unique<DriverProcess>(PathIn("b.sock"), PathIn("state-b"), PathIn("b.log"),
                                            ExtraFlags(), kNodeB);
  ASSERT_TRUE(node_b_->Start());
  b_ = std::make_unique<Client>(node_b_->socket_path());
  EXPECT_EQ(PublishedNodes(*b_, id), std::set<std::string>{node_id()});

  ASSERT_TRUE(Unstage(*a_, id, staging).ok());
  ASSERT_TRUE(Unpublish(*a_, id, node_id()).ok());
  ASSERT_TRUE(Publish(*b_, id, kNodeB, cap).ok());
  ASSERT_TRUE(Unpublish(*b_, id, kNodeB).ok());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
