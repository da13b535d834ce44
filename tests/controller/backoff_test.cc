// flexcsi-controller's retry discipline against the fake API server: a failing claim is retried
// at external-provisioner's backoff (1 s, 2 s, 4 s, ...), one ProvisioningFailed per try, and
// neither resyncs nor watch updates of the claim cut the backoff short; a change that matters
// (a new selected node) is tried at once. Also the Immediate-binding topology rule: a driver
// with topology keys that no node carries fails the claim instead of making an unusable PV.
#include <thread>

#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Backoff : public WorldTest {
 protected:
  // The count of the (aggregated) ProvisioningFailed event of a claim, 0 when there is none.
  static int FailedCount(const std::string& ns, const std::string& claim) {
    auto list = W().api().List(kube::ResourcePath::Core("events", ns));
    if (!list.ok()) return 0;
    int count = 0;
    for (const auto& e : (*list)["items"]) {
      if (e["involvedObject"].value("name", "") == claim &&
          e.value("reason", "") == "ProvisioningFailed") {
        count += e.value("count", 1);
      }
    }
    return count;
  }

  static void PatchClaim(const std::string& ns, const std::string& name,
                         const nlohmann::json& patch) {
    auto r = W().api().Patch(kube::ResourcePath::Core("persistentvolumeclaims", ns).Named(name),
                             kube::PatchType::kMerge, patch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
};

TEST_F(Backoff, FailingClaimRetriesAtDoublingIntervalsAndANewNodeRetriesAtOnce) {
  W().CreateNamespace("backoff");
  // A node without the driver's topology label: the scheduler picked it, the driver is not there.
  auto node = W().api().Create(
      kube::ResourcePath::Core("nodes"),
      {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "bare-node"}}}});
  ASSERT_TRUE(node.ok() || kube::IsAlreadyExists(node.status())) << node.status().ToString();
  W().CreateStorageClass("backoff", {{"volumeBindingMode", "WaitForFirstConsumer"}});
  auto claim =
      W().api().Create(kube::ResourcePath::Core("persistentvolumeclaims", "backoff"),
                       {{"apiVersion", "v1"},
                        {"kind", "PersistentVolumeClaim"},
                        {"metadata",
                         {{"name", "stuck"},
                          {"namespace", "backoff"},
                          {"annotations", {{"volume.kubernetes.io/selected-node", "bare-node"}}}}},
                        {"spec",
                         {{"accessModes", {"ReadWriteOnce"}},
                          {"storageClassName", "backoff"},
                          {"resources", {{"requests", {{"storage", "16Mi"}}}}}}}});
  ASSERT_TRUE(claim.ok()) << claim.status().ToString();
  // The controller resyncs every second (ControllerWorld's flags): resyncs must not retry early.
  ASSERT_TRUE(W().StartController());

  // When each try's event count first showed, while the claim is updated every 200 ms in ways
  // that do not matter (labels), as other controllers' writes would.
  std::vector<Clock::time_point> tries;
  const auto deadline = Clock::now() + 20s;
  Clock::time_point first{};
  int label = 0;
  while (Clock::now() < deadline) {
    const int count = FailedCount("backoff", "stuck");
    while (static_cast<int>(tries.size()) < count) tries.push_back(Clock::now());
    if (!tries.empty() && first == Clock::time_point{}) first = tries.front();
    if (first != Clock::time_point{} && Clock::now() - first > 8500ms) break;
    if (++label % 4 == 0) {
      PatchClaim("backoff", "stuck",
                 {{"metadata", {{"labels", {{"touch", std::to_string(label)}}}}}});
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(tries.empty()) << ::testing::PrintToString(W().EventsFor("backoff", "stuck"));
  EXPECT_TRUE(W().HasEvent("backoff", "stuck", "ProvisioningFailed", "has no topology label"))
      << ::testing::PrintToString(W().EventsFor("backoff", "stuck"));
  // Tries at about 0, 1, 3 and 7 s: three or four in 8.5 s, never a burst.
  EXPECT_GE(tries.size(), 3u);
  EXPECT_LE(tries.size(), 4u) << "retried faster than the backoff";
  // Each try is seen when this loop next lists the events, which a busy machine delays by a few
  // hundred ms: the gaps allow for that, and still tell 2 s and 4 s from the 1 s resync.
  const std::chrono::milliseconds min_gap[] = {600ms, 1500ms, 3000ms};
  for (size_t i = 1; i < tries.size(); ++i) {
    EXPECT_GE(tries[i] - tries[i - 1], min_gap[i - 1])
        << "try " << i << " came "
        << std::chrono::duration_cast<std::chrono::milliseconds>(tries[i] - tries[i - 1]).count()
        << " ms after the one before";
  }

  // The scheduler picks a node that has the driver: a new attempt at once, not at the next
  // backoff step (about 7 s from now).
  const auto moved = Clock::now();
  PatchClaim("backoff", "stuck",
             {{"metadata",
               {{"annotations", {{"volume.kubernetes.io/selected-node", kubelet::kTestNode}}}}}});
  ASSERT_TRUE(W().WaitBound("backoff", "stuck", 20s));
  EXPECT_LT(Clock::now() - moved, 4s) << "the new selected node waited out the old backoff";
}

TEST_F(Backoff, ImmediateClaimFailsWhileNoNodeHasTheDriversTopologyLabels) {
  W().CreateNamespace("nowhere");
  W().CreateStorageClass("nowhere");
  const auto node_path = kube::ResourcePath::Core("nodes").Named(kubelet::kTestNode);
  auto unlabel = W().api().Patch(node_path, kube::PatchType::kMerge,
                                 {{"metadata", {{"labels", {{kTopologyKey, nullptr}}}}}});
  ASSERT_TRUE(unlabel.ok()) << unlabel.status().ToString();
  ASSERT_TRUE(W().StartController());
  const size_t before = W().DriverVolumes().size();
  W().CreateClaim("nowhere", "orphan", "16Mi", "nowhere");
  const bool failed = W().WaitFor(
      [&] {
        return W().HasEvent("nowhere", "orphan", "ProvisioningFailed",
                            "is the driver registered on any node");
      },
      10s);
  const size_t during = W().DriverVolumes().size();
  // The node registers the driver (the bridge labels it): the claim is provisioned there.
  auto relabel =
      W().api().Patch(node_path, kube::PatchType::kMerge,
                      {{"metadata", {{"labels", {{kTopologyKey, kubelet::kTestNode}}}}}});
  ASSERT_TRUE(relabel.ok()) << relabel.status().ToString();
  EXPECT_TRUE(failed) << ::testing::PrintToString(W().EventsFor("nowhere", "orphan"));
  EXPECT_EQ(during, before) << "a volume was created that no node could use";
  ASSERT_TRUE(W().WaitBound("nowhere", "orphan", 30s));
  const auto pv = W().GetPV(W().GetClaim("nowhere", "orphan")["spec"]["volumeName"]);
  EXPECT_EQ(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
              ["values"][0],
            kubelet::kTestNode);
}

TEST_F(Backoff, ImmediateClaimUsesTheNodesWhereCsiNodeRegistersTheDriver) {
  W().CreateNamespace("csinode");
  W().CreateStorageClass("csinode");
  // Registered on the test node (as the bridge's node registration writes it); another node
  // lists the driver too but lacks the labels, and must not become a requisite segment.
  for (const char* node_name : {kubelet::kTestNode, "bare-node"}) {
    const std::string name = node_name;
    if (name == "bare-node") {
      auto n = W().api().Create(
          kube::ResourcePath::Core("nodes"),
          {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}});
      ASSERT_TRUE(n.ok() || kube::IsAlreadyExists(n.status())) << n.status().ToString();
    }
    auto c = W().api().Create(
        kube::ResourcePath::Group("storage.k8s.io/v1", "csinodes"),
        {{"apiVersion", "storage.k8s.io/v1"},
         {"kind", "CSINode"},
         {"metadata", {{"name", name}}},
         {"spec",
          {{"drivers",
            {{{"name", kProvisioner}, {"nodeID", name}, {"topologyKeys", {kTopologyKey}}}}}}}});
    ASSERT_TRUE(c.ok() || kube::IsAlreadyExists(c.status())) << c.status().ToString();
  }
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("csinode", "placed", "16Mi", "csinode");
  ASSERT_TRUE(W().WaitBound("csinode", "placed", 30s))
      << ::testing::PrintToString(W().EventsFor("csinode", "placed"));
  const auto pv = W().GetPV(W().GetClaim("csinode", "placed")["spec"]["volumeName"]);
  EXPECT_EQ(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
              ["values"][0],
            kubelet::kTestNode);
  EXPECT_FALSE(W().HasEvent("csinode", "placed", "VolumeTopologyMatchesNoNode"));
}

}  // namespace
}  // namespace flexcsi::controller_test
