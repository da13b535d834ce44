// `flexcsi migrate rollback` holds to apply's in-use rule: a claim that pods still use is refused
// before anything is written, or, with --scale-down, its owners are scaled to zero, the volume
// is waited for until detached, and the recorded replicas come back at the end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "migrate/cluster_objects.h"
#include "tests/migrate/migrate_test_env.h"

namespace flexcsi::migrate::testing {
namespace {

using kube::ResourcePath;

ResourcePath Deployment(const std::string& ns, const std::string& name) {
  return ResourcePath::Group("apps/v1", "deployments", ns).Named(name);
}

class MigrateRollbackTest : public MigrateEnvTest {
 protected:
  std::vector<std::string> Command(const std::string& command, std::vector<std::string> extra) {
    std::vector<std::string> args = {command, "--yes", "--journal", journal_, "--timeout", "20"};
    if (command == "apply") args.insert(args.end(), {"--rules", env_->rules_path()});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // An EBS PV bound to claim "data", used by Deployment `deployment`, moved to CSI with
  // --scale-down; returns once the Deployment's pods run again on the CSI PV.
  void MovedWithWorkloadRunning(const std::string& pv, const std::string& deployment,
                                int replicas) {
    auto created =
        env_->CreateBoundVolume(ns_, pv, "data", "awsElasticBlockStore",
                                DistinctSource(AllSources()[0].second, next_disk_++), "Delete");
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    original_ = *created;
    ASSERT_TRUE(env_->CreateDeployment(ns_, deployment, "data", replicas).ok());
    ToolRun applied = env_->Run(Command("apply", {"--pv", pv, "--scale-down"}));
    ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
    ASSERT_TRUE(env_->WaitRunningPods(ns_, "data", replicas).ok());
  }

  static int next_disk_;  // two tests never share a disk (its attachment would hold the other)
  json original_;
};
int MigrateRollbackTest::next_disk_ = 0;

TEST_F(MigrateRollbackTest, ClaimInUseIsRefusedNamingItsPodsAndNothingIsWritten) {
  const std::string pv = ns_ + "-pv";
  MovedWithWorkloadRunning(pv, "web", 1);
  auto pv_before = env_->Get(Pv(pv));
  auto claim_before = env_->Get(Claim(ns_, "data"));
  ASSERT_TRUE(pv_before.ok() && claim_before.ok());
  auto audit_before = env_->Audit();
  ASSERT_TRUE(audit_before.ok());
  const size_t seen = (*audit_before)["items"].size();

  ToolRun run = env_->Run(Command("rollback", {"--pv", pv}));
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("refused"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(Deployment/web)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(ns_ + "/web-"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--scale-down"), std::string::npos) << run.out;

  auto audit_after = env_->Audit();
  ASSERT_TRUE(audit_after.ok());
  for (size_t k = seen; k < (*audit_after)["items"].size(); ++k) {
    const json& e = (*audit_after)["items"][k];
    EXPECT_NE(e.value("user", ""), "admin") << "a write by the refused rollback: " << e.dump();
  }
  auto pv_after = env_->Get(Pv(pv));
  auto claim_after = env_->Get(Claim(ns_, "data"));
  ASSERT_TRUE(pv_after.ok() && claim_after.ok());
  EXPECT_EQ((*pv_after)["metadata"]["resourceVersion"],
            (*pv_before)["metadata"]["resourceVersion"]);
  EXPECT_EQ((*claim_after)["metadata"]["resourceVersion"],
            (*claim_before)["metadata"]["resourceVersion"]);
  // The journal still says moved: not even the direction was turned.
  ToolRun status = env_->Run({"status", "--journal", journal_, "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  json st = json::parse(status.out);
  ASSERT_EQ(st["items"].size(), 1u);
  EXPECT_EQ(st["items"][0]["state"], "moved") << status.out;
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

TEST_F(MigrateRollbackTest, ScaleDownRollsBackThenRestoresReplicas) {
  const std::string pv = ns_ + "-pv";
  MovedWithWorkloadRunning(pv, "db", 2);
  // Changed after apply: rollback restores what it finds. A patch, not a read-modify-write:
  // the fake's controllers update the Deployment's status concurrently (a PUT got 409 here).
  auto scaled = env_->client().Patch(Deployment(ns_, "db"), kube::PatchType::kMerge,
                                     json{{"spec", {{"replicas", 3}}}});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  ASSERT_TRUE(env_->WaitRunningPods(ns_, "data", 3).ok());

  ToolRun run = env_->Run(Command("rollback", {"--pv", pv, "--scale-down"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto live = env_->Get(Pv(pv));
  ASSERT_TRUE(live.ok());
  EXPECT_FALSE((*live)["spec"].contains("csi")) << live->dump();
  EXPECT_EQ((*live)["spec"]["awsElasticBlockStore"], original_["spec"]["awsElasticBlockStore"]);
  EXPECT_EQ((*live)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  auto dep = env_->Get(Deployment(ns_, "db"));
  ASSERT_TRUE(dep.ok());
  EXPECT_EQ((*dep)["spec"]["replicas"], 3);
  EXPECT_TRUE(env_->WaitRunningPods(ns_, "data", 3).ok());
  ToolRun status = env_->Run({"status", "--journal", journal_});
  EXPECT_NE(status.out.find("Deployment/db=3"), std::string::npos) << status.out;

  // The scale to 0 came before the release of the CSI PV, and the release only once the node
  // had let go of the volume.
  auto audit = env_->Audit();
  ASSERT_TRUE(audit.ok());
  int64_t scaled_down = -1, released = -1;
  const std::string claim_uid = Str(original_, "/spec/claimRef/uid"_json_pointer);
  for (const auto& e : (*audit)["items"]) {
    if (e.value("user", "") != "admin") continue;
    const int64_t seq = e.value("seq", int64_t{-1});
    if (e.value("subresource", "") == "scale" && e.value("name", "") == "db" &&
        e.value("/object/spec/replicas"_json_pointer, -1) == 0 && scaled_down < 0) {
      scaled_down = seq;
    }
    const bool csi_pv_release = e.value("resource", "") == "persistentvolumes" &&
                                e.value("name", "") == pv && e.value("verb", "") == "update" &&
                                e.contains("/object/spec/csi"_json_pointer) &&
                                Str(e, "/object/spec/claimRef/uid"_json_pointer) != claim_uid;
    if (csi_pv_release && released < 0) released = seq;
  }
  ASSERT_GT(released, 0);
  EXPECT_GT(released, scaled_down);
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

// A PV flexcsi-controller provisioned carries external-provisioner's finalizer; the CSI PV apply
// makes does not inherit it, and a csi-provisioner v3 honouring the reclaim policy may add it to
// that PV. Each move deletes a Retain PV, whose volume no provisioner deletes: with nobody left to
// remove that finalizer (flexcsi-controller stopped; csi-provisioner v1.2.2, the 1.14 era's, does
// not know it) the delete must not wait for it for good, either way.
TEST_F(MigrateRollbackTest, ProvisionerFinalizerHoldsNeitherApplyNorRollback) {
  const std::string pv = ns_ + "-pv";
  const std::string finalizer = "external-provisioner.volume.kubernetes.io/finalizer";
  auto add_finalizer = [&](const json& object) {
    json finalizers = object["metadata"].value("finalizers", json::array());
    finalizers.push_back(finalizer);
    auto marked = env_->client().Patch(Pv(pv), kube::PatchType::kMerge,
                                       json{{"metadata", {{"finalizers", finalizers}}}});
    ASSERT_TRUE(marked.ok()) << marked.status().ToString();
  };
  auto created =
      env_->CreateBoundVolume(ns_, pv, "data", "awsElasticBlockStore",
                              DistinctSource(AllSources()[0].second, next_disk_++), "Delete");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  add_finalizer(*created);

  ToolRun applied = env_->Run(Command("apply", {"--pv", pv}));
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  auto moved = env_->Get(Pv(pv));
  ASSERT_TRUE(moved.ok());
  ASSERT_TRUE((*moved)["spec"].contains("csi")) << moved->dump();
  EXPECT_EQ((*moved)["metadata"].value("finalizers", json::array()).dump().find(finalizer),
            std::string::npos)
      << moved->dump();
  add_finalizer(*moved);

  ToolRun rolled = env_->Run(Command("rollback", {"--pv", pv}));
  ASSERT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
  auto back = env_->Get(Pv(pv));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE((*back)["spec"].contains("csi")) << back->dump();
  EXPECT_EQ((*back)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  ExpectNothingLost(*env_, ns_, {{pv, "data"}});
}

}  // namespace
}  // namespace flexcsi::migrate::testing
