// flexcsi-controller against an API server that discovery shows as Kubernetes v1.10.6: /version
// says v1.10.6, and there is no CSINode, no Lease and no snapshot API. What 1.10 can do is served
// (an Immediate claim placed by the nodes' labels, deletion, a ConfigMap lock); what 1.10's own
// components can never finish is refused with one event per object and one log line, however
// many resyncs pass: a WaitForFirstConsumer claim (the 1.10 scheduler asks no provisioner), a
// restore from a VolumeSnapshot, a clone whose dataSource the server dropped, and an expansion
// (kubelet grows FlexVolume file systems from 1.13 on). The real 1.10 cluster runs the same cases
// where it can produce them (tests/cluster/controller_suite_test.py); this stand-in also
// produces the two it cannot by default: a claim keeping its dataSource, and a grown request.
#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;

class OldCluster : public WorldTest {
 public:
  // Hides WorldTest's: this binary's world is an old cluster.
  static void SetUpTestSuite() {
    world_ = new ControllerWorld();
    testing::FakeApiServerOptions options;
    options.version = "v1.10.6";
    options.leases = false;
    options.snapshot_crds = false;
    options.extra_args = {"--without", "storage.k8s.io/v1/csinodes", "--without",
                          "storage.k8s.io/v1/csidrivers", "--without",
                          "storage.k8s.io/v1/volumeattachments"};
    auto started = world_->Start(options);
    if (!started) setup_error_ = new std::string(started.message());
  }

 protected:
  // Events of `reason` on the object: (count of event objects, summed count).
  static std::pair<int, int> Counted(const std::string& ns, const std::string& name,
                                     const std::string& reason) {
    auto list = W().api().List(kube::ResourcePath::Core("events", ns));
    int objects = 0, total = 0;
    if (!list.ok()) return {0, 0};
    for (const auto& e : (*list)["items"]) {
      if (e["involvedObject"].value("name", "") != name || e.value("reason", "") != reason) {
        continue;
      }
      ++objects;
      total += e.value("count", 1);
    }
    return {objects, total};
  }

  static size_t Occurrences(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }
};

TEST_F(OldCluster, ServesImmediateClaimsByNodeLabelsWithAConfigMapLock) {
  W().CreateNamespace("old-imm");
  W().CreateStorageClass("old-imm");
  ControllerFlags flags;
  flags.extra = {"--leader-election", "--leader-election-namespace", "default"};
  ASSERT_TRUE(W().StartController(0, flags));
  const size_t before = W().DriverVolumes().size();
  W().CreateClaim("old-imm", "data", "32Mi", "old-imm");
  ASSERT_TRUE(W().WaitBound("old-imm", "data")) << W().GetClaim("old-imm", "data").dump();
  const std::string log = W().ControllerLog(0);
  EXPECT_NE(log.find("Kubernetes v1.10.6: CSINode (storage.k8s.io/v1) no, Lease "
                     "(coordination.k8s.io/v1) no, snapshot.storage.k8s.io/v1 no"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("leader election: ConfigMap"), std::string::npos) << log;
  // No CSINode: the topology comes from the node's label.
  const std::string pv_name = W().GetClaim("old-imm", "data")["spec"]["volumeName"];
  const auto pv = W().GetPV(pv_name);
  const auto& expr =
      pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(expr["key"], kTopologyKey);
  EXPECT_EQ(expr["values"][0], kubelet::kTestNode);
  EXPECT_EQ(W().DriverVolumes().size(), before + 1);

  auto deleted =
      W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", "old-imm").Named("data"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_TRUE(W().WaitFor([&] { return W().GetPV(pv_name).is_null(); }, 30s));
  EXPECT_EQ(W().DriverVolumes().size(), before);
}

TEST_F(OldCluster, RefusesWhatOneTenCannotFinishOnceWithAnEventAndALogLine) {
  const std::string ns = "old-refused";
  W().CreateNamespace(ns);
  W().CreateStorageClass("old-wffc", {{"volumeBindingMode", "WaitForFirstConsumer"}});
  W().CreateStorageClass("old-any");
  ASSERT_TRUE(W().StartController());
  // Served first, grown below.
  W().CreateClaim(ns, "grow", "32Mi", "old-any");
  ASSERT_TRUE(W().WaitBound(ns, "grow"));
  const size_t before = W().DriverVolumes().size();

  W().CreateClaim(ns, "wffc", "32Mi", "old-wffc");
  W().CreateClaim(ns, "restore", "32Mi", "old-any",
                  {{"dataSource", {{"apiGroup", "snapshot.storage.k8s.io"},
                                   {"kind", "VolumeSnapshot"},
                                   {"name", "before-upgrade"}}}});
  // What a 1.10 API server stores of `kubectl apply` with a dataSource: the annotation keeps it,
  // the spec lost it.
  auto dropped = W().api().Create(
      kube::ResourcePath::Core("persistentvolumeclaims", ns),
      {{"apiVersion", "v1"},
       {"kind", "PersistentVolumeClaim"},
       {"metadata",
        {{"name", "clone"},
         {"namespace", ns},
         {"annotations",
          {{"kubectl.kubernetes.io/last-applied-configuration",
            R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"clone",)"
            R"("namespace":"old-refused"},"spec":{"dataSource":{"kind":"PersistentVolumeClaim",)"
            R"("name":"grow"},"storageClassName":"old-any"}})"}}}}},
       {"spec",
        {{"accessModes", {"ReadWriteOnce"}},
         {"storageClassName", "old-any"},
         {"resources", {{"requests", {{"storage", "32Mi"}}}}}}}});
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  auto grown = W().api().Patch(
      kube::ResourcePath::Core("persistentvolumeclaims", ns).Named("grow"),
      kube::PatchType::kMerge, {{"spec", {{"resources", {{"requests", {{"storage", "64Mi"}}}}}}}});
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();

  struct Case {
    const char* claim;
    const char* reason;
    const char* message;
  };
  const Case cases[] = {
      {"wffc", "ProvisioningFailed",
       "volumeBindingMode WaitForFirstConsumer cannot be served on Kubernetes v1.10.6"},
      {"restore", "ProvisioningFailed",
       "dataSource VolumeSnapshot \"before-upgrade\" needs snapshot.storage.k8s.io/v1, which this "
       "cluster (Kubernetes v1.10.6) does not serve"},
      {"clone", "ProvisioningFailed",
       "spec.dataSource PersistentVolumeClaim \"grow\", which the API server (Kubernetes "
       "v1.10.6) dropped"},
      {"grow", "VolumeResizeFailed",
       "Kubernetes v1.10.6 cannot expand FlexVolume PVs (kubelet grows their file system from "
       "1.13 on)"},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(W().WaitFor([&] { return W().HasEvent(ns, c.claim, c.reason, c.message); }, 30s))
        << c.claim << ": " << ::testing::PrintToString(W().EventsFor(ns, c.claim));
  }
  // Resyncs come every second: five of them add no event, no count, no log line.
  std::string repeated;
  W().WaitFor(
      [&] {
        for (const Case& c : cases) {
          if (Counted(ns, c.claim, c.reason) != std::make_pair(1, 1)) repeated = c.claim;
        }
        return !repeated.empty();
      },
      5s);
  EXPECT_EQ(repeated, "") << ::testing::PrintToString(W().EventsFor(ns, repeated));
  const std::string log = W().ControllerLog(0);
  for (const Case& c : cases) {
    EXPECT_EQ(Occurrences(log, c.message), 2u)  // the event line and the refusal's own line
        << c.claim << "\n" << log;
  }
  // Nothing was created or grown for them.
  EXPECT_EQ(W().DriverVolumes().size(), before);
  for (const char* name : {"wffc", "restore", "clone"}) {
    EXPECT_EQ(W().GetClaim(ns, name)["status"].value("phase", ""), "Pending") << name;
  }
  const auto pv = W().GetPV(W().GetClaim(ns, "grow")["spec"]["volumeName"]);
  const std::string id = pv["spec"]["flexVolume"]["options"].value("volumeID", "");
  EXPECT_LT(W().DriverVolumes().at(id), 64 << 20);
  EXPECT_FALSE(pv["metadata"]["annotations"].contains("flexcsi.io/expanded-bytes"));
}

}  // namespace
}  // namespace flexcsi::controller_test
