// The views apply keeps of watched objects keep what the planner and the waits read: a PV planned
// from views equals one planned from the whole objects.
#include "migrate/watched_objects.h"

#include <gtest/gtest.h>

#include "migrate/planner.h"

namespace flexcsi::migrate {
namespace {

using nlohmann::json;

json Pv() {
  return {{"apiVersion", "v1"},
          {"kind", "PersistentVolume"},
          {"metadata", {{"name", "pv-1"}, {"uid", "u-pv"}, {"resourceVersion", "7"}}},
          {"spec",
           {{"capacity", {{"storage", "1Gi"}}},
            {"accessModes", {"ReadWriteOnce"}},
            {"persistentVolumeReclaimPolicy", "Delete"},
            {"awsElasticBlockStore", {{"volumeID", "aws://us-east-1a/vol-1"}, {"fsType", "ext4"}}},
            {"claimRef", {{"namespace", "shop"}, {"name", "data"}, {"uid", "u-claim"}}}}},
          {"status", {{"phase", "Bound"}}}};
}

// A pod as the API server returns it: much more than the planner reads.
json Pod(const std::string& name, const std::string& phase) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "shop"},
            {"uid", "u-" + name},
            {"labels", {{"app", "web"}}},
            {"managedFields", json::array({{{"manager", "kubelet"}}})},
            {"ownerReferences",
             {{{"apiVersion", "apps/v1"},
               {"kind", "ReplicaSet"},
               {"name", "web-5d8"},
               {"controller", true}}}}}},
          {"spec",
           {{"nodeName", "node-1"},
            {"containers", {{{"name", "c"}, {"image", "busybox"}}}},
            {"volumes",
             {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "data"}}}},
              {{"name", "token"}, {"projected", {{"sources", json::array()}}}}}}}},
          {"status", {{"phase", phase}, {"conditions", json::array({{{"type", "Ready"}}})}}}};
}

TEST(WatchedObjectsTest, PlanFromViewsEqualsPlanFromObjects) {
  ClusterObjects whole;
  whole.pvs.push_back(Pv());
  whole.pvcs.push_back({{"metadata", {{"namespace", "shop"}, {"name", "data"}, {"uid", "u-claim"}}},
                        {"spec", {{"volumeName", "pv-1"}}},
                        {"status", {{"phase", "Bound"}}}});
  whole.pods = {Pod("web-1", "Running"), Pod("web-2", "Succeeded")};
  whole.replicasets.push_back(
      {{"metadata",
        {{"name", "web-5d8"},
         {"namespace", "shop"},
         {"ownerReferences", {{{"kind", "Deployment"}, {"name", "web"}, {"controller", true}}}}}},
       {"spec", {{"replicas", 1}}}});
  whole.hpas.push_back({{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                        {"spec",
                         {{"scaleTargetRef", {{"kind", "Deployment"}, {"name", "web"}}},
                          {"minReplicas", 0},
                          {"maxReplicas", 5}}}});
  whole.csinodes.push_back(json::parse(
      R"({"metadata": {"name": "node-1"},
          "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1"}]}})"));

  ClusterObjects views;
  views.pvs = whole.pvs;
  for (const auto& c : whole.pvcs) views.pvcs.push_back(PvOrClaimView(c));
  for (const auto& p : whole.pods) views.pods.push_back(PodView(p));
  for (const auto& r : whole.replicasets) views.replicasets.push_back(ReplicaSetView(r));
  for (const auto& h : whole.hpas) views.hpas.push_back(HpaView(h));
  // What WatchedObjects::NodeDrivers answers from the CSINode views.
  const json csinode = CsiNodeView(whole.csinodes[0]);
  for (const auto& d : csinode["spec"]["drivers"]) {
    views.node_drivers.insert(d["name"].get<std::string>());
  }
  EXPECT_FALSE(views.pods[0]["metadata"].contains("managedFields"));
  EXPECT_EQ(views.pods[0]["spec"]["volumes"].size(), 1u);  // only the claim

  translator::Translator translator;
  const VolumePlan a = PlanVolume(whole.pvs[0], ClusterIndex(whole), translator);
  const VolumePlan b = PlanVolume(views.pvs[0], ClusterIndex(views), translator);
  EXPECT_EQ(a.verdict, Verdict::kInUse);
  EXPECT_EQ(b.verdict, a.verdict);
  EXPECT_EQ(b.reason, a.reason);
  ASSERT_EQ(b.pods.size(), 1u);  // the Succeeded pod does not hold the claim
  EXPECT_EQ(b.pods[0].name, "web-1");
  EXPECT_EQ(b.pods[0].node, "node-1");
  EXPECT_EQ(b.pods[0].owner.kind, "Deployment");                // through the ReplicaSet's owner
  EXPECT_EQ(b.pods[0].owner.blocker, a.pods[0].owner.blocker);  // the HPA with minReplicas 0
  EXPECT_FALSE(b.pods[0].owner.blocker.empty());
  EXPECT_EQ(b.target_pv, a.target_pv);
}

TEST(WatchedObjectsTest, NodeViewKeepsRegistrationsAndEveryVolumeName) {
  const json node = {
      {"metadata",
       {{"name", "node-1"},
        {"annotations",
         {{"csi.volume.kubernetes.io/nodeid", R"({"ebs.csi.aws.com":"i-1"})"}, {"other", "x"}}}}},
      {"status",
       {{"volumesAttached", {{{"name", "kubernetes.io/aws-ebs/vol-1"}, {"devicePath", "/dev/x"}}}},
        {"volumesInUse", {"kubernetes.io/csi/ebs.csi.aws.com^vol-2"}},
        {"images", json::array({{{"names", {"busybox"}}}})}}}};
  const json view = NodeView(node);
  EXPECT_EQ(view["metadata"]["annotations"].size(), 1u);
  EXPECT_EQ(view["metadata"]["annotations"]["csi.volume.kubernetes.io/nodeid"],
            R"({"ebs.csi.aws.com":"i-1"})");
  ASSERT_EQ(view["status"]["volumesAttached"].size(), 2u);
  EXPECT_EQ(view["status"]["volumesAttached"][1]["name"],
            "kubernetes.io/csi/ebs.csi.aws.com^vol-2");
  EXPECT_FALSE(view["status"].contains("images"));
  const json va = VolumeAttachmentView(
      {{"metadata", {{"name", "csi-1"}}},
       {"spec", {{"attacher", "x"}, {"source", {{"persistentVolumeName", "pv-1"}}}}}});
  EXPECT_EQ(va["spec"]["source"]["persistentVolumeName"], "pv-1");
}

TEST(WatchedObjectsTest, ResourceVersionsCompareAsNumbersOrNotAtAll) {
  EXPECT_TRUE(ResourceVersionAtLeast("10", "9"));
  EXPECT_TRUE(ResourceVersionAtLeast("10", "10"));
  EXPECT_FALSE(ResourceVersionAtLeast("9", "10"));
  EXPECT_TRUE(ResourceVersionAtLeast("", ""));
  EXPECT_TRUE(ResourceVersionAtLeast("5", ""));
  EXPECT_FALSE(ResourceVersionAtLeast("", "5"));
  // Not etcd's integers: never taken as newer (the caller reads the server).
  EXPECT_FALSE(ResourceVersionAtLeast("b", "a"));
  EXPECT_FALSE(ResourceVersionAtLeast("12", "1a"));
}

}  // namespace
}  // namespace flexcsi::migrate
