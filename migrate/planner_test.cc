#include "migrate/planner.h"

#include <gtest/gtest.h>

#include <map>

namespace flexcsi::migrate {
namespace {

using nlohmann::json;

json EbsPv(const std::string& name, const std::string& claim_ns, const std::string& claim,
           const std::string& claim_uid, const std::string& phase = "Bound") {
  json pv = {{"apiVersion", "v1"},
             {"kind", "PersistentVolume"},
             {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "7"}}},
             {"spec",
              {{"capacity", {{"storage", "1Gi"}}},
               {"accessModes", {"ReadWriteOnce"}},
               {"persistentVolumeReclaimPolicy", "Delete"},
               {"awsElasticBlockStore", {{"volumeID", "aws://us-east-1a/vol-" + name}, {"fsType", "ext4"}}}}},
             {"status", {{"phase", phase}}}};
  if (!claim.empty()) {
    pv["spec"]["claimRef"] = {{"kind", "PersistentVolumeClaim"}, {"namespace", claim_ns},
                              {"name", claim}, {"uid", claim_uid}, {"resourceVersion", "3"}};
  }
  return pv;
}

json Claim(const std::string& ns, const std::string& name, const std::string& uid,
           const std::string& volume, const std::string& phase = "Bound") {
  return {{"metadata", {{"namespace", ns}, {"name", name}, {"uid", uid}}},
          {"spec", {{"volumeName", volume}}},
          {"status", {{"phase", phase}}}};
}

json Pod(const std::string& ns, const std::string& name, const std::string& claim,
         const std::string& owner_kind, const std::string& owner, const std::string& phase) {
  json pod = {{"metadata", {{"namespace", ns}, {"name", name}}},
              {"spec",
               {{"nodeName", "node-1"},
                {"volumes", {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", claim}}}}}}}},
              {"status", {{"phase", phase}}}};
  if (!owner_kind.empty()) {
    pod["metadata"]["ownerReferences"] = {
        {{"kind", owner_kind}, {"name", owner}, {"controller", true}}};
  }
  return pod;
}

json Named(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

class PlannerTest : public ::testing::Test {
 protected:
  ClusterObjects objects_;
  translator::Translator translator_;

  VolumePlan Find(const Plan& plan, const std::string& pv) {
    for (const auto& v : plan.volumes) {
      if (v.pv_name == pv) return v;
    }
    ADD_FAILURE() << "no plan for " << pv;
    return VolumePlan{};
  }
};

TEST_F(PlannerTest, BoundUnusedPvCanMove) {
  objects_.pvs.push_back(EbsPv("pv-a", "ns", "c", "uid-c"));
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-a"));
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  const Plan plan = BuildPlan(objects_, translator_, {});
  ASSERT_EQ(plan.volumes.size(), 1u);
  const VolumePlan& v = plan.volumes[0];
  EXPECT_EQ(v.verdict, Verdict::kCanMove) << v.reason;
  EXPECT_EQ(v.csi_driver, "ebs.csi.aws.com");
  EXPECT_EQ(v.source, "awsElasticBlockStore");
  EXPECT_EQ(v.plugin, "kubernetes.io/aws-ebs");
  EXPECT_EQ(v.target_pv["spec"]["csi"]["volumeHandle"], "vol-pv-a");
  // Server fields never reach the PV to create.
  EXPECT_FALSE(v.target_pv["metadata"].contains("uid"));
  EXPECT_FALSE(v.target_pv.contains("status"));
  EXPECT_FALSE(v.target_pv["spec"]["claimRef"].contains("resourceVersion"));
  EXPECT_EQ(v.target_pv["spec"]["claimRef"]["uid"], "uid-c");
}

TEST_F(PlannerTest, InUseNamesPodsAndTheirDeployment) {
  objects_.pvs.push_back(EbsPv("pv-a", "ns", "c", "uid-c"));
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-a"));
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  objects_.pods.push_back(Pod("ns", "web-1", "c", "ReplicaSet", "web-rs", "Running"));
  objects_.pods.push_back(Pod("ns", "old", "c", "", "", "Succeeded"));  // does not hold it
  json rs = {{"metadata",
              {{"namespace", "ns"},
               {"name", "web-rs"},
               {"ownerReferences", {{{"kind", "Deployment"}, {"name", "web"}, {"controller", true}}}}}}};
  objects_.replicasets.push_back(rs);
  const VolumePlan v = Find(BuildPlan(objects_, translator_, {}), "pv-a");
  EXPECT_EQ(v.verdict, Verdict::kInUse);
  ASSERT_EQ(v.pods.size(), 1u);
  EXPECT_EQ(v.pods[0].name, "web-1");
  ASSERT_EQ(v.workloads.size(), 1u);
  EXPECT_EQ(v.workloads[0].ToString(), "Deployment/web");
  EXPECT_TRUE(v.workloads[0].scalable());
  EXPECT_NE(v.reason.find("ns/web-1 (Deployment/web)"), std::string::npos) << v.reason;
}

TEST_F(PlannerTest, DaemonSetAndBarePodsAreNotScalable) {
  objects_.pvs.push_back(EbsPv("pv-a", "ns", "c", "uid-c"));
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-a"));
  objects_.pods.push_back(Pod("ns", "ds-x", "c", "DaemonSet", "agent", "Running"));
  objects_.pods.push_back(Pod("ns", "bare", "c", "", "", "Pending"));
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  const VolumePlan v = Find(BuildPlan(objects_, translator_, {}), "pv-a");
  EXPECT_EQ(v.verdict, Verdict::kInUse);
  ASSERT_EQ(v.pods.size(), 2u);
  EXPECT_FALSE(v.pods[0].owner.scalable());
  EXPECT_FALSE(v.pods[1].owner.scalable());
}

// plan lists each workload holding claims once, with its PVs, and for those migrate will not
// scale what the operator must do.
TEST_F(PlannerTest, WorkloadsAreListedWithWhatTheOperatorMustDo) {
  for (const char* c : {"c1", "c2", "c3", "c4"}) {
    objects_.pvs.push_back(EbsPv(std::string("pv-") + c, "ns", c, std::string("uid-") + c));
    objects_.pvcs.push_back(Claim("ns", c, std::string("uid-") + c, std::string("pv-") + c));
  }
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  objects_.pods.push_back(Pod("ns", "web-0", "c1", "StatefulSet", "web", "Running"));
  objects_.pods.push_back(Pod("ns", "web-1", "c2", "StatefulSet", "web", "Running"));
  objects_.pods.push_back(Pod("ns", "agent-x", "c3", "DaemonSet", "agent", "Running"));
  objects_.pods.push_back(Pod("ns", "bare", "c4", "", "", "Running"));
  const Plan plan = BuildPlan(objects_, translator_, {});
  ASSERT_EQ(plan.workloads.size(), 3u);
  std::map<std::string, WorkloadPlan> by_kind;
  for (const auto& w : plan.workloads) by_kind[w.workload.kind] = w;
  EXPECT_EQ(by_kind["StatefulSet"].pvs, (std::vector<std::string>{"pv-c1", "pv-c2"}));
  EXPECT_EQ(by_kind["StatefulSet"].refusal, "");
  EXPECT_NE(by_kind["DaemonSet"].refusal.find("nodeSelector"), std::string::npos)
      << by_kind["DaemonSet"].refusal;
  EXPECT_EQ(by_kind["Pod"].workload.name, "bare");
  EXPECT_NE(by_kind["Pod"].refusal.find("no controller"), std::string::npos);
  EXPECT_NE(InUseRefusal(Find(plan, "pv-c3").pods, true).find("DaemonSet/agent"),
            std::string::npos);
}

// An HPA stands still while its target is at 0 replicas, unless its minReplicas is 0
// (HPAScaleToZero): such a target is refused, any other HPA changes nothing.
TEST_F(PlannerTest, AnHpaThatScalesFromZeroBlocksTheScaleDown) {
  for (const char* c : {"c1", "c2"}) {
    objects_.pvs.push_back(EbsPv(std::string("pv-") + c, "ns", c, std::string("uid-") + c));
    objects_.pvcs.push_back(Claim("ns", c, std::string("uid-") + c, std::string("pv-") + c));
  }
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  objects_.pods.push_back(Pod("ns", "a-0", "c1", "StatefulSet", "a", "Running"));
  objects_.pods.push_back(Pod("ns", "b-0", "c2", "StatefulSet", "b", "Running"));
  auto hpa = [](const std::string& name, const std::string& target, int min) {
    return json{{"metadata", {{"namespace", "ns"}, {"name", name}}},
                {"spec",
                 {{"scaleTargetRef", {{"kind", "StatefulSet"}, {"name", target}}},
                  {"minReplicas", min},
                  {"maxReplicas", 5}}}};
  };
  objects_.hpas.push_back(hpa("a-hpa", "a", 2));
  objects_.hpas.push_back(hpa("b-hpa", "b", 0));
  const Plan plan = BuildPlan(objects_, translator_, {});
  EXPECT_TRUE(Find(plan, "pv-c1").workloads[0].scalable());
  EXPECT_EQ(InUseRefusal(Find(plan, "pv-c1").pods, true), "");
  EXPECT_FALSE(Find(plan, "pv-c2").workloads[0].scalable());
  const std::string refusal = InUseRefusal(Find(plan, "pv-c2").pods, true);
  EXPECT_NE(refusal.find("HorizontalPodAutoscaler b-hpa has minReplicas 0"), std::string::npos)
      << refusal;
}

TEST_F(PlannerTest, FlexWithoutRuleIsUntranslatable) {
  json pv = EbsPv("pv-f", "ns", "c", "uid-c");
  pv["spec"].erase("awsElasticBlockStore");
  pv["spec"]["flexVolume"] = {{"driver", "acme/lvm"}, {"options", {{"volumeID", "v1"}}}};
  objects_.pvs.push_back(pv);
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-f"));
  const VolumePlan v = Find(BuildPlan(objects_, translator_, {}), "pv-f");
  EXPECT_EQ(v.verdict, Verdict::kUntranslatable);
  auto expected = translator_.TranslateInTreePVToCSI(pv);
  ASSERT_FALSE(expected.ok());
  EXPECT_EQ(v.reason, expected.status().message());
  EXPECT_TRUE(v.target_pv.is_null());
}

TEST_F(PlannerTest, FlexWithRuleMovesToRulesDriver) {
  auto rules = translator::ParseFlexVolumeRulesText(
      "flexVolumeRules:\n- flexDriver: acme/lvm\n  csiDriver: lvm.csi.acme.io\n"
      "  volumeHandle: {fromOption: volumeID}\n");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  translator::Translator with_rules(std::move(*rules));
  json pv = EbsPv("pv-f", "ns", "c", "uid-c");
  pv["spec"].erase("awsElasticBlockStore");
  pv["spec"]["flexVolume"] = {{"driver", "acme/lvm"}, {"options", {{"volumeID", "v1"}}}};
  objects_.pvs.push_back(pv);
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-f"));
  json csinode = {{"metadata", {{"name", "node-1"}}},
                  {"spec", {{"drivers", {{{"name", "lvm.csi.acme.io"}, {"nodeID", "n1"}}}}}}};
  objects_.csinodes.push_back(csinode);
  const VolumePlan v = Find(BuildPlan(objects_, with_rules, {}), "pv-f");
  EXPECT_EQ(v.verdict, Verdict::kCanMove) << v.reason;
  EXPECT_EQ(v.csi_driver, "lvm.csi.acme.io");
  EXPECT_EQ(v.target_pv["spec"]["csi"]["volumeHandle"], "v1");
}

// flexcsi-controller's PVs carry external-provisioner's finalizer; the CSI PV does not inherit
// it (csi-provisioner v1.2.2 would never remove it), and keeps every other finalizer.
TEST_F(PlannerTest, TargetLeavesTheProvisionerFinalizerBehind) {
  auto rules = translator::ParseFlexVolumeRulesText(
      "flexVolumeRules:\n- flexDriver: acme/lvm\n  csiDriver: lvm.csi.acme.io\n"
      "  volumeHandle: {fromOption: volumeID}\n");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  translator::Translator with_rules(std::move(*rules));
  for (const json& finalizers :
       {json{"external-provisioner.volume.kubernetes.io/finalizer"},
        json{"kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer",
             "example.com/keep"}}) {
    SCOPED_TRACE(finalizers.dump());
    ClusterObjects objects;
    json pv = EbsPv("pv-f", "ns", "c", "uid-c");
    pv["spec"].erase("awsElasticBlockStore");
    pv["spec"]["flexVolume"] = {{"driver", "acme/lvm"}, {"options", {{"volumeID", "v1"}}}};
    pv["metadata"]["finalizers"] = finalizers;
    objects.pvs.push_back(pv);
    objects.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-f"));
    objects.csidrivers.push_back(Named("lvm.csi.acme.io"));
    const VolumePlan v = Find(BuildPlan(objects, with_rules, {}), "pv-f");
    ASSERT_EQ(v.verdict, Verdict::kCanMove) << v.reason;
    if (finalizers.size() == 1) {
      EXPECT_FALSE(v.target_pv["metadata"].contains("finalizers")) << v.target_pv.dump();
    } else {
      EXPECT_EQ(v.target_pv["metadata"]["finalizers"],
                (json{"kubernetes.io/pv-protection", "example.com/keep"}));
    }
  }
}

TEST_F(PlannerTest, UnboundReasons) {
  objects_.csidrivers.push_back(Named("ebs.csi.aws.com"));
  objects_.pvs.push_back(EbsPv("no-claim", "", "", "", "Available"));
  objects_.pvs.push_back(EbsPv("missing-claim", "ns", "gone", "uid-gone"));
  objects_.pvs.push_back(EbsPv("recreated", "ns", "c", "old-uid"));
  objects_.pvcs.push_back(Claim("ns", "c", "new-uid", "recreated"));
  objects_.pvs.push_back(EbsPv("pending", "ns", "p", "uid-p"));
  objects_.pvcs.push_back(Claim("ns", "p", "uid-p", "pending", "Pending"));
  const Plan plan = BuildPlan(objects_, translator_, {});
  for (const auto& v : plan.volumes) {
    EXPECT_EQ(v.verdict, Verdict::kUnbound) << v.pv_name;
  }
  EXPECT_NE(Find(plan, "no-claim").reason.find("no claim"), std::string::npos);
  EXPECT_NE(Find(plan, "missing-claim").reason.find("does not exist"), std::string::npos);
  EXPECT_NE(Find(plan, "recreated").reason.find("not bound to this PV"), std::string::npos);
  EXPECT_NE(Find(plan, "pending").reason.find("claim Pending"), std::string::npos);
}

TEST_F(PlannerTest, UnregisteredDriverIsReported) {
  objects_.pvs.push_back(EbsPv("pv-a", "ns", "c", "uid-c"));
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-a"));
  const VolumePlan v = Find(BuildPlan(objects_, translator_, {}), "pv-a");
  EXPECT_EQ(v.verdict, Verdict::kDriverNotRegistered);
  EXPECT_NE(v.reason.find("ebs.csi.aws.com"), std::string::npos);
}

// Before 1.17 no CSINode v1 is served: kubelet's (and the bridge's) registration shows only in
// the Node's nodeid annotation, a JSON map of driver -> node id.
TEST_F(PlannerTest, DriverInANodesNodeIdAnnotationIsRegistered) {
  objects_.pvs.push_back(EbsPv("pv-a", "ns", "c", "uid-c"));
  objects_.pvcs.push_back(Claim("ns", "c", "uid-c", "pv-a"));
  auto node = [](const std::string& name, const std::string& ids) {
    return json{{"metadata",
                 {{"name", name}, {"annotations", {{"csi.volume.kubernetes.io/nodeid", ids}}}}}};
  };
  objects_.nodes.push_back(node("n0", "not json"));
  objects_.nodes.push_back(node("n1", R"({"other.csi.example.com":"n1"})"));
  EXPECT_EQ(Find(BuildPlan(objects_, translator_, {}), "pv-a").verdict,
            Verdict::kDriverNotRegistered);
  objects_.nodes.push_back(node("n2", R"({"ebs.csi.aws.com":"i-0abc"})"));
  const VolumePlan v = Find(BuildPlan(objects_, translator_, {}), "pv-a");
  EXPECT_EQ(v.verdict, Verdict::kCanMove) << v.reason;
}

TEST_F(PlannerTest, CsiAndOtherSourcesAreNotListed) {
  json csi = EbsPv("already", "ns", "c", "uid-c");
  csi["spec"].erase("awsElasticBlockStore");
  csi["spec"]["csi"] = {{"driver", "x"}, {"volumeHandle", "h"}};
  json nfs = EbsPv("nfs", "ns", "c", "uid-c");
  nfs["spec"].erase("awsElasticBlockStore");
  nfs["spec"]["nfs"] = {{"server", "s"}, {"path", "/"}};
  objects_.pvs = {csi, nfs};
  EXPECT_TRUE(BuildPlan(objects_, translator_, {}).volumes.empty());
}

TEST_F(PlannerTest, NamespaceFilterKeepsPvsClaimedFromIt) {
  objects_.pvs.push_back(EbsPv("pv-a", "a", "c", "uid-a"));
  objects_.pvs.push_back(EbsPv("pv-b", "b", "c", "uid-b"));
  objects_.pvs.push_back(EbsPv("pv-free", "", "", "", "Available"));
  const Plan plan = BuildPlan(objects_, translator_, PlanOptions{"b"});
  ASSERT_EQ(plan.volumes.size(), 1u);
  EXPECT_EQ(plan.volumes[0].pv_name, "pv-b");
}

TEST_F(PlannerTest, InlineVolumesAreOperatorWork) {
  json dep = {{"metadata", {{"namespace", "ns"}, {"name", "legacy"}}},
              {"spec",
               {{"template",
                 {{"spec",
                   {{"volumes",
                     {{{"name", "disk"}, {"gcePersistentDisk", {{"pdName", "pd-1"}}}},
                      {{"name", "cfg"}, {"configMap", {{"name", "x"}}}},
                      {{"name", "flex"}, {"flexVolume", {{"driver", "acme/lvm"}}}}}}}}}}}}};
  objects_.deployments.push_back(dep);
  // A ReplicaSet owned by the Deployment repeats its template: reported once, through the owner.
  json rs = dep;
  rs["metadata"]["name"] = "legacy-rs";
  rs["metadata"]["ownerReferences"] = {{{"kind", "Deployment"}, {"name", "legacy"}, {"controller", true}}};
  objects_.replicasets.push_back(rs);
  const Plan plan = BuildPlan(objects_, translator_, {});
  ASSERT_EQ(plan.inline_volumes.size(), 2u);
  EXPECT_EQ(plan.inline_volumes[0].kind, "Deployment");
  EXPECT_EQ(plan.inline_volumes[0].volume, "disk");
  EXPECT_EQ(plan.inline_volumes[0].csi_driver, "pd.csi.storage.gke.io");
  EXPECT_EQ(plan.inline_volumes[1].source, "flexVolume");
  EXPECT_TRUE(plan.inline_volumes[1].csi_driver.empty());
  EXPECT_FALSE(plan.inline_volumes[1].note.empty());
}

}  // namespace
}  // namespace flexcsi::migrate
