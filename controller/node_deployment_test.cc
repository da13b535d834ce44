#include "controller/node_deployment.h"

#include <gtest/gtest.h>

#include "controller/provision_plan.h"

namespace flexcsi::controller {
namespace {

constexpr const char* kKey = "topology.loopback.csi.flexcsi.io/node";

nlohmann::json Claim(const char* annotation = nullptr, const std::string& node = "") {
  nlohmann::json claim = {{"metadata", {{"name", "data"}, {"namespace", "default"}}}};
  if (annotation != nullptr) claim["metadata"]["annotations"][annotation] = node;
  return claim;
}

nlohmann::json PV(nlohmann::json terms) {
  return {{"metadata", {{"name", "pvc-1"}}},
          {"spec", {{"nodeAffinity", {{"required", {{"nodeSelectorTerms", terms}}}}}}}};
}

nlohmann::json In(const std::string& key, std::vector<std::string> values) {
  return {{"key", key}, {"operator", "In"}, {"values", values}};
}

TEST(OwnerOfClaim, TheSelectedNodeDecides) {
  EXPECT_EQ(OwnerOfClaim(Claim(), "node-a"), ClaimOwner::kNobodyYet);
  EXPECT_EQ(OwnerOfClaim(Claim(kAnnSelectedNode, "node-a"), "node-a"), ClaimOwner::kThisNode);
  EXPECT_EQ(OwnerOfClaim(Claim(kAnnSelectedNode, "node-b"), "node-a"), ClaimOwner::kOtherNode);
  // Kubernetes 1.11 wrote the alpha key.
  EXPECT_EQ(OwnerOfClaim(Claim(kAnnAlphaSelectedNode, "node-a"), "node-a"),
            ClaimOwner::kThisNode);
  EXPECT_EQ(OwnerOfClaim(Claim(kAnnAlphaSelectedNode, "node-b"), "node-a"),
            ClaimOwner::kOtherNode);
  EXPECT_EQ(OwnerOfClaim(Claim(kAnnSelectedNode, ""), "node-a"), ClaimOwner::kNobodyYet);
}

TEST(VolumeIsOnNode, TheNodeAffinityOfOurProvisioningMatchesOnlyItsNode) {
  const TopologySegment a = {{kKey, "node-a"}}, b = {{kKey, "node-b"}};
  const auto pv = PV({{{"matchExpressions", {In(kKey, {"node-a"})}}}});
  EXPECT_TRUE(VolumeIsOnNode(pv, a));
  EXPECT_FALSE(VolumeIsOnNode(pv, b));
}

TEST(VolumeIsOnNode, TermsAreOredAndExpressionsAnded) {
  const TopologySegment a = {{kKey, "node-a"}, {"zone", "z1"}};
  EXPECT_TRUE(VolumeIsOnNode(PV({{{"matchExpressions", {In(kKey, {"node-b"})}}},
                                 {{"matchExpressions", {In(kKey, {"node-a"})}}}}),
                             a));
  EXPECT_FALSE(VolumeIsOnNode(
      PV({{{"matchExpressions", {In(kKey, {"node-a"}), In("zone", {"z2"})}}}}), a));
  EXPECT_TRUE(VolumeIsOnNode(
      PV({{{"matchExpressions", {In(kKey, {"node-a"}), In("zone", {"z1", "z2"})}}}}), a));
}

TEST(VolumeIsOnNode, OtherOperators) {
  const TopologySegment a = {{kKey, "node-a"}};
  auto expr = [](const char* op, std::vector<std::string> values = {}) {
    nlohmann::json e = {{"key", kKey}, {"operator", op}};
    if (!values.empty()) e["values"] = values;
    return PV({{{"matchExpressions", {e}}}});
  };
  EXPECT_TRUE(VolumeIsOnNode(expr("NotIn", {"node-b"}), a));
  EXPECT_FALSE(VolumeIsOnNode(expr("NotIn", {"node-a"}), a));
  EXPECT_TRUE(VolumeIsOnNode(expr("Exists"), a));
  EXPECT_FALSE(VolumeIsOnNode(expr("DoesNotExist"), a));
  EXPECT_FALSE(VolumeIsOnNode(expr("Gt", {"1"}), a));
}

TEST(VolumeIsOnNode, APVWithoutNodeAffinityIsNoNodesToDelete) {
  const TopologySegment a = {{kKey, "node-a"}};
  EXPECT_FALSE(VolumeIsOnNode({{"spec", nlohmann::json::object()}}, a));
  EXPECT_FALSE(VolumeIsOnNode(PV(nlohmann::json::array()), a));
  EXPECT_FALSE(VolumeIsOnNode(PV({{{"matchExpressions", nlohmann::json::array()}}}), a))
      << "an empty term selects nothing";
  EXPECT_FALSE(VolumeIsOnNode(PV({{{"matchExpressions", {In(kKey, {"node-a"})}}}}), {}))
      << "a node without topology owns nothing";
}

TEST(ClassAllowsNode, AllowedTopologiesMustNameTheNode) {
  const TopologySegment a = {{kKey, "node-a"}};
  EXPECT_TRUE(ClassAllowsNode({{"provisioner", "x"}}, a));
  nlohmann::json sc = {{"allowedTopologies",
                        {{{"matchLabelExpressions", {{{"key", kKey}, {"values", {"node-b"}}}}}}}}};
  EXPECT_FALSE(ClassAllowsNode(sc, a));
  sc["allowedTopologies"].push_back(
      {{"matchLabelExpressions", {{{"key", kKey}, {"values", {"node-c", "node-a"}}}}}});
  EXPECT_TRUE(ClassAllowsNode(sc, a));
  const nlohmann::json zone = {
      {"allowedTopologies",
       {{{"matchLabelExpressions", {{{"key", "zone"}, {"values", {"z1"}}}}}}}}};
  EXPECT_FALSE(ClassAllowsNode(zone, a)) << "a key the node's topology lacks";
}

TEST(OwnershipDelay, RandomBelowABaseThatDoublesPerLostRaceUpToTheMax) {
  NodeDeployment config;
  config.base_delay = std::chrono::milliseconds(1000);
  config.max_delay = std::chrono::milliseconds(5000);
  EXPECT_EQ(OwnershipDelay(config, 0, 0.0).count(), 0);
  EXPECT_EQ(OwnershipDelay(config, 0, 0.5).count(), 500);
  EXPECT_EQ(OwnershipDelay(config, 1, 0.5).count(), 1000);
  EXPECT_EQ(OwnershipDelay(config, 2, 1.0).count(), 4000);
  EXPECT_EQ(OwnershipDelay(config, 3, 1.0).count(), 5000);
  EXPECT_EQ(OwnershipDelay(config, 60, 1.0).count(), 5000) << "no overflow";
}

}  // namespace
}  // namespace flexcsi::controller
