// `flexcsi migrate` end to end against the strict fake API server (real TLS, PV controller,
// protection finalizers, workload controllers, attach/detach stand-in), running the real binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "migrate/cluster_objects.h"
#include "migrate/journal.h"
#include "tests/migrate/migrate_test_env.h"
#include "translator/flexvolume_rules.h"
#include "translator/translator.h"

namespace flexcsi::migrate::testing {
namespace {

using kube::ResourcePath;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

translator::Translator RulesTranslator() {
  auto rules = translator::ParseFlexVolumeRulesText(kRulesYaml);
  EXPECT_TRUE(rules.ok());
  return translator::Translator(std::move(*rules));
}

class MigrateApplyTest : public MigrateEnvTest {
 protected:
  std::string PvName(const std::string& suffix) { return (ns_ + "-" + suffix).substr(0, 60); }
  std::vector<std::string> Apply(std::vector<std::string> extra) {
    std::vector<std::string> args = {"apply",     "--yes", "--journal", journal_,
                                     "--timeout", "20",    "--rules",   env_->rules_path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

// The headline: every plugin the translator knows, one `apply --all`, and afterwards each PV is
// exactly the translator's output under the same name, with its claim (same uid, labels,
// annotations) Bound to it and its original reclaim policy back.
TEST_F(MigrateApplyTest, EveryPluginMovesAndKeepsItsClaim) {
  std::vector<std::pair<std::string, std::string>> volumes;
  std::map<std::string, json> originals, claims;
  int i = 0;
  for (const auto& [field, source] : AllSources()) {
    const std::string pv = PvName(Lower(field));
    const std::string claim = "claim-" + std::to_string(i);
    auto created =
        env_->CreateBoundVolume(ns_, pv, claim, field, source, i % 2 == 0 ? "Delete" : "Retain");
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    originals[pv] = *created;
    claims[pv] = *env_->Get(Claim(ns_, claim));
    volumes.push_back({pv, claim});
    ++i;
  }
  ToolRun plan = env_->Run({"plan", "-n", ns_, "--rules", env_->rules_path(), "-o", "json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  json p = json::parse(plan.out);
  EXPECT_EQ(p["summary"]["canMove"], volumes.size()) << plan.out;

  ToolRun run = env_->Run(Apply({"--all", "-n", ns_, "-o", "json"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // Not a terminal: plain progress lines on stderr (no live line redrawn with \r), one outcome
  // line per PV; stdout is the JSON report alone.
  EXPECT_EQ(run.err.find('\r'), std::string::npos) << run.err;
  for (const auto& [pv_name, claim] : volumes) {
    EXPECT_NE(run.err.find(pv_name + ": moved"), std::string::npos) << run.err;
  }
  json report = json::parse(run.out);
  EXPECT_EQ(report["summary"]["moved"], volumes.size()) << run.out;

  const translator::Translator translator = RulesTranslator();
  for (const auto& [pv_name, claim] : volumes) {
    SCOPED_TRACE(pv_name);
    auto live = env_->Get(Pv(pv_name));
    ASSERT_TRUE(live.ok());
    auto expected = translator.TranslateInTreePVToCSI(StripServerFields(originals[pv_name]));
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ((*live)["spec"]["csi"], (*expected)["spec"]["csi"]);
    EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"],
              originals[pv_name]["spec"]["persistentVolumeReclaimPolicy"]);
    EXPECT_EQ((*live)["spec"]["capacity"], originals[pv_name]["spec"]["capacity"]);
    EXPECT_EQ((*live)["spec"]["accessModes"], originals[pv_name]["spec"]["accessModes"]);
    EXPECT_EQ((*live)["metadata"]["labels"], originals[pv_name]["metadata"]["labels"]);
    EXPECT_EQ((*live)["status"]["phase"], "Bound");
    auto pvc = env_->Get(Claim(ns_, claim));
    ASSERT_TRUE(pvc.ok());
    EXPECT_EQ((*pvc)["metadata"]["uid"], claims[pv_name]["metadata"]["uid"]);
    EXPECT_EQ((*pvc)["metadata"]["labels"], claims[pv_name]["metadata"]["labels"]);
    EXPECT_EQ((*pvc)["metadata"]["annotations"]["owner"], "team-a");
    EXPECT_EQ((*pvc)["status"]["phase"], "Bound");
  }
  ExpectNothingLost(*env_, ns_, volumes);

  ToolRun status = env_->Run({"status", "--journal", journal_, "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  json st = json::parse(status.out);
  ASSERT_EQ(st["items"].size(), volumes.size());
  for (const auto& item : st["items"]) EXPECT_EQ(item["state"], "moved") << item.dump();

  // Applying again is a no-op that says so.
  ToolRun again = env_->Run(Apply({"--pv", volumes[0].first}));
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("already moved"), std::string::npos) << again.out;
}

TEST_F(MigrateApplyTest, InUseClaimIsRefusedNamingItsPods) {
  const std::string pv = PvName("ebs");
  auto created = env_->CreateBoundVolume(ns_, pv, "data", "awsElasticBlockStore",
                                         AllSources()[0].second, "Delete");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(env_->CreateDeployment(ns_, "web", "data", 1).ok());
  ToolRun run = env_->Run(Apply({"--pv", pv}));
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("refused"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(Deployment/web)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(ns_ + "/web-"), std::string::npos) << run.out;
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  EXPECT_FALSE(std::filesystem::exists(journal_ + "/journal.db") &&
               MigrationJournal::OpenForReading(journal_).ok() &&
               (*MigrationJournal::OpenForReading(journal_))->Get(pv)->has_value());
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

TEST_F(MigrateApplyTest, ScaleDownMovesThenRestoresReplicas) {
  const std::string pv = PvName("gce");
  ASSERT_TRUE(env_->CreateBoundVolume(ns_, pv, "data", "gcePersistentDisk", AllSources()[1].second,
                                      "Delete")
                  .ok());
  ASSERT_TRUE(env_->CreateDeployment(ns_, "db", "data", 2).ok());
  ToolRun run = env_->Run(Apply({"--pv", pv, "--scale-down"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns_).Named("db"));
  ASSERT_TRUE(dep.ok());
  EXPECT_EQ((*dep)["spec"]["replicas"], 2);
  // The pods come back on the CSI PV, reached through the same claim name.
  EXPECT_TRUE(env_->WaitRunningPods(ns_, "data", 2).ok());
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["spec"]["csi"]["driver"], "pd.csi.storage.gke.io");
  EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  ToolRun status = env_->Run({"status", "--journal", journal_});
  EXPECT_NE(status.out.find("Deployment/db=2"), std::string::npos) << status.out;
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

TEST_F(MigrateApplyTest, UntranslatablePvIsRefusedWithTheTranslatorsReason) {
  const std::string pv = PvName("flex");
  json source = {{"driver", "other/unknown"}, {"options", {{"volumeID", "x"}}}};
  auto created = env_->CreateBoundVolume(ns_, pv, "data", "flexVolume", source, "Retain");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ToolRun run = env_->Run(Apply({"--pv", pv}));
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  const translator::Translator translator = RulesTranslator();
  auto expected = translator.TranslateInTreePVToCSI(*created);
  ASSERT_FALSE(expected.ok());
  EXPECT_NE(run.out.find("untranslatable"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(expected.status().message()), std::string::npos) << run.out;
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  ToolRun plan = env_->Run({"plan", "-n", ns_, "--rules", env_->rules_path()});
  EXPECT_EQ(plan.exit_code, 3) << plan.out;
  EXPECT_NE(plan.out.find("untranslatable"), std::string::npos) << plan.out;
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

TEST_F(MigrateApplyTest, DryRunSendsDryRunWritesAndJournalsNothing) {
  const std::string pv = PvName("cinder");
  auto created =
      env_->CreateBoundVolume(ns_, pv, "data", "cinder", AllSources()[4].second, "Retain");
  ASSERT_TRUE(created.ok());
  auto before = env_->Audit();
  ASSERT_TRUE(before.ok());
  const size_t seen = (*before)["items"].size();
  ToolRun run = env_->Run(Apply({"--pv", pv, "--dry-run"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("would-move"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("would delete PV " + pv), std::string::npos) << run.out;
  auto after = env_->Audit();
  ASSERT_TRUE(after.ok());
  int dry_writes = 0;
  for (size_t k = seen; k < (*after)["items"].size(); ++k) {
    const json& e = (*after)["items"][k];
    if (e.value("user", "") != "admin") continue;
    EXPECT_TRUE(e.value("dryRun", false)) << "a real write in --dry-run: " << e.dump();
    ++dry_writes;
  }
  EXPECT_GE(dry_writes, 4);
  EXPECT_FALSE(std::filesystem::exists(journal_));
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

// A claim and its PV edited by someone else between our read and our write: the 409 is answered
// by re-reading and deciding again, and the other writer's changes stay.
TEST_F(MigrateApplyTest, ConcurrentEditIsReReadNotOverwritten) {
  const std::string pv = PvName("azure");
  ASSERT_TRUE(
      env_->CreateBoundVolume(ns_, pv, "data", "azureDisk", AllSources()[2].second, "Delete").ok());
  const std::string hold = env_->dir() + "/hold-" + ns_;
  std::filesystem::create_directories(hold);
  const std::string prefix = hold + "/run";
  pid_t pid = env_->Spawn(Apply({"--pv", pv}), {"FLEXCSI_MIGRATE_HOLD_DIR=" + hold}, prefix);
  ASSERT_GT(pid, 0);
  for (int k = 0; k < 400 && !std::filesystem::exists(hold + "/held"); ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(hold + "/held"));
  // The tool has read the PV and is about to write Retain. Edit both objects now.
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  (*live)["metadata"]["annotations"]["edited-by"] = "someone-else";
  ASSERT_TRUE(env_->client().Update(Pv(pv), *live).ok());
  auto claim = env_->Get(Claim(ns_, "data"));
  ASSERT_TRUE(claim.ok());
  (*claim)["metadata"]["labels"]["edited"] = "yes";
  ASSERT_TRUE(env_->client().Update(Claim(ns_, "data"), *claim).ok());
  std::ofstream(hold + "/go").put('\n');
  ToolRun run = MigrateEnv::Wait(pid, prefix);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  auto audit = env_->Audit();
  ASSERT_TRUE(audit.ok());
  bool conflict = false;
  for (const auto& e : (*audit)["items"]) {
    if (e.value("user", "") == "admin" && e.value("name", "") == pv && e.value("code", 0) == 409) {
      conflict = true;
    }
  }
  EXPECT_TRUE(conflict) << "the stale write should have been answered with 409";
  auto after = env_->Get(Claim(ns_, "data"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["metadata"]["labels"]["edited"], "yes");
  EXPECT_EQ((*after)["status"]["phase"], "Bound");
  auto moved = env_->Get(Pv(pv));
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ((*moved)["spec"]["csi"]["driver"], "disk.csi.azure.com");
  EXPECT_EQ((*moved)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

TEST_F(MigrateApplyTest, SecondConcurrentRunIsRefused) {
  const std::string pv = PvName("px");
  ASSERT_TRUE(
      env_->CreateBoundVolume(ns_, pv, "data", "portworxVolume", AllSources()[6].second, "Retain")
          .ok());
  const std::string hold = env_->dir() + "/hold-" + ns_;
  std::filesystem::create_directories(hold);
  pid_t pid = env_->Spawn(Apply({"--pv", pv}), {"FLEXCSI_MIGRATE_HOLD_DIR=" + hold}, hold + "/run");
  for (int k = 0; k < 400 && !std::filesystem::exists(hold + "/held"); ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(hold + "/held"));
  ToolRun second = env_->Run(Apply({"--pv", pv}));
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another flexcsi migrate is running"), std::string::npos) << second.err;
  std::ofstream(hold + "/go").put('\n');
  ToolRun first = MigrateEnv::Wait(pid, hold + "/run");
  EXPECT_EQ(first.exit_code, 0) << first.out << first.err;
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

}  // namespace
}  // namespace flexcsi::migrate::testing
