// PVs whose rule derives their secrets (rook's one-key mountSecret and mountUser): apply writes
// the Secret the CSI PV names (writing-secret), rollback deletes it (rb-deleting-secret), each
// killed with -9 at every step and resumed; a Secret under the name that migrate did not write is
// never overwritten nor deleted; no key value reaches the journal or the output. The real path
// (ceph-csi mounting the moved PV through kubelet) is tests/cluster/cephfs_migrate_suite_test.py.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/base64.h"
#include "migrate/journal.h"
#include "migrate/pv_mover.h"
#include "tests/migrate/migrate_test_env.h"

namespace flexcsi::migrate::testing {
namespace {

using kube::ResourcePath;

constexpr const char* kDriver = "cephfs.csi.ceph.com";
constexpr const char* kKey = "AQBsecret-key-never-to-be-seen==";  // the cephx key of the test
constexpr const char* kRookRules =
    "flexVolumeRules:\n"
    "- flexDriver: ceph.rook.io/rook\n"
    "  csiDriver: cephfs.csi.ceph.com\n"
    "  volumeHandle: {template: \"${kubernetes.io/pvOrVolumeName}\"}\n"
    "  attributes: {rename: {clusterNamespace: clusterID}, static: {staticVolume: \"true\"}}\n"
    "  secrets:\n"
    "    secretName: {fromOption: mountSecret}\n"
    "    singleKeyAs: userKey\n"
    "    fromOptions: {mountUser: userID}\n"
    "    defaults: {userID: admin}\n"
    "  secretRefs: [nodeStage]\n";

ResourcePath Secret(const std::string& ns, const std::string& name) {
  return ResourcePath::Core("secrets", ns).Named(name);
}

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class MigrateSecretTest : public MigrateEnvTest {
 protected:
  void SetUp() override {
    MigrateEnvTest::SetUp();
    rules_ = env_->dir() + "/rook-rules.yaml";
    std::ofstream(rules_) << kRookRules;
    // Registered once for the suite (a second create is 409, which is fine).
    (void)env_->client().Create(ResourcePath::Group("storage.k8s.io/v1", "csidrivers"),
                                {{"apiVersion", "storage.k8s.io/v1"},
                                 {"kind", "CSIDriver"},
                                 {"metadata", {{"name", kDriver}}},
                                 {"spec", {{"attachRequired", false}}}});
    auto s = env_->client().Create(ResourcePath::Core("secrets", ns_),
                                   {{"apiVersion", "v1"},
                                    {"kind", "Secret"},
                                    {"metadata", {{"name", "rook-user"}}},
                                    {"type", "kubernetes.io/rook"},
                                    {"data", {{"mykey", Base64Encode(kKey)}}}});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }

  // A rook CephFS PV of user `team` bound to claim `claim`, held by a one-replica Deployment.
  void MakeVolume(const std::string& pv, const std::string& claim) {
    json source = {{"driver", "ceph.rook.io/rook"},
                   {"options",
                    {{"fsName", "myfs"},
                     {"clusterNamespace", "rook-ceph"},
                     {"mountSecret", "rook-user"},
                     {"mountUser", "team"}}}};
    auto made = env_->CreateBoundVolume(ns_, pv, claim, "flexVolume", source, "Delete");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    ASSERT_TRUE(env_->CreateDeployment(ns_, "app-" + claim, claim, 1).ok());
  }

  std::vector<std::string> Args(const std::string& command, const std::string& pv,
                                const std::string& journal) {
    std::vector<std::string> args = {command, "--pv",      pv,   "--yes",       "--journal",
                                     journal, "--timeout", "30", "--scale-down"};
    if (command == "apply") args.insert(args.end(), {"--rules", rules_});
    return args;
  }

  // Neither the journal nor a run's output holds the key, in any encoding.
  void ExpectNoKeyIn(const std::string& journal, const ToolRun& run) {
    for (const std::string& form : {std::string(kKey), Base64Encode(kKey)}) {
      EXPECT_EQ(run.out.find(form), std::string::npos) << run.out;
      EXPECT_EQ(run.err.find(form), std::string::npos) << run.err;
      for (const auto& f : std::filesystem::directory_iterator(journal)) {
        EXPECT_EQ(FileText(f.path().string()).find(form), std::string::npos) << f.path();
      }
    }
  }

  void ExpectWrittenSecret(const std::string& pv) {
    auto secret = env_->Get(Secret(ns_, pv + "-flexcsi-secret"));
    ASSERT_TRUE(secret.ok()) << secret.status().ToString();
    EXPECT_EQ((*secret)["type"], "Opaque");
    EXPECT_EQ((*secret)["data"],
              (json{{"userID", Base64Encode("team")}, {"userKey", Base64Encode(kKey)}}));
    EXPECT_EQ((*secret)["metadata"]["labels"]["app.kubernetes.io/managed-by"], "flexcsi-migrate");
    EXPECT_EQ((*secret)["metadata"]["annotations"]["flexcsi.io/migrated-pv"], pv);
    auto live = env_->Get(Pv(pv));
    ASSERT_TRUE(live.ok());
    EXPECT_EQ((*live)["spec"]["csi"]["nodeStageSecretRef"],
              (json{{"name", pv + "-flexcsi-secret"}, {"namespace", ns_}}));
    EXPECT_EQ((*live)["spec"]["csi"]["volumeHandle"], pv);
  }

  std::string rules_;
};

TEST_F(MigrateSecretTest, PlanSaysWhichSecretApplyWritesWithoutItsValues) {
  MakeVolume("pv-plan", "plan");
  ToolRun run = env_->Run({"plan", "-n", ns_, "--rules", rules_});
  EXPECT_NE(run.out.find("Secrets apply writes"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(ns_ + "/pv-plan-flexcsi-secret"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("userID,userKey"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(ns_ + "/rook-user"), std::string::npos) << run.out;
  ToolRun as_json = env_->Run({"plan", "-n", ns_, "--rules", rules_, "-o", "json"});
  auto doc = json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << as_json.out;
  EXPECT_EQ(doc["volumes"][0]["writesSecret"], (json{{"namespace", ns_},
                                                     {"name", "pv-plan-flexcsi-secret"},
                                                     {"keys", {"userID", "userKey"}},
                                                     {"fromSecret", ns_ + "/rook-user"}}));
  for (const auto* out : {&run.out, &as_json.out}) {
    EXPECT_EQ(out->find(kKey), std::string::npos);
    EXPECT_EQ(out->find(Base64Encode(kKey)), std::string::npos);
  }
  // A dry run reads and derives, and writes nothing.
  ToolRun dry = env_->Run({"apply", "--pv", "pv-plan", "--dry-run", "--scale-down", "--journal",
                           journal_, "--rules", rules_});
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("write secret " + ns_ + "/pv-plan-flexcsi-secret (keys userID,userKey)"),
            std::string::npos)
      << dry.out;
  EXPECT_TRUE(kube::IsNotFound(env_->Get(Secret(ns_, "pv-plan-flexcsi-secret")).status()));
}

TEST_F(MigrateSecretTest, KilledAtEveryStepApplyResumesAndRollbackRemovesOnlyItsSecret) {
  std::vector<std::string> points;
  for (const auto& s : ApplyStepsFor(true)) {
    points.push_back(s);
    points.push_back(s + "+");
  }
  for (size_t i = 0; i < points.size(); ++i)
    MakeVolume("pv-" + std::to_string(i), "c" + std::to_string(i));
  std::vector<std::pair<pid_t, std::string>> pids;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string pv = "pv-" + std::to_string(i);
    const std::string prefix = env_->dir() + "/" + ns_ + pv + "-crash";
    pids.push_back({env_->Spawn(Args("apply", pv, journal_ + pv),
                                {"FLEXCSI_MIGRATE_CRASH_AFTER=" + points[i]}, prefix),
                    prefix});
  }
  for (size_t i = 0; i < points.size(); ++i) {
    ToolRun crashed = MigrateEnv::Wait(pids[i].first, pids[i].second);
    EXPECT_EQ(crashed.signal, SIGKILL) << points[i] << crashed.out << crashed.err;
  }
  std::vector<std::pair<std::string, std::string>> volumes;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string pv = "pv-" + std::to_string(i);
    SCOPED_TRACE("killed after " + points[i]);
    ToolRun resumed = env_->Run(Args("apply", pv, journal_ + pv));
    EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    ExpectWrittenSecret(pv);
    ExpectNoKeyIn(journal_ + pv, resumed);
    volumes.push_back({pv, "c" + std::to_string(i)});
  }
  ExpectNothingLost(*env_, ns_, volumes);

  // Rollback, killed at each of its steps around the Secret, then run again.
  const std::vector<std::string> rb_points = {"rb-binding+", "rb-deleting-secret",
                                              "rb-deleting-secret+", "rb-restoring-policy"};
  for (size_t i = 0; i < rb_points.size(); ++i) {
    const std::string pv = "pv-" + std::to_string(i);
    SCOPED_TRACE("rollback killed after " + rb_points[i]);
    ToolRun crashed = env_->Run(Args("rollback", pv, journal_ + pv),
                                {"FLEXCSI_MIGRATE_CRASH_AFTER=" + rb_points[i]});
    EXPECT_EQ(crashed.signal, SIGKILL) << crashed.out << crashed.err;
    ToolRun again = env_->Run(Args("rollback", pv, journal_ + pv));
    EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_TRUE(kube::IsNotFound(env_->Get(Secret(ns_, pv + "-flexcsi-secret")).status()));
    auto live = env_->Get(Pv(pv));
    ASSERT_TRUE(live.ok());
    EXPECT_EQ((*live)["spec"]["flexVolume"]["options"]["mountSecret"], "rook-user");
    ExpectNoKeyIn(journal_ + pv, again);
  }
  // The user's Secret is never touched.
  auto user = env_->Get(Secret(ns_, "rook-user"));
  ASSERT_TRUE(user.ok());
  EXPECT_EQ((*user)["data"]["mykey"], Base64Encode(kKey));
  ExpectNothingLost(*env_, ns_, volumes);
}

TEST_F(MigrateSecretTest, ASecretUnderTheNameThatMigrateDidNotWriteStopsApplyAndSurvivesRollback) {
  MakeVolume("pv-taken", "taken");
  auto mine = env_->client().Create(ResourcePath::Core("secrets", ns_),
                                    {{"apiVersion", "v1"},
                                     {"kind", "Secret"},
                                     {"metadata", {{"name", "pv-taken-flexcsi-secret"}}},
                                     {"data", {{"userID", Base64Encode("someone")}}}});
  ASSERT_TRUE(mine.ok());
  ToolRun run = env_->Run(Args("apply", "pv-taken", journal_));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE((run.out + run.err).find("exists and was not written by this migration"),
            std::string::npos)
      << run.out << run.err;
  // Stopped before any PV write: the original is still bound, the workload still runs.
  auto live = env_->Get(Pv("pv-taken"));
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE((*live)["spec"].contains("flexVolume"));
  ToolRun back = env_->Run(Args("rollback", "pv-taken", journal_));
  EXPECT_EQ(back.exit_code, 0) << back.out << back.err;
  auto still = env_->Get(Secret(ns_, "pv-taken-flexcsi-secret"));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ((*still)["data"], (json{{"userID", Base64Encode("someone")}}));
  ExpectNothingLost(*env_, ns_, {{"pv-taken", "taken"}});
}

TEST_F(MigrateSecretTest, ARookSecretOfTwoKeysFailsBeforeAnyPVWrite) {
  MakeVolume("pv-two", "two");
  auto edit = env_->Get(Secret(ns_, "rook-user"));
  ASSERT_TRUE(edit.ok());
  (*edit)["data"]["other"] = Base64Encode("x");
  ASSERT_TRUE(env_->client().Update(Secret(ns_, "rook-user"), *edit).ok());
  ToolRun run = env_->Run(Args("apply", "pv-two", journal_));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE((run.out + run.err).find("holds 2 keys"), std::string::npos) << run.out << run.err;
  auto live = env_->Get(Pv("pv-two"));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  ExpectNoKeyIn(journal_, run);
  ToolRun back = env_->Run(Args("rollback", "pv-two", journal_));
  EXPECT_EQ(back.exit_code, 0) << back.out << back.err;
  ExpectNothingLost(*env_, ns_, {{"pv-two", "two"}});
}

}  // namespace
}  // namespace flexcsi::migrate::testing
