// kill -9 of `flexcsi migrate` right after each journaled step (before its write) and right after
// each step's writes (before the next is journaled), then `apply` again resumes, or `rollback`
// restores the original PV, binding and replicas exactly; the same across releases, both ways
// (MigrateReleaseSkewTest). And an API server that goes away mid-run: a clear failure, the
// journal intact, and a resume once it is back.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "migrate/cluster_objects.h"
#include "migrate/journal.h"
#include "migrate/pv_mover.h"
#include "tests/migrate/migrate_test_env.h"
#include "tests/upgrade/previous_release.h"
#include "translator/flexvolume_rules.h"
#include "translator/translator.h"

namespace flexcsi::migrate::testing {
namespace {

using kube::ResourcePath;

// One volume, its claim and a one-replica Deployment using it, each crashed at one point.
struct Scenario {
  std::string crash_at;  // FLEXCSI_MIGRATE_CRASH_AFTER value
  std::string pv, claim, deployment, journal, source_field;
  json original_pv;
  json original_claim;
};

std::vector<std::string> CrashPoints(const std::vector<std::string>& steps) {
  std::vector<std::string> points;
  for (const auto& s : steps) {
    points.push_back(s);
    points.push_back(s + "+");
  }
  return points;
}

translator::Translator RulesTranslator() {
  auto rules = translator::ParseFlexVolumeRulesText(kRulesYaml);
  EXPECT_TRUE(rules.ok());
  return translator::Translator(std::move(*rules));
}

class MigrateCrashTest : public MigrateEnvTest {
 protected:
  void SetUp() override {}  // each test makes its own namespace of scenarios

  // Creates one scenario per crash point, each with a Deployment holding the claim.
  std::vector<Scenario> Prepare(const std::string& ns, const std::vector<std::string>& points) {
    EXPECT_TRUE(env_->CreateNamespace(ns).ok());
    std::vector<Scenario> out;
    const auto sources = AllSources();
    for (size_t i = 0; i < points.size(); ++i) {
      Scenario s;
      s.crash_at = points[i];
      s.pv = ns + "-pv-" + std::to_string(i);
      s.claim = "data-" + std::to_string(i);
      s.deployment = "app-" + std::to_string(i);
      s.journal = env_->dir() + "/journal-" + s.pv;
      const auto& [field, source] = sources[i % sources.size()];
      s.source_field = field;
      auto pv =
          env_->CreateBoundVolume(ns, s.pv, s.claim, field, DistinctSource(source, next_disk_++),
                                  i % 2 == 0 ? "Delete" : "Retain", /*wait=*/false);
      EXPECT_TRUE(pv.ok()) << pv.status().ToString();
      if (!pv.ok()) return {};
      EXPECT_TRUE(env_->CreateDeployment(ns, s.deployment, s.claim, 1, /*wait=*/false).ok());
      out.push_back(std::move(s));
    }
    // Created all at once, then waited for: the controllers work on them together.
    for (auto& s : out) {
      auto pv = env_->WaitBound(ns, s.pv, s.claim);
      EXPECT_TRUE(pv.ok()) << pv.status().ToString();
      if (!pv.ok()) return {};
      s.original_pv = *pv;
      s.original_claim =
          *env_->Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(s.claim));
      EXPECT_TRUE(env_->WaitRunningPods(ns, s.claim, 1).ok());
    }
    return out;
  }

  std::vector<std::string> Args(const std::string& command, const Scenario& s) {
    // Both directions with --scale-down: the Deployment holds every claim.
    std::vector<std::string> args = {command,   "--pv",      s.pv, "--yes",       "--journal",
                                     s.journal, "--timeout", "30", "--scale-down"};
    if (command == "apply") args.insert(args.end(), {"--rules", env_->rules_path()});
    return args;
  }

  // Runs `command` for every scenario at once (separate journals), each with its crash point
  // when `crash`, with `binary` (this tree's flexcsi-migrate or a previous release's); returns
  // the runs in scenario order.
  std::vector<ToolRun> RunAll(const std::string& command, const std::vector<Scenario>& scenarios,
                              bool crash, const std::string& binary = MigrateBinary()) {
    std::vector<std::pair<pid_t, std::string>> pids;
    for (const auto& s : scenarios) {
      const std::string prefix = env_->dir() + "/" + s.pv + "-" + command + (crash ? "-crash" : "");
      std::vector<std::string> extra_env;
      if (crash) extra_env.push_back("FLEXCSI_MIGRATE_CRASH_AFTER=" + s.crash_at);
      pids.push_back({env_->Spawn(Args(command, s), extra_env, prefix, binary), prefix});
    }
    std::vector<ToolRun> runs;
    for (const auto& [pid, prefix] : pids) runs.push_back(MigrateEnv::Wait(pid, prefix));
    return runs;
  }

  void ExpectReplicas(const std::string& ns, const Scenario& s, int replicas) {
    auto dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns).Named(s.deployment));
    ASSERT_TRUE(dep.ok());
    EXPECT_EQ((*dep)["spec"]["replicas"], replicas) << s.crash_at;
  }

  // kill -9 of `crash_binary`'s apply after every step (and after its writes), then
  // `resume_binary`'s apply resumes each: the PV is the translated one, the replicas are back.
  void CrashThenApplyResumes(const std::string& ns, const std::string& crash_binary,
                             const std::string& resume_binary = MigrateBinary()) {
    std::vector<Scenario> scenarios = Prepare(ns, CrashPoints(ApplySteps()));
    ASSERT_FALSE(scenarios.empty());
    std::vector<ToolRun> crashed = RunAll("apply", scenarios, true, crash_binary);
    for (size_t i = 0; i < scenarios.size(); ++i) {
      EXPECT_EQ(crashed[i].signal, SIGKILL)
          << scenarios[i].crash_at << ": " << crashed[i].out << crashed[i].err;
      // The journal names the step the run died in.
      auto journal = MigrationJournal::OpenForReading(scenarios[i].journal);
      ASSERT_TRUE(journal.ok()) << scenarios[i].crash_at;
      auto record = (*journal)->Get(scenarios[i].pv);
      ASSERT_TRUE(record.ok() && record->has_value()) << scenarios[i].crash_at;
      std::string step = scenarios[i].crash_at;
      if (step.back() == '+') step.pop_back();
      EXPECT_EQ((*record)->step, step);
    }
    std::vector<ToolRun> resumed = RunAll("apply", scenarios, false, resume_binary);
    const translator::Translator translator = RulesTranslator();
    std::vector<std::pair<std::string, std::string>> volumes;
    for (size_t i = 0; i < scenarios.size(); ++i) {
      const Scenario& s = scenarios[i];
      SCOPED_TRACE("crash after " + s.crash_at + " (" + s.source_field + ")");
      EXPECT_EQ(resumed[i].exit_code, 0) << resumed[i].out << resumed[i].err;
      auto live = env_->Get(Pv(s.pv));
      ASSERT_TRUE(live.ok());
      auto expected = translator.TranslateInTreePVToCSI(StripServerFields(s.original_pv));
      ASSERT_TRUE(expected.ok());
      EXPECT_EQ((*live)["spec"]["csi"], (*expected)["spec"]["csi"]);
      EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"],
                s.original_pv["spec"]["persistentVolumeReclaimPolicy"]);
      ExpectReplicas(ns, s, 1);
      volumes.push_back({s.pv, s.claim});
    }
    ExpectNothingLost(*env_, ns, volumes);
  }

  // The same crashes, then `rollback_binary`'s rollback restores the original PV, binding and
  // replicas.
  void CrashThenRollbackRestores(const std::string& ns, const std::string& crash_binary,
                                 const std::string& rollback_binary = MigrateBinary()) {
    std::vector<Scenario> scenarios = Prepare(ns, CrashPoints(ApplySteps()));
    ASSERT_FALSE(scenarios.empty());
    std::vector<ToolRun> crashed = RunAll("apply", scenarios, true, crash_binary);
    for (size_t i = 0; i < scenarios.size(); ++i) {
      EXPECT_EQ(crashed[i].signal, SIGKILL) << scenarios[i].crash_at;
    }
    std::vector<ToolRun> rolled = RunAll("rollback", scenarios, false, rollback_binary);
    std::vector<std::pair<std::string, std::string>> volumes;
    for (size_t i = 0; i < scenarios.size(); ++i) {
      const Scenario& s = scenarios[i];
      SCOPED_TRACE("crash after " + s.crash_at + " (" + s.source_field + ")");
      EXPECT_EQ(rolled[i].exit_code, 0) << rolled[i].out << rolled[i].err;
      auto live = env_->Get(Pv(s.pv));
      ASSERT_TRUE(live.ok());
      // The original PV exactly: source, capacity, modes, policy, labels, annotations, and the
      // binding to the same claim uid.
      EXPECT_EQ(StripServerFields(*live)["spec"], StripServerFields(s.original_pv)["spec"]);
      EXPECT_EQ((*live)["metadata"].value("labels", json()),
                s.original_pv["metadata"].value("labels", json()));
      EXPECT_EQ((*live)["metadata"].value("annotations", json()),
                s.original_pv["metadata"].value("annotations", json()));
      EXPECT_EQ((*live)["status"]["phase"], "Bound");
      auto claim = env_->Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(s.claim));
      ASSERT_TRUE(claim.ok());
      EXPECT_EQ((*claim)["metadata"]["uid"], s.original_claim["metadata"]["uid"]);
      EXPECT_EQ((*claim)["status"]["phase"], "Bound");
      ExpectReplicas(ns, s, 1);
      volumes.push_back({s.pv, s.claim});
    }
    ExpectNothingLost(*env_, ns, volumes);
  }

  static int next_disk_;  // disks are never shared between scenarios of the suite
};
int MigrateCrashTest::next_disk_ = 0;

TEST_F(MigrateCrashTest, KillAfterEveryStepThenApplyResumes) {
  CrashThenApplyResumes("crash-resume", MigrateBinary());
}

TEST_F(MigrateCrashTest, KillAfterEveryStepThenRollbackRestores) {
  CrashThenRollbackRestores("crash-rollback", MigrateBinary());
}

// Issue #37: a migration killed under the previous release (CHANGELOG.md's), its journal written
// by that release, is resumed or rolled back by this tree's flexcsi-migrate.
class MigrateReleaseSkewTest : public MigrateCrashTest {
 protected:
  void SetUp() override {
    upgrade::PreviousRelease release;
    ASSERT_TRUE(upgrade::FindPreviousRelease({"flexcsi-migrate"}, &release));
    previous_migrate_ = release.Binary("flexcsi-migrate");
  }

  std::string previous_migrate_;
};

TEST_F(MigrateReleaseSkewTest, PreviousReleaseKilledAfterEveryStepThenApplyResumes) {
  CrashThenApplyResumes("skew-resume", previous_migrate_);
}

TEST_F(MigrateReleaseSkewTest, PreviousReleaseKilledAfterEveryStepThenRollbackRestores) {
  CrashThenRollbackRestores("skew-rollback", previous_migrate_);
}

// The downgrade: a migration killed under this tree's flexcsi-migrate is resumed or rolled back
// by the previous release's. Both write journal schema 4 with the same steps (CHANGELOG.md); what
// this release writes beyond 0.1.0 is not journaled (the claim-sync annotation on the claim,
// which the previous release neither reads nor needs: it waits for the PV controller's periodic
// sync instead).
TEST_F(MigrateReleaseSkewTest, ThisReleaseKilledAfterEveryStepThenPreviousApplyResumes) {
  CrashThenApplyResumes("skew-down-resume", MigrateBinary(), previous_migrate_);
}

TEST_F(MigrateReleaseSkewTest, ThisReleaseKilledAfterEveryStepThenPreviousRollbackRestores) {
  CrashThenRollbackRestores("skew-down-rollback", MigrateBinary(), previous_migrate_);
}

// The journal's schema version (PRAGMA user_version of <journal dir>/journal.db), or -1.
int JournalSchema(const std::string& dir) {
  sqlite3* db = nullptr;
  int version = -1;
  if (sqlite3_open_v2((dir + "/journal.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
      SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      version = sqlite3_column_int(s, 0);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return version;
}

bool SetJournalSchema(const std::string& dir, int version) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open_v2((dir + "/journal.db").c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) ==
                SQLITE_OK &&
            sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(version)).c_str(),
                         nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

// What the next change of the journal's format will bring: a journal of schema 5, one ahead of
// what the previous release knows, is refused by it by name before it touches the cluster, the
// journal and the half-done migration as they were; set back to 4, the previous release resumes.
TEST_F(MigrateReleaseSkewTest, AJournalOfALaterSchemaIsRefusedByThePreviousReleaseByName) {
  const std::string ns = "skew-down-schema";
  std::vector<Scenario> scenarios = Prepare(ns, {"releasing+"});
  ASSERT_EQ(scenarios.size(), 1u);
  const Scenario& s = scenarios[0];
  ASSERT_EQ(RunAll("apply", scenarios, true)[0].signal, SIGKILL);
  ASSERT_TRUE(SetJournalSchema(s.journal, 5));
  auto pv_before = env_->Get(Pv(s.pv));
  ASSERT_TRUE(pv_before.ok());

  for (const std::string command : {"apply", "rollback"}) {
    ToolRun refused = RunAll(command, scenarios, false, previous_migrate_)[0];
    SCOPED_TRACE(command + ": " + refused.out + refused.err);
    EXPECT_NE(refused.exit_code, 0);
    const std::string said = refused.out + refused.err;
    std::cout << "previous release's " << command << " on a schema 5 journal: " << said;
    EXPECT_NE(said.find("schema version 5 was written by a newer flexcsi (this one knows "
                        "version 4)"),
              std::string::npos);
    EXPECT_NE(said.find(s.journal), std::string::npos) << "the refusal names no journal";
    EXPECT_EQ(JournalSchema(s.journal), 5) << "the refusing release changed the schema version";
    auto pv_after = env_->Get(Pv(s.pv));
    ASSERT_TRUE(pv_after.ok());
    EXPECT_EQ((*pv_after)["metadata"]["resourceVersion"],
              (*pv_before)["metadata"]["resourceVersion"])
        << "the refusing release wrote the PV";
    ExpectReplicas(ns, s, 0);
  }
  // Back to the schema both releases write (this tree refuses 5 as well): the step is as the
  // killed run left it, and the previous release resumes from it.
  ASSERT_TRUE(SetJournalSchema(s.journal, 4));
  auto journal = MigrationJournal::OpenForReading(s.journal);
  ASSERT_TRUE(journal.ok()) << journal.status().ToString();
  auto record = (*journal)->Get(s.pv);
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((*record)->step, "releasing");
  journal->reset();
  ToolRun resumed = RunAll("apply", scenarios, false, previous_migrate_)[0];
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto live = env_->Get(Pv(s.pv));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["spec"].contains("csi"), true);
  ExpectReplicas(ns, s, 1);
  ExpectNothingLost(*env_, ns, {{s.pv, s.claim}});
}

// A rollback killed after each of its own steps, then run again, still ends at the original.
TEST_F(MigrateCrashTest, KillDuringRollbackThenRollbackAgain) {
  const std::string ns = "crash-in-rollback";
  std::vector<Scenario> scenarios = Prepare(ns, CrashPoints(RollbackSteps()));
  ASSERT_FALSE(scenarios.empty());
  std::vector<ToolRun> applied = RunAll("apply", scenarios, false);
  for (size_t i = 0; i < scenarios.size(); ++i) {
    ASSERT_EQ(applied[i].exit_code, 0) << applied[i].out << applied[i].err;
  }
  std::vector<ToolRun> crashed = RunAll("rollback", scenarios, true);
  for (size_t i = 0; i < scenarios.size(); ++i) {
    EXPECT_EQ(crashed[i].signal, SIGKILL) << scenarios[i].crash_at;
  }
  std::vector<ToolRun> rolled = RunAll("rollback", scenarios, false);
  std::vector<std::pair<std::string, std::string>> volumes;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const Scenario& s = scenarios[i];
    SCOPED_TRACE("crash after " + s.crash_at);
    EXPECT_EQ(rolled[i].exit_code, 0) << rolled[i].out << rolled[i].err;
    auto live = env_->Get(Pv(s.pv));
    ASSERT_TRUE(live.ok());
    EXPECT_EQ(StripServerFields(*live)["spec"], StripServerFields(s.original_pv)["spec"]);
    ExpectReplicas(ns, s, 1);
    volumes.push_back({s.pv, s.claim});
  }
  ExpectNothingLost(*env_, ns, volumes);
}

// The API server dies while the tool is between a read and a write: the run fails with a clear
// message, the journal keeps the step, and once the server is back `apply` finishes the job.
TEST(MigrateServerLossTest, ServerGoneMidRunFailsCleanlyThenResumes) {
  MigrateEnv env;
  ASSERT_TRUE(env.Start().ok());
  ASSERT_TRUE(env.CreateNamespace("loss").ok());
  auto created = env.CreateBoundVolume("loss", "pv-loss", "data", "awsElasticBlockStore",
                                       AllSources()[0].second, "Delete");
  ASSERT_TRUE(created.ok());
  const std::string journal = env.dir() + "/journal";
  const std::string hold = env.dir() + "/hold";
  std::filesystem::create_directories(hold);
  const std::vector<std::string> args = {"apply",     "--pv",  "pv-loss",   "--yes",
                                         "--journal", journal, "--timeout", "20"};
  pid_t pid = env.Spawn(args, {"FLEXCSI_MIGRATE_HOLD_DIR=" + hold}, hold + "/run");
  for (int k = 0; k < 400 && !std::filesystem::exists(hold + "/held"); ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(hold + "/held"));
  ASSERT_TRUE(env.server().Kill().ok());
  std::ofstream(hold + "/go").put('\n');
  ToolRun failed = MigrateEnv::Wait(pid, hold + "/run");
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_NE(failed.out.find("failed"), std::string::npos) << failed.out;
  EXPECT_NE(failed.out.find("retaining"), std::string::npos) << failed.out;

  ToolRun status = env.Run({"status", "--journal", journal, "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  json st = json::parse(status.out);
  ASSERT_EQ(st["items"].size(), 1u);
  EXPECT_EQ(st["items"][0]["step"], "retaining");
  EXPECT_EQ(st["items"][0]["state"], "in-progress");
  EXPECT_FALSE(st["items"][0]["lastError"].get<std::string>().empty());

  ASSERT_TRUE(env.server().Restart().ok());
  ASSERT_TRUE(env.Reconnect().ok());
  ToolRun resumed = env.Run(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto live = env.Get(Pv("pv-loss"));
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["spec"]["csi"]["driver"], "ebs.csi.aws.com");
  EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  ExpectNothingLost(env, "loss", {{"pv-loss", "data"}});
}

}  // namespace
}  // namespace flexcsi::migrate::testing
