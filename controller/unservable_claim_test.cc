// WhyClaimCannotBeServed: which claims of our classes a cluster can never see served, judged from
// the versions' own behaviour (cluster_capabilities.h), and that nothing else is refused.
#include "controller/unservable_claim.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

ClusterCapabilities Cluster(int minor, bool snapshots) {
  ClusterCapabilities c;
  c.version.major = 1;
  c.version.minor = minor;
  c.version.git_version = "v1." + std::to_string(minor) + ".6";
  c.csinodes = minor >= 17;
  c.leases = minor >= 14;
  c.snapshots = snapshots;
  return c;
}

nlohmann::json Class(const std::string& mode) {
  return {{"metadata", {{"name", "fast"}}},
          {"provisioner", "loopback.csi.flexcsi.io"},
          {"volumeBindingMode", mode}};
}

nlohmann::json Claim(nlohmann::json spec = nlohmann::json::object(),
                     nlohmann::json annotations = nlohmann::json::object()) {
  spec["storageClassName"] = "fast";
  spec["accessModes"] = {"ReadWriteOnce"};
  spec["resources"] = {{"requests", {{"storage", "1Gi"}}}};
  return {{"metadata", {{"name", "data"}, {"namespace", "app"}, {"uid", "u1"},
                        {"annotations", annotations}}},
          {"spec", spec},
          {"status", {{"phase", "Pending"}}}};
}

TEST(UnservableClaimTest, WaitForFirstConsumerBeforeOneElevenIsRefusedWithTheWayOut) {
  auto why = WhyClaimCannotBeServed(Claim(), Class("WaitForFirstConsumer"), Cluster(10, false));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("WaitForFirstConsumer cannot be served on Kubernetes v1.10.6"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("volumeBindingMode Immediate"), std::string::npos) << *why;
  // Immediate on 1.10, and WaitForFirstConsumer where the scheduler selects nodes: served.
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(), Class("Immediate"), Cluster(10, false)));
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(), Class("WaitForFirstConsumer"), Cluster(11, false)));
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(), Class("WaitForFirstConsumer"), Cluster(24, true)));
  // A selected node set by hand (or by a 1.11+ scheduler after an upgrade) is served anywhere.
  EXPECT_FALSE(WhyClaimCannotBeServed(
      Claim({}, {{"volume.kubernetes.io/selected-node", "node-1"}}), Class("WaitForFirstConsumer"),
      Cluster(10, false)));
  // An unknown version counts as current: no refusal on a guess.
  ClusterCapabilities unknown;
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(), Class("WaitForFirstConsumer"), unknown));
}

TEST(UnservableClaimTest, SnapshotSourceWithoutTheSnapshotApiIsRefused) {
  nlohmann::json spec = {{"dataSource", {{"apiGroup", "snapshot.storage.k8s.io"},
                                         {"kind", "VolumeSnapshot"},
                                         {"name", "before-upgrade"}}}};
  auto why = WhyClaimCannotBeServed(Claim(spec), Class("Immediate"), Cluster(16, false));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("VolumeSnapshot \"before-upgrade\" needs snapshot.storage.k8s.io/v1"),
            std::string::npos)
      << *why;
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(spec), Class("Immediate"), Cluster(24, true)));
  // A clone from a claim needs no snapshot API.
  nlohmann::json clone = {{"dataSource", {{"kind", "PersistentVolumeClaim"}, {"name", "src"}}}};
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim(clone), Class("Immediate"), Cluster(24, false)));
}

TEST(UnservableClaimTest, DataSourceTheServerDroppedIsRefusedNotProvisionedEmpty) {
  // kubectl apply recorded a clone; the 1.10 API server stored the claim without the field.
  const std::string applied =
      R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},)"
      R"("spec":{"dataSource":{"kind":"PersistentVolumeClaim","name":"src"}}})";
  auto claim = Claim({}, {{kAnnLastApplied, applied}});
  auto why = WhyClaimCannotBeServed(claim, Class("Immediate"), Cluster(10, false));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("spec.dataSource PersistentVolumeClaim \"src\", which the API server "
                      "(Kubernetes v1.10.6) dropped"),
            std::string::npos)
      << *why;
  // The field kept (a server that knows it): served as a clone, not refused.
  auto kept = Claim({{"dataSource", {{"kind", "PersistentVolumeClaim"}, {"name", "src"}}}},
                    {{kAnnLastApplied, applied}});
  EXPECT_FALSE(WhyClaimCannotBeServed(kept, Class("Immediate"), Cluster(24, true)));
  // An applied configuration without a data source, or one that does not parse: nothing asked.
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim({}, {{kAnnLastApplied, R"({"spec":{}})"}}),
                                      Class("Immediate"), Cluster(10, false)));
  EXPECT_FALSE(WhyClaimCannotBeServed(Claim({}, {{kAnnLastApplied, "{not json"}}),
                                      Class("Immediate"), Cluster(10, false)));
}

TEST(UnservableClaimTest, ClaimsNotWaitingForAVolumeAreNeverRefused) {
  auto bound = Claim();
  bound["status"]["phase"] = "Bound";
  bound["spec"]["volumeName"] = "pvc-u1";
  EXPECT_FALSE(WhyClaimCannotBeServed(bound, Class("WaitForFirstConsumer"), Cluster(10, false)));
  auto named = Claim({{"volumeName", "static-pv"}});
  EXPECT_FALSE(WhyClaimCannotBeServed(named, Class("WaitForFirstConsumer"), Cluster(10, false)));
  auto deleting = Claim();
  deleting["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z";
  EXPECT_FALSE(
      WhyClaimCannotBeServed(deleting, Class("WaitForFirstConsumer"), Cluster(10, false)));
}

}  // namespace
}  // namespace flexcsi::controller
