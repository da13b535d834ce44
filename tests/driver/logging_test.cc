// The driver logs every RPC; secrets the CO passes along must never show up in that log.
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;

class LoggingTest : public DriverTest {};

TEST_F(LoggingTest, NoSecretsInLogAtDebug) {
  const std::string secret = "s3cr3t-value-that-must-not-be-logged";
  const VolumeCapability cap = MountCapability();
  csi::v1::CreateVolumeRequest create = CreateRequest("pvc-secret", 8 * kMiB, cap);
  (*create.mutable_secrets())["password"] = secret;
  csi::v1::CreateVolumeResponse created;
  ASSERT_TRUE(Call(create, &created).ok());
  const std::string id = created.volume().volume_id();

  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id(node_id());
  *cp.mutable_volume_capability() = cap;
  (*cp.mutable_secrets())["password"] = secret;
  csi::v1::ControllerPublishVolumeResponse cp_out;
  ASSERT_TRUE(Call(cp, &cp_out).ok());

  const std::string staging = MakeDir("staging");
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(staging);
  *stage.mutable_volume_capability() = cap;
  (*stage.mutable_secrets())["password"] = secret;
  ASSERT_TRUE(Call(stage).ok());
  MakeDir("pods");
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_staging_target_path(staging);
  publish.set_target_path(PathIn("pods/t"));
  *publish.mutable_volume_capability() = cap;
  (*publish.mutable_secrets())["password"] = secret;
  (*publish.mutable_volume_context())["csi.storage.k8s.io/serviceAccount.tokens"] = secret;
  ASSERT_TRUE(Call(publish).ok());
  // A failing call must not leak them either.
  csi::v1::NodeStageVolumeRequest bad = stage;
  bad.set_volume_id("vol-unknown");
  EXPECT_FALSE(Call(bad).ok());

  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/t")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  const std::string log = driver_->Log();
  EXPECT_NE(log.find("NodeStageVolume"), std::string::npos) << "the driver logged nothing";
  EXPECT_EQ(log.find(secret), std::string::npos) << log;
}

TEST_F(LoggingTest, GetCapacityTopologyAndCaps) {
  csi::v1::GetCapacityRequest r;
  csi::v1::GetCapacityResponse out;
  ASSERT_TRUE(controller_->GetCapacity(NewContext().get(), r, &out).ok());
  EXPECT_GT(out.available_capacity(), 0);
  EXPECT_GT(out.maximum_volume_size().value(), 0);
  (*r.mutable_accessible_topology()->mutable_segments())["topology.loopback.csi.flexcsi.io/node"] =
      "some-other-node";
  ASSERT_TRUE(controller_->GetCapacity(NewContext().get(), r, &out).ok());
  EXPECT_EQ(out.available_capacity(), 0);
  r.clear_accessible_topology();
  *r.add_volume_capabilities() =
      MountCapability("", VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER);
  ASSERT_TRUE(controller_->GetCapacity(NewContext().get(), r, &out).ok());
  EXPECT_EQ(out.available_capacity(), 0);
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
