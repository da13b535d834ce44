#include "controller/flex_pv.h"

#include <gtest/gtest.h>

#include "bridge/volume_mapping.h"
#include "tests/support/test_driver_config.h"

namespace flexcsi::controller {
namespace {

constexpr const char* kTopologyKey = "topology.loopback.csi.flexcsi.io/node";

nlohmann::json Claim() {
  return {{"metadata", {{"name", "data"}, {"namespace", "team-a"}, {"uid", "u-1"},
                        {"resourceVersion", "42"}}},
          {"spec", {{"accessModes", {"ReadWriteOnce"}},
                    {"resources", {{"requests", {{"storage", "64Mi"}}}}}}}};
}

nlohmann::json Class() {
  return {{"metadata", {{"name", "fast"}}}, {"reclaimPolicy", "Retain"},
          {"parameters", {{"csi.storage.k8s.io/provisioner-secret-name", "prov"},
                          {"csi.storage.k8s.io/provisioner-secret-namespace", "ops"},
                          {"csi.storage.k8s.io/node-stage-secret-name", "node"},
                          {"csi.storage.k8s.io/node-stage-secret-namespace", "ops"}}}};
}

csi::v1::Volume Volume() {
  csi::v1::Volume v;
  v.set_volume_id("vol-7");
  v.set_capacity_bytes(int64_t{1} << 30);
  (*v.mutable_volume_context())["backingFile"] = "/var/lib/x/vol-7.img";
  (*v.mutable_volume_context())["fsType"] = "ext4";
  (*v.add_accessible_topology()->mutable_segments())[kTopologyKey] = "node-1";
  return v;
}

TEST(FlexPV, OptionsMapBackToExactlyThisVolume) {
  const BridgeConfig config = TestBridgeConfig();
  const DriverConfig& driver = config.drivers[0];
  auto plan = PlanProvision({driver, Claim(), Class()});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto pv = BuildFlexVolumePV(driver, *plan, Volume(), Claim(), "loopback.csi.flexcsi.io");
  ASSERT_TRUE(pv.ok()) << pv.status().ToString();

  // The bridge, given the options kubelet would pass, finds the same volume and context.
  auto resolved = ResolveFlexVolume(driver, KubeletOptionsJson(*pv));
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->volume.volume_handle, "vol-7");
  const csi::v1::Volume v = Volume();
  EXPECT_EQ(resolved->volume.volume_attributes,
            (std::map<std::string, std::string>(v.volume_context().begin(),
                                                v.volume_context().end())));
  EXPECT_EQ(resolved->volume.fs_type, "ext4");
}

TEST(FlexPV, CarriesBindingReclaimAffinityAndProvenance) {
  const BridgeConfig config = TestBridgeConfig();
  const DriverConfig& driver = config.drivers[0];
  auto plan = PlanProvision({driver, Claim(), Class()});
  ASSERT_TRUE(plan.ok());
  auto pv = BuildFlexVolumePV(driver, *plan, Volume(), Claim(), "my-provisioner");
  ASSERT_TRUE(pv.ok());
  const auto& spec = (*pv)["spec"];
  EXPECT_EQ((*pv)["metadata"]["name"], "pvc-u-1");
  EXPECT_EQ((*pv)["metadata"]["annotations"][kAnnProvisionedBy], "my-provisioner");
  EXPECT_EQ((*pv)["metadata"]["annotations"][kAnnDeletionSecretName], "prov");
  EXPECT_EQ((*pv)["metadata"]["finalizers"][0], kProvisionerFinalizer);
  EXPECT_EQ(spec["claimRef"]["uid"], "u-1");
  EXPECT_EQ(spec["claimRef"]["namespace"], "team-a");
  EXPECT_EQ(spec["persistentVolumeReclaimPolicy"], "Retain");
  EXPECT_EQ(spec["capacity"]["storage"], "1Gi");
  EXPECT_EQ(spec["storageClassName"], "fast");
  EXPECT_EQ(spec["flexVolume"]["driver"], "flexcsi/loopback");
  EXPECT_EQ(spec["flexVolume"]["secretRef"]["name"], "node");
  EXPECT_EQ(spec["flexVolume"]["secretRef"]["namespace"], "ops");
  EXPECT_FALSE(spec.contains("mountOptions"));
  const auto& expr = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(expr["key"], kTopologyKey);
  EXPECT_EQ(expr["values"][0], "node-1");
}

TEST(FlexPV, ZeroCapacityFromDriverMeansTheRequest) {
  const BridgeConfig config = TestBridgeConfig();
  auto plan = PlanProvision({config.drivers[0], Claim(), Class()});
  csi::v1::Volume v = Volume();
  v.set_capacity_bytes(0);
  auto pv = BuildFlexVolumePV(config.drivers[0], *plan, v, Claim(), "p");
  ASSERT_TRUE(pv.ok());
  EXPECT_EQ((*pv)["spec"]["capacity"]["storage"], "64Mi");
}

TEST(FlexPV, ContextTheRuleWouldDropIsRefused) {
  const BridgeConfig config = TestBridgeConfig({{"csiDriver", "loopback.csi.flexcsi.io"},
                                                {"volumeHandle", {{"fromOption", "volumeID"}}},
                                                {"attributes", {{"exclude", {"backingFile"}}}}});
  auto plan = PlanProvision({config.drivers[0], Claim(), Class()});
  ASSERT_TRUE(plan.ok());
  auto pv = BuildFlexVolumePV(config.drivers[0], *plan, Volume(), Claim(), "p");
  ASSERT_FALSE(pv.ok());
  EXPECT_NE(pv.status().message().find("does not survive"), std::string::npos);
}

TEST(FlexPV, TemplateHandlesCannotBeProvisioned) {
  const BridgeConfig config = TestBridgeConfig({{"csiDriver", "loopback.csi.flexcsi.io"},
                                                {"volumeHandle", {{"template", "${pool}/${image}"}}}});
  auto plan = PlanProvision({config.drivers[0], Claim(), Class()});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(BuildFlexVolumePV(config.drivers[0], *plan, Volume(), Claim(), "p").ok());
}

}  // namespace
}  // namespace flexcsi::controller
