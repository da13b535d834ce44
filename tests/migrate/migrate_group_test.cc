// Workload groups against the strict fake API server: a Deployment with two claims moves under
// one scale-down, killed with -9 at every step of its group (and at PV steps in between) and
// resumed, with its replicas restored exactly once to the value read before the scale-down; and
// the same for rollback, which goes back through the same groups (a Deployment with two claims
// and a StatefulSet with two claim templates each scaled down once and restored once).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>

#include "migrate/cluster_objects.h"
#include "migrate/journal.h"
#include "tests/migrate/migrate_test_env.h"

namespace flexcsi::migrate::testing {
namespace {

using kube::ResourcePath;

class MigrateGroupTest : public MigrateEnvTest {
 protected:
  // Deployment `name` with `replicas` pods, each mounting claims a-<name> and b-<name> (bound to
  // PVs of the same names' with the namespace in front).
  void CreateTwoClaimDeployment(const std::string& name, int replicas, int disk) {
    const auto sources = AllSources();
    for (const char* c : {"a-", "b-"}) {
      const std::string claim = c + name;
      const auto& [field, source] = sources[(disk + (c[0] == 'a' ? 0 : 1)) % sources.size()];
      auto pv = env_->CreateBoundVolume(ns_, Pv(claim), claim, field,
                                        DistinctSource(source, disk * 2 + (c[0] == 'a' ? 0 : 1)),
                                        "Delete", /*wait=*/false);
      ASSERT_TRUE(pv.ok()) << pv.status().ToString();
    }
    Status created = env_->CreateDeployment(ns_, name, {"a-" + name, "b-" + name}, replicas,
                                            /*wait=*/false);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }
  std::string Pv(const std::string& claim) { return (ns_ + "-" + claim).substr(0, 60); }
  std::vector<std::string> Args(const std::string& name, const std::string& journal) {
    return {"apply",        "--pv",          Pv("a-" + name),
            "--pv",         Pv("b-" + name), "--yes",
            "--journal",    journal,         "--timeout",
            "30",           "--rules",       env_->rules_path(),
            "--scale-down", "--parallel",    "2"};
  }
  std::vector<std::string> RollbackArgs(const std::string& name, const std::string& journal) {
    return {"rollback",  "--pv",  Pv("a-" + name), "--pv", Pv("b-" + name), "--yes",
            "--journal", journal, "--timeout",     "30",   "--scale-down",  "--parallel",
            "2"};
  }
  // The successful writes of the workload's replicas (through /scale), in order.
  std::vector<int> ScaleWrites(const std::string& name,
                               const std::string& resource = "deployments") {
    std::vector<int> out;
    auto audit = env_->Audit();
    EXPECT_TRUE(audit.ok());
    for (const auto& e : (*audit)["items"]) {
      if (e.value("resource", "") != resource || e.value("subresource", "") != "scale" ||
          e.value("namespace", "") != ns_ || e.value("name", "") != name ||
          e.value("dryRun", false) || e.value("code", 0) >= 300) {
        continue;
      }
      out.push_back(e["object"]["spec"].value("replicas", -1));
    }
    return out;
  }
};

TEST_F(MigrateGroupTest, KilledAtEveryGroupStepResumesAndRestoresReplicasOnce) {
  const std::vector<std::string> points = {"group-scaling-down",
                                           "group-scaling-down+",
                                           "group-moving",
                                           "binding",
                                           "restoring-replicas+",
                                           "group-restoring-replicas",
                                           "group-restoring-replicas+",
                                           "group-done"};
  for (size_t i = 0; i < points.size(); ++i) {
    CreateTwoClaimDeployment("app-" + std::to_string(i), 2, static_cast<int>(i));
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string name = "app-" + std::to_string(i);
    for (const char* c : {"a-", "b-"})
      ASSERT_TRUE(env_->WaitBound(ns_, Pv(c + name), c + name).ok());
    ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-" + name, 2).ok());
  }
  std::vector<std::pair<pid_t, std::string>> runs;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string name = "app-" + std::to_string(i);
    const std::string prefix = env_->dir() + "/" + ns_ + "-" + name + "-crash";
    runs.push_back({env_->Spawn(Args(name, journal_ + "-" + name),
                                {"FLEXCSI_MIGRATE_CRASH_AFTER=" + points[i]}, prefix),
                    prefix});
  }
  for (size_t i = 0; i < points.size(); ++i) {
    ToolRun crashed = MigrateEnv::Wait(runs[i].first, runs[i].second);
    EXPECT_EQ(crashed.signal, SIGKILL) << points[i] << ": " << crashed.out << crashed.err;
  }
  runs.clear();
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string name = "app-" + std::to_string(i);
    const std::string prefix = env_->dir() + "/" + ns_ + "-" + name + "-resume";
    runs.push_back({env_->Spawn(Args(name, journal_ + "-" + name), {}, prefix), prefix});
  }
  std::vector<std::pair<std::string, std::string>> volumes;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string name = "app-" + std::to_string(i);
    SCOPED_TRACE("killed after " + points[i]);
    ToolRun resumed = MigrateEnv::Wait(runs[i].first, runs[i].second);
    EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    for (const char* c : {"a-", "b-"}) {
      auto live = env_->Get(testing::Pv(Pv(c + name)));
      ASSERT_TRUE(live.ok());
      EXPECT_TRUE((*live)["spec"].contains("csi")) << (*live).dump();
      volumes.push_back({Pv(c + name), c + name});
    }
    auto dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns_).Named(name));
    ASSERT_TRUE(dep.ok());
    EXPECT_EQ((*dep)["spec"]["replicas"], 2);
    // One scale-down for both claims, one restore to the value read before it.
    EXPECT_EQ(ScaleWrites(name), (std::vector<int>{0, 2}));
    auto journal = MigrationJournal::OpenForReading(journal_ + "-" + name);
    ASSERT_TRUE(journal.ok());
    auto group = (*journal)->GetGroup("Deployment " + ns_ + "/" + name);
    ASSERT_TRUE(group.ok() && group->has_value());
    EXPECT_EQ((*group)->step, "group-done");
    EXPECT_EQ((*group)->members.size(), 2u);
    ToolRun status = env_->Run({"status", "--journal", journal_ + "-" + name, "-o", "json"});
    ASSERT_EQ(status.exit_code, 0) << status.err;
    const json st = json::parse(status.out);
    ASSERT_EQ(st["workloadGroups"].size(), 1u) << status.out;
    EXPECT_EQ(st["workloadGroups"][0]["step"], "group-done");
    EXPECT_EQ(st["workloadGroups"][0]["workloads"][0]["replicas"], 2);
    EXPECT_EQ(st["items"][0]["workloadGroup"], "Deployment " + ns_ + "/" + name);
  }
  ExpectNothingLost(*env_, ns_, volumes);
}

// Rolling back one PV of a group while the other is still half-way leaves the workload at 0:
// its pods would otherwise start on a claim that is Lost right now.
TEST_F(MigrateGroupTest, RollbackOfOneMemberWaitsForTheOtherBeforeRestoringReplicas) {
  CreateTwoClaimDeployment("web", 1, 40);
  for (const char* c : {"a-", "b-"})
    ASSERT_TRUE(env_->WaitBound(ns_, Pv(c + std::string("web")), c + std::string("web")).ok());
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-web", 1).ok());
  // Killed the first time a PV reaches binding: one member is there, the other somewhere before.
  ToolRun crashed = env_->Run(Args("web", journal_), {"FLEXCSI_MIGRATE_CRASH_AFTER=binding"});
  EXPECT_EQ(crashed.signal, SIGKILL) << crashed.out << crashed.err;
  auto journal = MigrationJournal::OpenForReading(journal_);
  ASSERT_TRUE(journal.ok());
  auto at_binding = (*journal)->Get(Pv("a-web"));
  ASSERT_TRUE(at_binding.ok() && at_binding->has_value());
  const std::string first = (*at_binding)->step == "binding" ? Pv("a-web") : Pv("b-web");
  const std::string other = first == Pv("a-web") ? Pv("b-web") : Pv("a-web");
  ToolRun rolled = env_->Run({"rollback", "--pv", first, "--yes", "--journal", journal_,
                              "--timeout", "30", "--scale-down"});
  EXPECT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
  auto dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns_).Named("web"));
  ASSERT_TRUE(dep.ok());
  auto other_row = (*journal)->Get(other);
  ASSERT_TRUE(other_row.ok());
  if (other_row->has_value() && (*other_row)->state == RecordState::kInProgress) {
    EXPECT_EQ((*dep)["spec"]["replicas"], 0) << rolled.out;
    EXPECT_NE(rolled.out.find("left at 0"), std::string::npos) << rolled.out;
  }
  // apply finishes the other member; the group then restores the replicas it recorded.
  ToolRun resumed = env_->Run(Args("web", journal_));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns_).Named("web"));
  ASSERT_TRUE(dep.ok());
  EXPECT_EQ((*dep)["spec"]["replicas"], 1);
}

// A group killed before its scale-down (its pods still run), then applied again with one more PV
// of the same Deployment: the group in flight and the PV grouped afresh share one journal row,
// so they run as one group: one scale-down, one restore, one pass through the group's steps.
TEST_F(MigrateGroupTest, AGroupInFlightAndAFreshPvOfItsWorkloadRunAsOneGroup) {
  const auto sources = AllSources();
  std::vector<std::string> claims = {"a-trio", "b-trio", "c-trio"};
  for (size_t k = 0; k < claims.size(); ++k) {
    auto pv = env_->CreateBoundVolume(ns_, Pv(claims[k]), claims[k], sources[k].first,
                                      DistinctSource(sources[k].second, 300 + static_cast<int>(k)),
                                      "Delete", /*wait=*/false);
    ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  }
  for (const auto& c : claims) ASSERT_TRUE(env_->WaitBound(ns_, Pv(c), c).ok());
  ASSERT_TRUE(env_->CreateDeployment(ns_, "trio", claims, 1).ok());
  ToolRun crashed =
      env_->Run(Args("trio", journal_), {"FLEXCSI_MIGRATE_CRASH_AFTER=group-scaling-down"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.out << crashed.err;
  std::vector<std::string> again = Args("trio", journal_);
  again.insert(again.end(), {"--pv", Pv("c-trio")});
  ToolRun resumed = env_->Run(again);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(ScaleWrites("trio"), (std::vector<int>{0, 1}));
  auto journal = MigrationJournal::OpenForReading(journal_);
  ASSERT_TRUE(journal.ok());
  const std::string id = "Deployment " + ns_ + "/trio";
  auto group = (*journal)->GetGroup(id);
  ASSERT_TRUE(group.ok() && group->has_value());
  EXPECT_EQ((*group)->step, "group-done");
  EXPECT_EQ((*group)->members.size(), 3u);
  auto history = (*journal)->History("group:" + id);
  ASSERT_TRUE(history.ok());
  std::vector<std::string> steps;
  for (const auto& h : *history) steps.push_back(h.step);
  // The killed run's group-scaling-down, then the resumed run's four steps, once each.
  EXPECT_EQ(steps,
            (std::vector<std::string>{"group-scaling-down", "group-scaling-down", "group-moving",
                                      "group-restoring-replicas", "group-done"}));
  std::vector<std::pair<std::string, std::string>> volumes;
  for (const auto& c : claims) {
    auto live = env_->Get(testing::Pv(Pv(c)));
    ASSERT_TRUE(live.ok());
    EXPECT_TRUE((*live)["spec"].contains("csi")) << c;
    volumes.push_back({Pv(c), c});
  }
  ExpectNothingLost(*env_, ns_, volumes);
}

// `rollback --all --scale-down` after a grouped apply: the Deployment's two PVs and the
// StatefulSet's four go back in two groups, each workload scaled to 0 once and restored once (the
// audit log shows 0, 2 for the apply and 0, 2 for the rollback, nothing else), to the original
// PVs bound to the same claims.
TEST_F(MigrateGroupTest, RollbackAllScalesEachWorkloadOnce) {
  CreateTwoClaimDeployment("api", 2, 50);
  const auto sources = AllSources();
  std::vector<std::string> sts_claims;
  for (int ordinal = 0; ordinal < 2; ++ordinal) {
    for (const std::string t : {"data", "logs"})
      sts_claims.push_back(t + "-web-" + std::to_string(ordinal));
  }
  for (size_t k = 0; k < sts_claims.size(); ++k) {
    const auto& [field, source] = sources[k % sources.size()];
    auto pv = env_->CreateBoundVolume(ns_, Pv(sts_claims[k]), sts_claims[k], field,
                                      DistinctSource(source, 200 + static_cast<int>(k)),
                                      k % 2 == 0 ? "Delete" : "Retain", /*wait=*/false);
    ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  }
  ASSERT_TRUE(env_->CreateStatefulSet(ns_, "web", {"data", "logs"}, 2).ok());
  std::vector<std::string> claims = sts_claims;
  claims.insert(claims.end(), {"a-api", "b-api"});
  std::map<std::string, json> originals;
  std::vector<std::string> apply = {
      "apply",     "--yes", "--journal",    journal_,     "--rules", env_->rules_path(),
      "--timeout", "30",    "--scale-down", "--parallel", "3"};
  for (const auto& c : claims) {
    auto bound = env_->WaitBound(ns_, Pv(c), c);
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    originals[c] = *bound;
    apply.insert(apply.end(), {"--pv", Pv(c)});
  }
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-api", 2).ok());
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "data-web-0", 1).ok());
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "data-web-1", 1).ok());

  ToolRun applied = env_->Run(apply);
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  // Back up on the CSI PVs: the rollback has pods to scale away.
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-api", 2).ok());
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "data-web-1", 1).ok());

  ToolRun rolled = env_->Run({"rollback", "--all", "--yes", "--journal", journal_, "--timeout",
                              "30", "--scale-down", "--parallel", "3"});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
  EXPECT_EQ(ScaleWrites("api"), (std::vector<int>{0, 2, 0, 2}));
  EXPECT_EQ(ScaleWrites("web", "statefulsets"), (std::vector<int>{0, 2, 0, 2}));

  std::vector<std::pair<std::string, std::string>> volumes;
  for (const auto& c : claims) {
    auto live = env_->Get(testing::Pv(Pv(c)));
    ASSERT_TRUE(live.ok());
    EXPECT_EQ(StripServerFields(*live)["spec"], StripServerFields(originals[c])["spec"]) << c;
    volumes.push_back({Pv(c), c});
  }
  ToolRun status = env_->Run({"status", "--journal", journal_, "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json st = json::parse(status.out);
  ASSERT_EQ(st["workloadGroups"].size(), 2u) << status.out;
  for (const auto& g : st["workloadGroups"]) {
    EXPECT_EQ(g["direction"], "rollback") << status.out;
    EXPECT_EQ(g["step"], "group-done") << status.out;
    EXPECT_EQ(g["members"].size(), g["id"] == "Deployment " + ns_ + "/api" ? 2u : 4u);
  }
  for (const auto& row : st["items"]) EXPECT_EQ(row["state"], "rolled-back") << row.dump();
  EXPECT_TRUE(env_->WaitRunningPods(ns_, "b-api", 2).ok());
  EXPECT_TRUE(env_->WaitRunningPods(ns_, "logs-web-1", 1).ok());
  ExpectNothingLost(*env_, ns_, volumes);
}

// A grouped rollback killed with -9 at every step of its group (and at PV steps in between) and
// run again: the originals come back and the replicas are restored once, to the value read
// before the rollback's scale-down.
TEST_F(MigrateGroupTest, RollbackKilledAtEveryGroupStepResumesAndRestoresReplicasOnce) {
  const std::vector<std::string> points = {"group-scaling-down",
                                           "group-scaling-down+",
                                           "group-moving",
                                           "rb-releasing",
                                           "rb-binding",
                                           "group-restoring-replicas",
                                           "group-restoring-replicas+",
                                           "group-done"};
  auto name_of = [](size_t i) { return "rb-" + std::to_string(i); };
  for (size_t i = 0; i < points.size(); ++i) {
    CreateTwoClaimDeployment(name_of(i), 2, 20 + static_cast<int>(i));
  }
  std::map<std::string, json> originals;
  for (size_t i = 0; i < points.size(); ++i) {
    for (const char* c : {"a-", "b-"}) {
      auto bound = env_->WaitBound(ns_, Pv(c + name_of(i)), c + name_of(i));
      ASSERT_TRUE(bound.ok());
      originals[Pv(c + name_of(i))] = *bound;
    }
    ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-" + name_of(i), 2).ok());
  }
  // Runs `args_of(i)` for every scenario at once, each with `env_of(i)`; waits for all.
  auto run_all = [&](auto args_of, auto env_of, const std::string& what) {
    std::vector<std::pair<pid_t, std::string>> pids;
    for (size_t i = 0; i < points.size(); ++i) {
      const std::string prefix = env_->dir() + "/" + ns_ + "-" + name_of(i) + "-" + what;
      pids.push_back({env_->Spawn(args_of(i), env_of(i), prefix), prefix});
    }
    std::vector<ToolRun> runs;
    for (const auto& [pid, prefix] : pids) runs.push_back(MigrateEnv::Wait(pid, prefix));
    return runs;
  };
  auto journal_of = [&](size_t i) { return journal_ + "-" + name_of(i); };
  auto no_env = [](size_t) { return std::vector<std::string>{}; };
  auto applied =
      run_all([&](size_t i) { return Args(name_of(i), journal_of(i)); }, no_env, "apply");
  for (size_t i = 0; i < points.size(); ++i) {
    ASSERT_EQ(applied[i].exit_code, 0) << applied[i].out << applied[i].err;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(env_->WaitRunningPods(ns_, "a-" + name_of(i), 2).ok());
  }
  auto crashed =
      run_all([&](size_t i) { return RollbackArgs(name_of(i), journal_of(i)); },
              [&](size_t i) {
                return std::vector<std::string>{"FLEXCSI_MIGRATE_CRASH_AFTER=" + points[i]};
              },
              "crash");
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(crashed[i].signal, SIGKILL) << points[i] << ": " << crashed[i].out << crashed[i].err;
  }
  auto resumed =
      run_all([&](size_t i) { return RollbackArgs(name_of(i), journal_of(i)); }, no_env, "resume");
  std::vector<std::pair<std::string, std::string>> volumes;
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string name = name_of(i);
    SCOPED_TRACE("rollback killed after " + points[i]);
    EXPECT_EQ(resumed[i].exit_code, 0) << resumed[i].out << resumed[i].err;
    for (const char* c : {"a-", "b-"}) {
      auto live = env_->Get(testing::Pv(Pv(c + name)));
      ASSERT_TRUE(live.ok());
      EXPECT_EQ(StripServerFields(*live)["spec"],
                StripServerFields(originals[Pv(c + name)])["spec"]);
      volumes.push_back({Pv(c + name), c + name});
    }
    auto dep = env_->Get(ResourcePath::Group("apps/v1", "deployments", ns_).Named(name));
    ASSERT_TRUE(dep.ok());
    EXPECT_EQ((*dep)["spec"]["replicas"], 2);
    // Apply: one scale-down and one restore; the rollback: the same, killed or not.
    EXPECT_EQ(ScaleWrites(name), (std::vector<int>{0, 2, 0, 2}));
    auto journal = MigrationJournal::OpenForReading(journal_of(i));
    ASSERT_TRUE(journal.ok());
    auto group = (*journal)->GetGroup("Deployment " + ns_ + "/" + name);
    ASSERT_TRUE(group.ok() && group->has_value());
    EXPECT_EQ((*group)->direction, "rollback");
    EXPECT_EQ((*group)->step, "group-done");
    auto history = (*journal)->History("group:Deployment " + ns_ + "/" + name);
    ASSERT_TRUE(history.ok());
    EXPECT_EQ(history->back().direction, "rollback");
  }
  ExpectNothingLost(*env_, ns_, volumes);
}

}  // namespace
}  // namespace flexcsi::migrate::testing
