// The StorageClass planner (storage_class_plan.h) and the leftovers check (leftovers.h) on
// generated objects: what each kind of class becomes, what is kept, what is refused and why.
#include "migrate/storage_class_plan.h"

#include <gtest/gtest.h>

#include "migrate/leftovers.h"
#include "migrate/planner.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi::migrate {
namespace {

using nlohmann::json;

translator::Translator WithRules() {
  auto rules = translator::ParseFlexVolumeRulesText(R"(
flexVolumeRules:
  - flexDriver: acme/lvm
    csiDriver: lvm.csi.acme.io
    volumeHandle: {fromOption: volumeID}
    defaultFsType: ext4
)");
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  return translator::Translator(std::move(*rules));
}

json Class(const std::string& name, const std::string& provisioner, json parameters) {
  json sc = {{"apiVersion", "storage.k8s.io/v1"},
             {"kind", "StorageClass"},
             {"metadata",
              {{"name", name},
               {"uid", "uid-" + name},
               {"resourceVersion", "42"},
               {"creationTimestamp", "2026-11-26T20:00:00Z"},
               {"labels", {{"team", "storage"}}},
               {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}},
             {"provisioner", provisioner},
             {"reclaimPolicy", "Retain"},
             {"volumeBindingMode", "WaitForFirstConsumer"},
             {"allowVolumeExpansion", true},
             {"mountOptions", {"noatime"}}};
  if (!parameters.is_null()) sc["parameters"] = parameters;
  return sc;
}

void ExpectKept(const json& original, const json& twin) {
  for (const char* field :
       {"reclaimPolicy", "volumeBindingMode", "allowVolumeExpansion", "mountOptions"}) {
    EXPECT_EQ(twin.at(field), original.at(field)) << field;
  }
  EXPECT_EQ(twin["metadata"]["labels"], original["metadata"]["labels"]);
  EXPECT_EQ(twin["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
            "true");
  EXPECT_EQ(twin["metadata"]["name"], original["metadata"]["name"]);
  for (const char* server : {"uid", "resourceVersion", "creationTimestamp"}) {
    EXPECT_FALSE(twin["metadata"].contains(server)) << server;
  }
}

TEST(StorageClassPlanTest, InTreeClassGetsTheTranslatorsParametersTopologyAndDriver) {
  translator::Translator translator;
  json sc = Class("gp2", "kubernetes.io/aws-ebs", {{"type", "gp2"}, {"fsType", "xfs"}});
  sc["allowedTopologies"] = json::parse(R"([{"matchLabelExpressions":
      [{"key": "topology.kubernetes.io/zone", "values": ["eu-west-1a"]}]}])");
  auto plan = PlanStorageClass(sc, translator, {});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, "in-tree");
  EXPECT_TRUE(plan->refusal.empty()) << plan->refusal;
  EXPECT_TRUE(plan->is_default);
  EXPECT_EQ(plan->twin["provisioner"], "ebs.csi.aws.com");
  // The translator's own StorageClass rules: fsType becomes the CSI fstype parameter and the
  // zone key the driver's topology key.
  auto expected = translator.TranslateInTreeStorageClassToCSI("kubernetes.io/aws-ebs", sc);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(plan->twin["parameters"], (*expected)["parameters"]);
  EXPECT_EQ(plan->twin["allowedTopologies"], (*expected)["allowedTopologies"]);
  EXPECT_EQ(plan->twin["allowedTopologies"][0]["matchLabelExpressions"][0]["key"],
            "topology.ebs.csi.aws.com/zone");
  EXPECT_EQ(plan->twin["metadata"]["annotations"][kMigratedFromAnnotation],
            "kubernetes.io/aws-ebs");
  ExpectKept(sc, plan->twin);
}

TEST(StorageClassPlanTest, UntranslatableClassesAreRefusedWithTheReason) {
  translator::Translator translator;
  json both = Class("zones", "kubernetes.io/gce-pd", {{"zone", "europe-west1-b"}});
  both["allowedTopologies"] = json::parse(R"([{"matchLabelExpressions":
      [{"key": "topology.kubernetes.io/zone", "values": ["europe-west1-c"]}]}])");
  auto plan = PlanStorageClass(both, translator, {});
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->twin.is_null());
  EXPECT_NE(plan->refusal.find("cannot simultaneously set allowed topologies and zone"),
            std::string::npos)
      << plan->refusal;

  auto gluster = PlanStorageClass(Class("g", "kubernetes.io/glusterfs", nullptr), translator, {});
  ASSERT_TRUE(gluster.has_value());
  EXPECT_NE(gluster->refusal.find("has no CSI translation"), std::string::npos);

  // Served by flexcsi-controller (seen from its PVs), but no rule for the FlexVolume driver.
  auto unruled = PlanStorageClass(Class("f", "flexcsi.io/other", nullptr), translator,
                                  {{"flexcsi.io/other", "other/drv"}});
  ASSERT_TRUE(unruled.has_value());
  EXPECT_NE(unruled->refusal.find("no FlexVolume rule maps that driver"), std::string::npos);
}

TEST(StorageClassPlanTest, FlexVolumeClassKeepsParametersAndMakesTheDefaultFsTypeExplicit) {
  const auto translator = WithRules();
  json sc = Class("lvm", "lvm.csi.acme.io",
                  {{"pool", "fast"}, {"csi.storage.k8s.io/node-stage-secret-name", "s"}});
  auto plan = PlanStorageClass(sc, translator, {});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, "flexvolume");
  EXPECT_EQ(plan->twin["provisioner"], "lvm.csi.acme.io");
  EXPECT_EQ(plan->twin["parameters"],
            json({{"pool", "fast"},
                  {"csi.storage.k8s.io/node-stage-secret-name", "s"},
                  {"csi.storage.k8s.io/fstype", "ext4"}}));
  ExpectKept(sc, plan->twin);

  // A class that names its fstype (either spelling) keeps it as it is.
  json named = Class("lvm-xfs", "lvm.csi.acme.io", {{"fsType", "xfs"}});
  EXPECT_EQ(PlanStorageClass(named, translator, {})->twin["parameters"], named["parameters"]);

  // A provisioner name of its own, known from the PVs flexcsi-controller provisioned for it.
  auto custom = PlanStorageClass(Class("c", "acme.io/lvm-provisioner", nullptr), translator,
                                 {{"acme.io/lvm-provisioner", "acme/lvm"}});
  ASSERT_TRUE(custom.has_value());
  EXPECT_EQ(custom->twin["provisioner"], "lvm.csi.acme.io");

  // Moved already (the marker), a CSI class of another driver, local volumes: nothing to do.
  EXPECT_FALSE(PlanStorageClass(plan->twin, translator, {}).has_value());
  EXPECT_FALSE(PlanStorageClass(Class("x", "other.csi.io", nullptr), translator, {}).has_value());
  EXPECT_FALSE(
      PlanStorageClass(Class("l", "kubernetes.io/no-provisioner", nullptr), translator, {})
          .has_value());
}

TEST(StorageClassPlanTest, FlexVolumeProvisionersComeFromProvisionedByOfFlexVolumePvs) {
  std::vector<json> pvs = {
      {{"metadata", {{"name", "a"}, {"annotations", {{"pv.kubernetes.io/provisioned-by", "p"}}}}},
       {"spec", {{"flexVolume", {{"driver", "acme/lvm"}}}}}},
      {{"metadata", {{"name", "b"}, {"annotations", {{"pv.kubernetes.io/provisioned-by", "q"}}}}},
       {"spec", {{"csi", {{"driver", "q"}}}}}}};
  EXPECT_EQ(FlexVolumeProvisioners(pvs), (std::map<std::string, std::string>{{"p", "acme/lvm"}}));
}

TEST(LeftoversTest, ListsEveryKindWithWhatToDoAndNothingOnceClean) {
  const auto translator = WithRules();
  ClusterObjects objects;
  objects.pvs.push_back(
      {{"metadata", {{"name", "pv-1"}}},
       {"spec", {{"flexVolume", {{"driver", "acme/lvm"}, {"options", {{"volumeID", "v1"}}}}}}},
       {"status", {{"phase", "Available"}}}});
  objects.storageclasses.push_back(Class("lvm", "lvm.csi.acme.io", nullptr));
  objects.pods.push_back(
      {{"metadata", {{"namespace", "ns"}, {"name", "bare"}}},
       {"spec",
        {{"volumes",
          {{{"name", "v"}, {"gcePersistentDisk", {{"pdName", "disk"}}}}}}}}});
  objects.volumeattachments.push_back(
      {{"metadata", {{"name", "csi-123"}}},
       {"spec", {{"nodeName", "n1"}, {"source", {{"persistentVolumeName", "pv-1"}}}}}});
  objects.nodes.push_back(
      {{"metadata", {{"name", "n1"}}},
       {"status",
        {{"volumesInUse", {"acme/lvm/pv-1", "kubernetes.io/csi/x^y"}}}}});
  json ds = {{"metadata", {{"namespace", "flexcsi"}, {"name", "flexcsi-node"}}},
             {"spec",
              {{"template",
                {{"spec",
                  {{"initContainers",
                    {{{"name", "install-driver"},
                      {"command", {"flexcsi"}},
                      {"args", {"install-driver", "--driver", "acme/lvm"}}}}}}}}}}}};
  objects.daemonsets.push_back(ds);
  const Plan plan = BuildPlan(objects, translator, {});
  LeftoverContext with_rules;
  with_rules.rules_given = true;
  const auto found = FindLeftovers(objects, plan, translator, with_rules);
  std::map<std::string, std::string> todo;
  for (const auto& l : found) todo[l.kind + "/" + l.name] = l.todo;
  EXPECT_EQ(todo.size(), 6u) << LeftoversToJson(found).dump(2);
  EXPECT_NE(todo["StorageClass/lvm"].find("flexcsi migrate apply --storage-class lvm"),
            std::string::npos);
  EXPECT_NE(todo["StorageClass/lvm"].find("stop flexcsi-controller"), std::string::npos);
  EXPECT_NE(todo["Pod/bare"].find("pd.csi.storage.gke.io"), std::string::npos);
  EXPECT_EQ(todo.count("PersistentVolume/pv-1"), 1u);
  EXPECT_EQ(todo.count("VolumeAttachment/csi-123"), 1u);
  EXPECT_EQ(todo.count("Node/n1"), 1u);
  EXPECT_NE(todo["DaemonSet/flexcsi-node"].find("uninstall-driver"), std::string::npos);

  ClusterObjects clean;
  clean.storageclasses.push_back(PlanStorageClass(objects.storageclasses[0], translator, {})->twin);
  clean.nodes.push_back({{"metadata", {{"name", "n1"}}},
                         {"status", {{"volumesInUse", {"kubernetes.io/csi/x^y"}}}}});
  EXPECT_TRUE(
      FindLeftovers(clean, BuildPlan(clean, translator, {}), translator, with_rules).empty());
}

}  // namespace
}  // namespace flexcsi::migrate
