// `flexcsi migrate apply/rollback --storage-class` against the strict fake API server (which
// validates StorageClasses and refuses updates of provisioner and parameters, as 1.24 does):
// killed with -9 at every journaled step and after every write, resumed, then rolled back the
// same way; an untranslatable class refused untouched; a refused selection that leaves no journal
// behind; a dry run that writes nothing for real.
// The real cluster proves the claims' side (tests/cluster/migrate_suite_test.py, test 0).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "tests/migrate/migrate_test_env.h"

namespace flexcsi::migrate::testing {
namespace {

kube::ResourcePath Classes() {
  return kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses");
}

json EbsClass(const std::string& name) {
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "StorageClass"},
          {"metadata",
           {{"name", name},
            {"labels", {{"tier", "gold"}}},
            {"annotations", {{"storageclass.beta.kubernetes.io/is-default-class", "true"}}}}},
          {"provisioner", "kubernetes.io/aws-ebs"},
          {"parameters", {{"type", "io1"}, {"iopsPerGB", "10"}, {"fsType", "xfs"}}},
          {"reclaimPolicy", "Retain"},
          {"volumeBindingMode", "WaitForFirstConsumer"},
          {"mountOptions", {"noatime", "nodiratime"}},
          {"allowVolumeExpansion", true},
          {"allowedTopologies",
           {{{"matchLabelExpressions",
              {{{"key", "topology.kubernetes.io/zone"}, {"values", {"us-east-1a"}}}}}}}}};
}

// What a swap keeps and rollback restores: everything but the server's fields.
json Kept(json sc) {
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "managedFields"}) {
    sc["metadata"].erase(f);
  }
  return sc;
}

class MigrateStorageClassTest : public MigrateEnvTest {
 protected:
  std::vector<std::string> Args(const std::string& command, std::vector<std::string> extra) {
    std::vector<std::string> args = {command, "--yes", "--journal", journal_};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  json Live(const std::string& name) {
    auto got = env_->Get(Classes().Named(name));
    EXPECT_TRUE(got.ok()) << name << ": " << got.status().ToString();
    return got.ok() ? *got : json();
  }
};

TEST_F(MigrateStorageClassTest, KilledAtEveryStepResumesAndRollsBackExactly) {
  const std::vector<std::string> points = {"sc-deleting", "sc-deleting+", "sc-creating",
                                           "sc-creating+"};
  for (size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(points[i]);
    const std::string name = ns_.substr(0, 30) + "-" + std::to_string(i);
    auto created = env_->client().Create(Classes(), EbsClass(name));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const json original = Kept(*created);

    ToolRun crashed = env_->Run(Args("apply", {"--storage-class", name}),
                                {"FLEXCSI_MIGRATE_CRASH_AFTER=" + points[i]});
    EXPECT_EQ(crashed.signal, SIGKILL) << crashed.out << crashed.err;
    ToolRun resumed = env_->Run(Args("apply", {"--all"}));  // the journal's unfinished class
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    json twin = Live(name);
    EXPECT_EQ(twin["provisioner"], "ebs.csi.aws.com");
    // csi-translation-lib's EBS rules: fsType renamed, iopsPerGB allowed to grow to the minimum
    EXPECT_EQ(twin["parameters"], json({{"type", "io1"},
                                        {"iopsPerGB", "10"},
                                        {"allowautoiopspergbincrease", "true"},
                                        {"csi.storage.k8s.io/fstype", "xfs"}}));
    EXPECT_EQ(twin["allowedTopologies"][0]["matchLabelExpressions"][0]["key"],
              "topology.ebs.csi.aws.com/zone");
    for (const char* kept :
         {"reclaimPolicy", "volumeBindingMode", "mountOptions", "allowVolumeExpansion"}) {
      EXPECT_EQ(twin[kept], original[kept]) << kept;
    }
    EXPECT_EQ(twin["metadata"]["labels"], original["metadata"]["labels"]);
    EXPECT_EQ(twin["metadata"]["annotations"]["storageclass.beta.kubernetes.io/is-default-class"],
              "true");

    ToolRun back = env_->Run(Args("rollback", {"--storage-class", name}),
                             {"FLEXCSI_MIGRATE_CRASH_AFTER=rb-" + points[i]});
    EXPECT_EQ(back.signal, SIGKILL) << back.out << back.err;
    ToolRun finished = env_->Run(Args("rollback", {"--storage-class", name}));
    ASSERT_EQ(finished.exit_code, 0) << finished.out << finished.err;
    EXPECT_EQ(Kept(Live(name)), original);
  }
  ToolRun status = env_->Run({"status", "--journal", journal_});
  EXPECT_NE(status.out.find("rb-sc-done"), std::string::npos) << status.out;
  // Nothing but classes was deleted, each with a uid precondition.
  auto audit = env_->Audit();
  ASSERT_TRUE(audit.ok());
  int deletes = 0;
  for (const auto& e : (*audit)["items"]) {
    if (e.value("verb", "") != "delete" || e.value("user", "") != "admin") continue;
    if (e.value("resource", "") != "storageclasses") continue;
    ++deletes;
  }
  EXPECT_GE(deletes, static_cast<int>(2 * points.size()));
}

TEST_F(MigrateStorageClassTest, UntranslatableClassIsRefusedUntouched) {
  const std::string name = ns_.substr(0, 40) + "-g";
  json gluster = {{"apiVersion", "storage.k8s.io/v1"},
                  {"kind", "StorageClass"},
                  {"metadata", {{"name", name}}},
                  {"provisioner", "kubernetes.io/glusterfs"},
                  {"parameters", {{"resturl", "http://127.0.0.1:8081"}}}};
  auto created = env_->client().Create(Classes(), gluster);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ToolRun run = env_->Run(Args("apply", {"--storage-class", name}));
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("refused"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("has no CSI translation"), std::string::npos) << run.out;
  EXPECT_EQ(Live(name)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  ToolRun plan = env_->Run({"plan", "-n", ns_});
  EXPECT_EQ(plan.exit_code, 3) << plan.out;
  EXPECT_NE(plan.out.find("no: in-tree provisioner kubernetes.io/glusterfs"), std::string::npos)
      << plan.out;
  EXPECT_FALSE(std::filesystem::exists(journal_)) << "a refused class writes no journal";
  ASSERT_TRUE(env_->client().Delete(Classes().Named(name)).ok());  // the other tests' plan
}

// Issue #38: a refused selection in a fresh --journal directory left an empty journal and lock
// file behind. Whatever is refused, before any write, writes nothing at all.
TEST_F(MigrateStorageClassTest, RefusedSelectionInAFreshJournalWritesNothing) {
  const std::string missing = ns_.substr(0, 40) + "-none";
  for (const auto& args : std::vector<std::vector<std::string>>{
           Args("apply", {"--storage-class", missing}), Args("apply", {"--pv", missing}),
           Args("apply", {"--storage-class", missing, "--pv", missing}),
           Args("rollback", {"--storage-class", missing}), Args("rollback", {"--pv", missing})}) {
    ToolRun run = env_->Run(args);
    SCOPED_TRACE(args[0] + " " + args[4] + " " + args[5]);
    EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
    EXPECT_NE(run.out.find("refused"), std::string::npos) << run.out;
    EXPECT_FALSE(std::filesystem::exists(journal_)) << "nothing at all may be written";
  }
  ToolRun status = env_->Run({"status", "--journal", journal_});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("No migrations in"), std::string::npos) << status.out;
}

// The leftovers item of `kind`/`name` in `plan --leftovers -o json` output, or null.
json LeftoverItem(const std::string& out, const std::string& kind, const std::string& name) {
  const json doc = json::parse(out, nullptr, false);
  if (doc.is_discarded()) return nullptr;
  for (const auto& item : doc.value("items", json::array())) {
    if (item.value("kind", "") == kind && item.value("name", "") == name) return item;
  }
  return nullptr;
}

// Issue #38: without --rules, `--leftovers` found no flexcsi-controller class once the PVs had
// moved, and said nothing was left. Now the cluster's flexcsi-controller configuration (as
// deploy/kubernetes/provisioner installs it) finds the class, and without one the class is
// reported not checked (exit 3). Then rollback names the CSI PVs external-provisioner made
// meanwhile, which it leaves CSI.
TEST_F(MigrateStorageClassTest, LeftoversFindFlexcsiControllerClassesWithoutRules) {
  const std::string name = ns_.substr(0, 40) + "-lvm";
  json lvm = {{"apiVersion", "storage.k8s.io/v1"},
              {"kind", "StorageClass"},
              {"metadata", {{"name", name}}},
              {"provisioner", "lvm.csi.acme.io"},  // the rules' csiDriver, like any CSI class
              {"parameters", {{"vg", "vg0"}}}};
  ASSERT_TRUE(env_->client().Create(Classes(), lvm).ok());

  ToolRun blind = env_->Run({"plan", "--leftovers", "-o", "json"});
  EXPECT_EQ(blind.exit_code, 3) << blind.out << blind.err;
  json item = LeftoverItem(blind.out, "StorageClass", name);
  ASSERT_TRUE(item.is_object()) << blind.out;
  EXPECT_EQ(item["checked"], false);
  EXPECT_NE(item.value("todo", "").find("--rules FILE"), std::string::npos) << item.dump();
  ToolRun table = env_->Run({"plan", "--leftovers"});
  EXPECT_EQ(table.exit_code, 3);
  EXPECT_EQ(table.out.find("Nothing ties"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("not checked (--rules FILE settles"), std::string::npos) << table.out;

  // flexcsi-controller as deploy/kubernetes/provisioner runs it, its configuration in a ConfigMap.
  const std::string config = "flexcsi-provisioner-config-" + ns_.substr(0, 10);
  ASSERT_TRUE(env_->client()
                  .Create(kube::ResourcePath::Core("configmaps", ns_),
                          {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", config}}},
                           {"data",
                            {{"bridge.yaml",
                              "drivers:\n"
                              "  - flexDriver: acme/lvm\n"
                              "    csiEndpoint: unix:///csi/csi.sock\n"
                              "    rule: {csiDriver: lvm.csi.acme.io, volumeHandle: {fromOption: "
                              "volumeID}}\n"}}}})
                  .ok());
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "flexcsi-provisioner"}}},
      {"spec",
       {{"replicas", 1},
        {"selector", {{"matchLabels", {{"app", "flexcsi-provisioner"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "flexcsi-provisioner"}}}}},
          {"spec",
           {{"containers",
             {{{"name", "controller"},
               {"image", "flexcsi"},
               {"command", {"flexcsi-controller", "--bridge-config=/etc/flexcsi/bridge.yaml"}},
               {"volumeMounts", {{{"name", "config"}, {"mountPath", "/etc/flexcsi"}}}}}}},
            {"volumes", {{{"name", "config"}, {"configMap", {{"name", config}}}}}}}}}}}}};
  const auto deployments = kube::ResourcePath::Group("apps/v1", "deployments", ns_);
  ASSERT_TRUE(env_->client().Create(deployments, deployment).ok());
  ToolRun seen = env_->Run({"plan", "--leftovers", "-o", "json"});
  EXPECT_EQ(seen.exit_code, 3) << seen.out << seen.err;
  item = LeftoverItem(seen.out, "StorageClass", name);
  ASSERT_TRUE(item.is_object()) << seen.out;
  EXPECT_FALSE(item.contains("checked")) << item.dump();
  EXPECT_NE(item.value("todo", "")
                .find("--rules FILE (FILE: the FlexVolume rules, as in "
                      "drivers[].rule of ConfigMap " +
                      ns_ + "/" + config + " key bridge.yaml)"),
            std::string::npos)
      << item.dump();
  EXPECT_NE(item.value("todo", "").find("twin: provisioner lvm.csi.acme.io"), std::string::npos);
  json running = LeftoverItem(seen.out, "Deployment", "flexcsi-provisioner");
  ASSERT_TRUE(running.is_object()) << seen.out;
  EXPECT_NE(running.value("what", "").find("runs flexcsi-controller (provisioner lvm.csi.acme.io)"),
            std::string::npos)
      << running.dump();

  // Hand-over: the class moves, flexcsi-controller is scaled to 0; neither is left.
  ToolRun moved =
      env_->Run(Args("apply", {"--storage-class", name, "--rules", env_->rules_path()}));
  ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  auto live = env_->Get(deployments.Named("flexcsi-provisioner"));
  ASSERT_TRUE(live.ok());
  (*live)["spec"]["replicas"] = 0;
  ASSERT_TRUE(env_->client().Update(deployments.Named("flexcsi-provisioner"), *live).ok());
  ToolRun after = env_->Run({"plan", "--leftovers", "-o", "json"});
  EXPECT_TRUE(LeftoverItem(after.out, "StorageClass", name).is_null()) << after.out;
  EXPECT_TRUE(LeftoverItem(after.out, "Deployment", "flexcsi-provisioner").is_null()) << after.out;

  // external-provisioner's PV in the twin, then going back: rollback names it and leaves it CSI.
  const std::string csi_pv = "pvc-" + ns_.substr(0, 40) + "-ep";
  json pv = {{"apiVersion", "v1"},
             {"kind", "PersistentVolume"},
             {"metadata",
              {{"name", csi_pv},
               {"annotations", {{"pv.kubernetes.io/provisioned-by", "lvm.csi.acme.io"}}}}},
             {"spec",
              {{"capacity", {{"storage", "1Gi"}}},
               {"accessModes", {"ReadWriteOnce"}},
               {"persistentVolumeReclaimPolicy", "Delete"},
               {"storageClassName", name},
               {"csi", {{"driver", "lvm.csi.acme.io"}, {"volumeHandle", csi_pv}}}}}};
  ASSERT_TRUE(env_->client().Create(kube::ResourcePath::Core("persistentvolumes"), pv).ok());
  ToolRun back = env_->Run(Args("rollback", {"--storage-class", name}));
  ASSERT_EQ(back.exit_code, 0) << back.out << back.err;
  EXPECT_NE(back.err.find("note: 1 CSI PV of StorageClass " + name +
                          " was provisioned by external-provisioner, not moved by apply (" +
                          csi_pv + ")"),
            std::string::npos)
      << back.err;
  auto kept = env_->Get(kube::ResourcePath::Core("persistentvolumes").Named(csi_pv));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)["spec"]["csi"]["driver"], "lvm.csi.acme.io");

  ASSERT_TRUE(
      env_->client().Delete(kube::ResourcePath::Core("persistentvolumes").Named(csi_pv)).ok());
  ASSERT_TRUE(env_->client().Delete(deployments.Named("flexcsi-provisioner")).ok());
  ASSERT_TRUE(env_->client().Delete(Classes().Named(name)).ok());
}

TEST_F(MigrateStorageClassTest, DryRunWritesNothingForReal) {
  const std::string name = ns_.substr(0, 40) + "-d";
  auto created = env_->client().Create(Classes(), EbsClass(name));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ToolRun run = env_->Run({"apply", "--dry-run", "--storage-class", name});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("would-move"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("would delete storageclass " + name), std::string::npos) << run.out;
  EXPECT_EQ(Live(name)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  EXPECT_FALSE(std::filesystem::exists(journal_));
  ASSERT_TRUE(env_->client().Delete(Classes().Named(name)).ok());
}

}  // namespace
}  // namespace flexcsi::migrate::testing
