// `flexcsi migrate` end to end against the strict fake API server (real TLS, PV controller,
// protection finalizers, workload controllers, attach/detach stand-in), running the real binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
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

// The reads the server saw, by verb and resource (/_fake/reads), and sums over them.
std::map<std::string, int> Reads(MigrateEnv& env) {
  std::map<std::string, int> out;
  auto got = env.Control("GET", "reads");
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!got.ok()) return out;
  for (auto it = (*got)["counts"].begin(); it != (*got)["counts"].end(); ++it) {
    out[it.key()] = it->get<int>();
  }
  return out;
}
int CountVerb(const std::map<std::string, int>& after, const std::map<std::string, int>& before,
              const std::string& verb) {
  int n = 0;
  for (const auto& [key, count] : after) {
    if (key.rfind(verb + " ", 0) != 0) continue;
    auto was = before.find(key);
    n += count - (was == before.end() ? 0 : was->second);
  }
  return n;
}

// Issue #36: apply reads the pods, nodes, CSINodes, VolumeAttachments, ... of the cluster once
// per run (watched), not once per PV, and waits on the watched PVs and claims instead of polling
// them: 12 PVs cost the lists of 3, and far fewer PV and claim reads than the ~25 a PV of before.
TEST_F(MigrateApplyTest, ListsDoNotGrowWithThePvs) {
  const std::string more = (ns_ + "-more").substr(0, 60);
  ASSERT_TRUE(env_->CreateNamespace(more).ok());
  std::vector<std::pair<std::string, std::string>> few, many;
  for (int i = 0; i < 3; ++i) {
    few.push_back({PvName("few-" + std::to_string(i)), "claim-" + std::to_string(i)});
  }
  for (int i = 0; i < 12; ++i) {
    many.push_back({(more + "-" + std::to_string(i)).substr(0, 60), "claim-" + std::to_string(i)});
  }
  const json source = AllSources()[0].second;  // awsElasticBlockStore
  int n = 0;
  for (const auto& [batch, ns] : {std::pair{&few, ns_}, std::pair{&many, more}}) {
    for (const auto& [pv, claim] : *batch) {
      auto made = env_->CreateBoundVolume(ns, pv, claim, "awsElasticBlockStore",
                                          DistinctSource(source, ++n), "Delete");
      ASSERT_TRUE(made.ok()) << made.status().ToString();
    }
  }
  auto move = [&](const std::string& ns, size_t count) {
    const auto before = Reads(*env_);
    ToolRun run = env_->Run({"apply", "--yes", "--journal", journal_ + "-" + ns, "--timeout", "20",
                             "--rules", env_->rules_path(), "--all", "-n", ns, "--parallel", "4"});
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    const auto after = Reads(*env_);
    const int lists = CountVerb(after, before, "list");
    const int gets = CountVerb(after, before, "get");
    std::cout << count << " PVs: " << lists << " lists, " << gets << " gets, "
              << CountVerb(after, before, "watch") << " watches" << std::endl;
    return std::pair{lists, gets};
  };
  const auto [few_lists, few_gets] = move(ns_, few.size());
  const auto [many_lists, many_gets] = move(more, many.size());
  ExpectNothingLost(*env_, ns_, few);
  ExpectNothingLost(*env_, more, many);
  // The run's own lists (the plan of --all, each watch's first list, a re-list if a stream
  // broke), whatever the number of PVs; before, 16 a PV.
  EXPECT_LE(many_lists, few_lists + 4);
  EXPECT_LE(many_lists, 40);
  // Before, 25 GETs a PV (polls of the PV and claim); now the fresh reads before the first
  // write and the claim before the create, a few more on a slow machine (a cache that took over
  // 2 s to show a write is read from the server instead).
  EXPECT_LE(many_gets, static_cast<int>(many.size()) * 8) << many_gets;
  (void)few_gets;
}

// A role without `watch` (403 on every watch): apply lists per PV as before, and moves.
TEST_F(MigrateApplyTest, RefusedWatchesFallBackToListsPerPv) {
  std::vector<std::pair<std::string, std::string>> volumes;
  for (int i = 0; i < 2; ++i) {
    volumes.push_back({PvName("nowatch-" + std::to_string(i)), "claim-" + std::to_string(i)});
    auto made = env_->CreateBoundVolume(ns_, volumes.back().first, volumes.back().second,
                                        "awsElasticBlockStore",
                                        DistinctSource(AllSources()[0].second, 100 + i), "Delete");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
  }
  ASSERT_TRUE(
      env_->Control("POST", "fail", {{"count", 1000000}, {"code", 403}, {"watchOnly", true}}).ok());
  const auto before = Reads(*env_);
  ToolRun run = env_->Run(Apply({"--all", "-n", ns_}));
  ASSERT_TRUE(env_->Control("POST", "fail", {{"clear", true}}).ok());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("read per PV instead"), std::string::npos) << run.err;
  const auto after = Reads(*env_);
  // The quiet check lists pods, nodes and VolumeAttachments for each PV again.
  EXPECT_GE(CountVerb(after, before, "list"), 6 * static_cast<int>(volumes.size()));
  ExpectNothingLost(*env_, ns_, volumes);
}

}  // namespace
}  // namespace flexcsi::migrate::testing
