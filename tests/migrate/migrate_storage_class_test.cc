// `flexcsi migrate apply/rollback --storage-class` against the strict fake API server (which
// validates StorageClasses and refuses updates of provisioner and parameters, as 1.24 does):
// killed with -9 at every journaled step and after every write, resumed, then rolled back the
// same way; an untranslatable class refused untouched; a dry run that writes nothing for real.
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
  ASSERT_TRUE(env_->client().Delete(Classes().Named(name)).ok());  // the other tests' plan
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
