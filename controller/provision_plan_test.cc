#include "controller/provision_plan.h"

#include <gtest/gtest.h>

#include "tests/support/test_driver_config.h"

namespace flexcsi::controller {
namespace {

using Mode = csi::v1::VolumeCapability::AccessMode;
constexpr const char* kTopologyKey = "topology.loopback.csi.flexcsi.io/node";

nlohmann::json Claim() {
  return {
      {"metadata",
       {{"name", "data"},
        {"namespace", "team-a"},
        {"uid", "1234-abcd"},
        {"annotations", {{kAnnStorageProvisioner, "loopback.csi.flexcsi.io"}}}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}},
        {"storageClassName", "fast"},
        {"resources", {{"requests", {{"storage", "64Mi"}}}, {"limits", {{"storage", "1Gi"}}}}}}},
      {"status", {{"phase", "Pending"}}}};
}

nlohmann::json Class() {
  return {{"metadata", {{"name", "fast"}}},
          {"provisioner", "loopback.csi.flexcsi.io"},
          {"parameters",
           {{"csi.storage.k8s.io/fstype", "xfs"},
            {"tier", "gold"},
            {"csi.storage.k8s.io/node-stage-secret-name", "${pvc.name}-creds"},
            {"csi.storage.k8s.io/node-stage-secret-namespace", "${pvc.namespace}"}}}};
}

TEST(ProvisionPlan, BuildsCreateVolumeLikeExternalProvisioner) {
  const BridgeConfig config = TestBridgeConfig();
  auto plan = PlanProvision({config.drivers[0], Claim(), Class()});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pv_name, "pvc-1234-abcd");
  EXPECT_EQ(plan->request.name(), "pvc-1234-abcd");
  EXPECT_EQ(plan->request.capacity_range().required_bytes(), 64 << 20);
  EXPECT_EQ(plan->request.capacity_range().limit_bytes(), 1 << 30);
  // Provisioner-only keys are stripped; the rest pass through.
  EXPECT_EQ(plan->request.parameters().size(), 1u);
  EXPECT_EQ(plan->request.parameters().at("tier"), "gold");
  ASSERT_EQ(plan->request.volume_capabilities_size(), 1);
  EXPECT_EQ(plan->request.volume_capabilities(0).mount().fs_type(), "xfs");
  EXPECT_EQ(plan->request.volume_capabilities(0).access_mode().mode(), Mode::SINGLE_NODE_WRITER);
  ASSERT_TRUE(plan->node_secret.has_value());
  EXPECT_EQ(plan->node_secret->name, "data-creds");
  EXPECT_EQ(plan->node_secret->namespace_, "team-a");
  EXPECT_EQ(plan->reclaim_policy, "Delete");
  EXPECT_FALSE(plan->request.has_accessibility_requirements());
}

TEST(ProvisionPlan, FsTypeFallsBackToTheRuleDefault) {
  nlohmann::json sc = Class();
  sc["parameters"].erase("csi.storage.k8s.io/fstype");
  auto plan = PlanProvision({TestBridgeConfig().drivers[0], Claim(), sc});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fs_type, "ext4");
}

TEST(ProvisionPlan, SelectedNodeTopologyMustFitAllowedTopologies) {
  nlohmann::json sc = Class();
  sc["volumeBindingMode"] = "WaitForFirstConsumer";
  sc["allowedTopologies"] = {
      {{"matchLabelExpressions", {{{"key", kTopologyKey}, {"values", {"node-1", "node-2"}}}}}}};
  nlohmann::json node = {
      {"metadata", {{"name", "node-2"}, {"labels", {{kTopologyKey, "node-2"}}}}}};
  auto plan = PlanProvision({TestBridgeConfig().drivers[0], Claim(), sc, &node, {kTopologyKey}});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto& req = plan->request.accessibility_requirements();
  ASSERT_EQ(req.requisite_size(), 1);
  EXPECT_EQ(req.requisite(0).segments().at(kTopologyKey), "node-2");
  ASSERT_EQ(req.preferred_size(), 1);

  node["metadata"]["labels"][kTopologyKey] = "node-9";
  auto outside = PlanProvision({TestBridgeConfig().drivers[0], Claim(), sc, &node, {kTopologyKey}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("allowedTopologies"), std::string::npos);

  node["metadata"].erase("labels");
  auto unlabeled =
      PlanProvision({TestBridgeConfig().drivers[0], Claim(), sc, &node, {kTopologyKey}});
  ASSERT_FALSE(unlabeled.ok());
  EXPECT_NE(unlabeled.status().message().find("no topology label"), std::string::npos);
}

TEST(ProvisionPlan, AllowedTopologiesAloneBecomeRequisite) {
  nlohmann::json sc = Class();
  sc["allowedTopologies"] = {
      {{"matchLabelExpressions", {{{"key", kTopologyKey}, {"values", {"a", "b"}}}}}}};
  auto plan = PlanProvision({TestBridgeConfig().drivers[0], Claim(), sc, nullptr, {kTopologyKey}});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->request.accessibility_requirements().requisite_size(), 2);
}

TEST(ProvisionPlan, RefusesWhatAFlexVolumePVCannotBe) {
  const DriverConfig& driver = TestBridgeConfig().drivers[0];
  nlohmann::json sc = Class();
  sc["mountOptions"] = {"noatime"};
  auto r = PlanProvision({driver, Claim(), sc});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mountOptions"), std::string::npos);

  nlohmann::json block = Claim();
  block["spec"]["volumeMode"] = "Block";
  EXPECT_FALSE(PlanProvision({driver, block, Class()}).ok());

  nlohmann::json typo = Class();
  typo["parameters"]["csi.storage.k8s.io/node-stage-secret-nmae"] = "x";
  auto t = PlanProvision({driver, Claim(), typo});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("node-stage-secret-nmae"), std::string::npos);

  nlohmann::json small = Claim();
  small["spec"]["resources"]["limits"]["storage"] = "1Mi";
  EXPECT_FALSE(PlanProvision({driver, small, Class()}).ok());

  nlohmann::json two = Class();
  two["parameters"]["csi.storage.k8s.io/node-publish-secret-name"] = "other";
  two["parameters"]["csi.storage.k8s.io/node-publish-secret-namespace"] = "ops";
  EXPECT_FALSE(PlanProvision({driver, Claim(), two}).ok());
}

TEST(ProvisionPlan, ContentSourceIsPassedOn) {
  const BridgeConfig config = TestBridgeConfig();
  const nlohmann::json claim = Claim(), sc = Class();
  ProvisionInputs inputs{config.drivers[0], claim, sc};
  inputs.source = {ContentSource::kSnapshot, "snap-1"};
  auto plan = PlanProvision(inputs);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->request.volume_content_source().snapshot().snapshot_id(), "snap-1");
}

TEST(ProvisionPlan, WhichClaimsAreOurs) {
  nlohmann::json claim = Claim();
  nlohmann::json sc = Class();
  EXPECT_TRUE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "other"));
  nlohmann::json beta = claim;
  beta["metadata"]["annotations"] = {{kAnnBetaStorageProvisioner, "loopback.csi.flexcsi.io"}};
  EXPECT_TRUE(ClaimNeedsProvisioning(beta, sc, "loopback.csi.flexcsi.io"));
  sc["volumeBindingMode"] = "WaitForFirstConsumer";
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
  // Kubernetes 1.11's scheduler selects the node with the alpha annotation.
  nlohmann::json alpha = claim;
  alpha["metadata"]["annotations"][kAnnAlphaSelectedNode] = "node-1";
  EXPECT_TRUE(ClaimNeedsProvisioning(alpha, sc, "loopback.csi.flexcsi.io"));
  EXPECT_EQ(SelectedNode(alpha), "node-1");
  claim["metadata"]["annotations"][kAnnSelectedNode] = "node-1";
  EXPECT_TRUE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
  claim["spec"]["volumeName"] = "pv";
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
}

TEST(ProvisionPlan, PlacedWaitForFirstConsumerClaimIsTheClasssBeforeThePvControllerWrites) {
  nlohmann::json claim = Claim();
  claim["metadata"].erase("annotations");
  nlohmann::json sc = Class();
  sc["provisioner"] = "loopback.csi.flexcsi.io";
  sc["volumeBindingMode"] = "WaitForFirstConsumer";
  EXPECT_EQ(ProvisionerOfClaim(claim, sc), "");  // not placed yet: nobody's
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
  claim["metadata"]["annotations"][kAnnSelectedNode] = "node-1";
  EXPECT_EQ(ProvisionerOfClaim(claim, sc), "loopback.csi.flexcsi.io");
  EXPECT_TRUE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "other"));
  // The PV controller's annotation, once written, is what counts.
  nlohmann::json annotated = claim;
  annotated["metadata"]["annotations"][kAnnStorageProvisioner] = "other";
  EXPECT_FALSE(ClaimNeedsProvisioning(annotated, sc, "loopback.csi.flexcsi.io"));
  // Another class than the claim's says nothing of it.
  nlohmann::json elsewhere = sc;
  elsewhere["metadata"]["name"] = "slow";
  EXPECT_EQ(ProvisionerOfClaim(claim, elsewhere), "");
  // Immediate: the PV controller may still bind an existing PV, so its annotation is waited for.
  sc["volumeBindingMode"] = "Immediate";
  EXPECT_EQ(ProvisionerOfClaim(claim, sc), "");
  EXPECT_FALSE(ClaimNeedsProvisioning(claim, sc, "loopback.csi.flexcsi.io"));
}

TEST(ProvisionPlan, ImmediateClaimGetsTheRegisteredNodesAsRequisite) {
  RegisteredTopology registered{{kTopologyKey}, {{{kTopologyKey, "n2"}}, {{kTopologyKey, "n1"}}}};
  TopologyOptions topology;
  topology.registered = &registered;
  auto plan = PlanProvision(
      {TestBridgeConfig().drivers[0], Claim(), Class(), nullptr, {kTopologyKey}, {}, topology});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto& req = plan->request.accessibility_requirements();
  ASSERT_EQ(req.requisite_size(), 2);
  EXPECT_EQ(req.requisite(0).segments().at(kTopologyKey), "n1");  // sorted
  EXPECT_EQ(req.requisite(1).segments().at(kTopologyKey), "n2");
  ASSERT_EQ(req.preferred_size(), 2);  // the same segments, rotated by the claim name
  EXPECT_NE(req.preferred(0).segments().at(kTopologyKey),
            req.preferred(1).segments().at(kTopologyKey));
}

TEST(ProvisionPlan, ImmediateClaimFailsWhenTheDriverIsRegisteredNowhere) {
  RegisteredTopology registered{{kTopologyKey}, {}};
  TopologyOptions topology;
  topology.registered = &registered;
  auto plan = PlanProvision(
      {TestBridgeConfig().drivers[0], Claim(), Class(), nullptr, {kTopologyKey}, {}, topology});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("is the driver registered on any node"), std::string::npos)
      << plan.status().message();
  // allowedTopologies still decide on their own.
  nlohmann::json sc = Class();
  sc["allowedTopologies"] = {
      {{"matchLabelExpressions", {{{"key", kTopologyKey}, {"values", {"a"}}}}}}};
  EXPECT_TRUE(
      PlanProvision(
          {TestBridgeConfig().drivers[0], Claim(), sc, nullptr, {kTopologyKey}, {}, topology})
          .ok());
}

TEST(ProvisionPlan, DriverWithoutAccessibilityConstraintsGetsNoTopology) {
  nlohmann::json sc = Class();
  sc["allowedTopologies"] = {
      {{"matchLabelExpressions", {{{"key", kTopologyKey}, {"values", {"a"}}}}}}};
  nlohmann::json node = {{"metadata", {{"name", "bare"}}}};  // unlabelled: would fail
  TopologyOptions topology;
  topology.supported = false;
  auto plan = PlanProvision(
      {TestBridgeConfig().drivers[0], Claim(), sc, &node, {kTopologyKey}, {}, topology});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->request.has_accessibility_requirements());
}

}  // namespace
}  // namespace flexcsi::controller

namespace flexcsi::controller {
namespace {

TEST(ProvisionerName, DefaultsToTheCsiDriverAndCanBeSet) {
  EXPECT_EQ(TestBridgeConfig().drivers[0].provisioner, "loopback.csi.flexcsi.io");
  nlohmann::json j = {{"drivers",
                       {{{"flexDriver", "flexcsi/loopback"},
                         {"csiEndpoint", "unix:///run/csi.sock"},
                         {"provisioner", "example.com/flex-loop"},
                         {"rule",
                          {{"csiDriver", "loopback.csi.flexcsi.io"},
                           {"volumeHandle", {{"fromOption", "volumeID"}}}}}}}}};
  auto config = BridgeConfig::FromJson(j);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->drivers[0].provisioner, "example.com/flex-loop");
  j["drivers"][0]["provisioner"] = 7;
  auto bad = BridgeConfig::FromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("provisioner"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi::controller
