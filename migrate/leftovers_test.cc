// The leftovers check (leftovers.h) on what issue #38 found: which StorageClasses
// flexcsi-controller serves when --rules is not given, a flexcsi-controller still running, and
// FlexVolume PVs provisioned from a class after it moved. (Every kind of leftover, with the
// rules: storage_class_plan_test.cc.)
#include "migrate/leftovers.h"

#include <gtest/gtest.h>

#include <sstream>

#include "migrate/storage_class_plan.h"
#include "tests/support/provisioner_deployment.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi::migrate {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "loopback.csi.flexcsi.io";

json Class(const std::string& name, const std::string& provisioner) {
  return {{"metadata",
           {{"name", name},
            {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}},
          {"provisioner", provisioner},
          {"parameters", {{"csi.storage.k8s.io/fstype", "xfs"}}}};
}

json Moved(json sc) {
  sc["metadata"]["annotations"][kMigratedFromAnnotation] = sc["provisioner"];
  return sc;
}

// A CSI PV the class's provisioner made (external-provisioner's, or one migrate moved).
json CsiPv(const std::string& name) {
  return {{"metadata",
           {{"name", name}, {"annotations", {{"pv.kubernetes.io/provisioned-by", kDriver}}}}},
          {"spec", {{"csi", {{"driver", kDriver}, {"volumeHandle", name}}}}},
          {"status", {{"phase", "Bound"}}}};
}

LeftoverContext ReadFrom(const ClusterObjects& objects) {
  LeftoverContext context;
  context.served.controllers = FindControllerWorkloads(objects);
  for (auto& c : context.served.controllers) {
    EXPECT_TRUE(AddServedDrivers(R"(
drivers:
  - flexDriver: flexcsi/loopback
    provisioner: loopback.csi.flexcsi.io
    rule: {csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}, defaultFsType: ext4}
)",
                                 &c, &context.served)
                    .ok());
  }
  return context;
}

std::string Table(const std::vector<Leftover>& found) {
  std::ostringstream out;
  PrintLeftoversTable(found, out);
  return out.str();
}

// Issue #38: after the PVs moved, nothing in the cluster named the default class's provisioner
// as flexcsi-controller's, and --leftovers without --rules said "Nothing ties the cluster..."
// while the class still gave FlexVolume PVs.
TEST(LeftoversTest, WithoutRulesOrConfigurationAClassThatMayBeFlexcsiControllersIsNotChecked) {
  const translator::Translator no_rules;
  ClusterObjects objects;
  objects.storageclasses = {Class("loop-fast", kDriver), Moved(Class("moved", kDriver)),
                            Class("local", "kubernetes.io/no-provisioner")};
  objects.pvs = {CsiPv("pvc-1")};
  const LeftoverContext nothing_known;
  const auto found =
      FindLeftovers(objects, BuildPlan(objects, no_rules, {}), no_rules, nothing_known);
  ASSERT_EQ(found.size(), 1u) << LeftoversToJson(found).dump(2);
  EXPECT_EQ(found[0].kind, "StorageClass");
  EXPECT_EQ(found[0].name, "loop-fast");
  EXPECT_FALSE(found[0].checked);
  EXPECT_NE(found[0].what.find("not checked"), std::string::npos) << found[0].what;
  EXPECT_NE(found[0].what.find("the default class"), std::string::npos) << found[0].what;
  EXPECT_NE(found[0].todo.find("--rules FILE"), std::string::npos) << found[0].todo;
  const std::string table = Table(found);
  EXPECT_EQ(table.find("Nothing ties"), std::string::npos) << table;
  EXPECT_NE(table.find("1 leftover, of which 1 StorageClass not checked (--rules FILE settles it)"),
            std::string::npos)
      << table;
  EXPECT_EQ(LeftoversToJson(found)["summary"]["notChecked"], 1);
  EXPECT_EQ(LeftoversToJson(found)["items"][0]["checked"], false);

  // The rules settle it: a class of a provisioner no rule names is a CSI class.
  LeftoverContext rules_given;
  rules_given.rules_given = true;
  EXPECT_TRUE(
      FindLeftovers(objects, BuildPlan(objects, no_rules, {}), no_rules, rules_given).empty());
}

TEST(LeftoversTest, TheClustersFlexcsiControllerConfigurationFindsItsClassesWithoutRules) {
  const translator::Translator no_rules;
  ClusterObjects objects;
  objects.storageclasses = {Class("loop-fast", kDriver), Class("other", "ebs.csi.aws.com")};
  objects.pvs = {CsiPv("pvc-1")};
  objects.deployments = {ProvisionerDeployment(2)};
  LeftoverContext context = ReadFrom(objects);
  const auto found = FindLeftovers(objects, BuildPlan(objects, no_rules, {}), no_rules, context);
  std::map<std::string, Leftover> by;
  for (const auto& l : found) by[l.kind + "/" + l.name] = l;
  ASSERT_EQ(by.size(), 2u) << LeftoversToJson(found).dump(2);  // "other": settled as CSI
  const Leftover& cls = by["StorageClass/loop-fast"];
  EXPECT_TRUE(cls.checked);
  EXPECT_NE(cls.what.find("Deployment flexcsi/flexcsi-provisioner serves it"), std::string::npos)
      << cls.what;
  EXPECT_NE(cls.todo.find("flexcsi migrate apply --storage-class loop-fast --rules FILE"),
            std::string::npos)
      << cls.todo;
  EXPECT_NE(cls.todo.find("ConfigMap flexcsi/flexcsi-provisioner-config-7h2k9 key bridge.yaml"),
            std::string::npos)
      << cls.todo;
  EXPECT_NE(cls.todo.find("twin: provisioner " + std::string(kDriver)), std::string::npos);
  const Leftover& running = by["Deployment/flexcsi-provisioner"];
  EXPECT_NE(running.what.find("runs flexcsi-controller (provisioner " + std::string(kDriver) +
                              "), 2 pods"),
            std::string::npos)
      << running.what;
  EXPECT_NE(running.todo.find("stop it"), std::string::npos) << running.todo;

  // Class moved, controller scaled to 0: nothing is left, and the other class stays settled.
  objects.storageclasses[0] = Moved(objects.storageclasses[0]);
  objects.deployments = {ProvisionerDeployment(0)};
  context = ReadFrom(objects);
  const auto after = FindLeftovers(objects, BuildPlan(objects, no_rules, {}), no_rules, context);
  EXPECT_TRUE(after.empty()) << LeftoversToJson(after).dump(2);
  EXPECT_NE(Table(after).find("Nothing ties"), std::string::npos);
}

// Issue #38: a claim provisioned while flexcsi-controller still served a moved class's name
// (both running, or between the hand-over steps) gets a FlexVolume PV; --leftovers names it and
// the command that moves it.
TEST(LeftoversTest, FlexVolumePvOfAMovedClassNamesTheCommandThatMovesIt) {
  auto rules = translator::ParseFlexVolumeRulesText(R"(
flexVolumeRules:
  - {flexDriver: flexcsi/loopback, csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}}
)");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const translator::Translator translator(std::move(*rules));
  ClusterObjects objects;
  objects.storageclasses = {Moved(Class("loop-fast", kDriver))};
  objects.csidrivers = {{{"metadata", {{"name", kDriver}}}}};
  objects.pvs = {
      {{"metadata",
        {{"name", "pvc-late"}, {"annotations", {{"pv.kubernetes.io/provisioned-by", kDriver}}}}},
       {"spec",
        {{"flexVolume", {{"driver", "flexcsi/loopback"}, {"options", {{"volumeID", "pvc-late"}}}}},
         {"storageClassName", "loop-fast"},
         {"claimRef", {{"namespace", "shop"}, {"name", "late"}, {"uid", "u-late"}}}}},
       {"status", {{"phase", "Bound"}}}}};
  objects.pvcs = {{{"metadata", {{"namespace", "shop"}, {"name", "late"}, {"uid", "u-late"}}},
                   {"spec", {{"volumeName", "pvc-late"}, {"storageClassName", "loop-fast"}}},
                   {"status", {{"phase", "Bound"}}}}};
  LeftoverContext rules_given;
  rules_given.rules_given = true;
  const auto found =
      FindLeftovers(objects, BuildPlan(objects, translator, {}), translator, rules_given);
  ASSERT_EQ(found.size(), 1u) << LeftoversToJson(found).dump(2);
  EXPECT_EQ(found[0].kind, "PersistentVolume");
  EXPECT_NE(found[0].what.find("from StorageClass loop-fast after the class moved"),
            std::string::npos)
      << found[0].what;
  EXPECT_EQ(found[0].todo, "flexcsi migrate apply --pv pvc-late");
}

}  // namespace
}  // namespace flexcsi::migrate
