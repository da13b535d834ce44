// flexcsi-controller killed with SIGKILL right after each step of provisioning and deletion,
// then restarted: every claim ends with exactly one volume, no storage is left without a PV,
// and a claim deleted while the controller was down leaves nothing behind. And leader
// election: two instances, the leader killed, the other takes over.
#include <set>

#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;

class Crash : public WorldTest {};

ControllerFlags CrashAfter(const std::string& step) {
  ControllerFlags f;
  f.env["FLEXCSI_CONTROLLER_CRASH_AFTER"] = step;
  return f;
}

std::set<std::string> PVVolumeIds(ControllerWorld& w) {
  std::set<std::string> ids;
  auto list = w.api().List(kube::ResourcePath::Core("persistentvolumes"));
  EXPECT_TRUE(list.ok());
  for (const auto& pv : (*list)["items"]) {
    ids.insert(pv["spec"]["flexVolume"]["options"].value("volumeID", ""));
  }
  return ids;
}

// Every driver volume belongs to exactly one PV and vice versa.
void ExpectOneToOne(ControllerWorld& w) {
  const auto volumes = w.DriverVolumes();
  const auto ids = PVVolumeIds(w);
  for (const auto& [id, bytes] : volumes) {
    EXPECT_EQ(ids.count(id), 1u) << "volume " << id << " has no PV (leaked storage)";
  }
  for (const auto& id : ids) {
    EXPECT_EQ(volumes.count(id), 1u) << "PV names volume " << id << ", which does not exist";
  }
}

TEST_F(Crash, KillAfterEachProvisioningStepYieldsOneVolume) {
  W().CreateNamespace("crash");
  W().CreateStorageClass("crash");
  int n = 0;
  for (const char* step : {"journal-begin", "create-volume", "pv-create"}) {
    SCOPED_TRACE(step);
    const std::string claim = "c" + std::to_string(n++);
    ASSERT_TRUE(W().StartController(0, CrashAfter(step)));
    W().CreateClaim("crash", claim, "16Mi", "crash");
    ASSERT_TRUE(W().WaitControllerExit(0, 20s)) << "crash point " << step << " never reached";
    ASSERT_TRUE(W().StartController(0));
    ASSERT_TRUE(W().WaitBound("crash", claim)) << W().GetClaim("crash", claim).dump();
    W().KillController(0, SIGTERM);
    ExpectOneToOne(W());
  }
}

TEST_F(Crash, ClaimDeletedWhileControllerIsDownLeavesNoVolume) {
  W().CreateNamespace("orphan");
  W().CreateStorageClass("orphan");
  const size_t before = W().DriverVolumes().size();
  ASSERT_TRUE(W().StartController(0, CrashAfter("create-volume")));
  W().CreateClaim("orphan", "brief", "16Mi", "orphan");
  ASSERT_TRUE(W().WaitControllerExit(0, 20s));
  EXPECT_EQ(W().DriverVolumes().size(), before + 1) << "the crash point is after CreateVolume";
  ASSERT_TRUE(W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", "orphan")
                                   .Named("brief")).ok());
  ASSERT_TRUE(W().WaitFor([&] { return W().GetClaim("orphan", "brief").is_null(); }));
  ASSERT_TRUE(W().StartController(0));
  EXPECT_TRUE(W().WaitFor([&] { return W().DriverVolumes().size() == before; }))
      << "the journal did not lead to the orphaned volume";
  ExpectOneToOne(W());
}

TEST_F(Crash, KillDuringDeletionNeverOrphansOrDoubleDeletes) {
  W().CreateNamespace("delcrash");
  W().CreateStorageClass("delcrash");
  int n = 0;
  for (const char* step : {"delete-volume", "pv-delete"}) {
    SCOPED_TRACE(step);
    const std::string claim = "d" + std::to_string(n++);
    ASSERT_TRUE(W().StartController(0));
    W().CreateClaim("delcrash", claim, "16Mi", "delcrash");
    ASSERT_TRUE(W().WaitBound("delcrash", claim));
    const std::string pv = W().GetClaim("delcrash", claim)["spec"]["volumeName"];
    W().KillController(0, SIGTERM);
    ASSERT_TRUE(W().StartController(0, CrashAfter(step)));
    ASSERT_TRUE(W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", "delcrash")
                                     .Named(claim)).ok());
    ASSERT_TRUE(W().WaitControllerExit(0, 20s));
    ASSERT_TRUE(W().StartController(0));
    EXPECT_TRUE(W().WaitFor([&] { return W().GetPV(pv).is_null(); })) << W().GetPV(pv).dump();
    W().KillController(0, SIGTERM);
    ExpectOneToOne(W());
  }
}

class Leader : public WorldTest {};

// external-provisioner's lock for the driver (controller/provisioner_lock.h), written out here
// so that a change of the name fails this test.
constexpr char kLockName[] = "loopback-csi-flexcsi-io";

std::string Holder(ControllerWorld& w, int* transitions = nullptr) {
  auto leases = w.api().List(
      kube::ResourcePath::Group("coordination.k8s.io/v1", "leases", "default"));
  if (!leases.ok()) return "";
  for (const auto& l : (*leases)["items"]) {
    if (l["metadata"].value("name", "") != kLockName) continue;
    if (transitions) *transitions = l["spec"].value("leaseTransitions", 0);
    return l["spec"].value("holderIdentity", "");
  }
  return "";
}

TEST_F(Leader, FailoverToTheSecondInstanceAfterKill9) {
  W().CreateNamespace("ha");
  W().CreateStorageClass("ha");
  ControllerFlags f;
  f.extra = {"--leader-election", "--leader-election-lease-duration", "2",
             "--leader-election-renew-deadline", "1.5", "--leader-election-retry-period", "0.25"};
  ASSERT_TRUE(W().StartController(0, f));
  ASSERT_TRUE(W().WaitFor([&] { return Holder(W()) == "controller-0"; }, 10s)) << Holder(W());
  ASSERT_TRUE(W().StartController(1, f));
  W().CreateClaim("ha", "first", "16Mi", "ha");
  ASSERT_TRUE(W().WaitBound("ha", "first"));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Holder(W()), "controller-0") << "the standby must not take a held lease";

  W().KillController(0, SIGKILL);
  W().CreateClaim("ha", "second", "16Mi", "ha");
  ASSERT_TRUE(W().WaitBound("ha", "second", 20s));
  int transitions = 0;
  EXPECT_EQ(Holder(W(), &transitions), "controller-1");
  EXPECT_GE(transitions, 1);
  // Only the leader acted: the standby's log shows no provisioning before it led.
  const std::string log1 = W().ControllerLog(1);
  const auto led = log1.find("became leader");
  ASSERT_NE(led, std::string::npos) << log1;
  EXPECT_EQ(log1.substr(0, led).find("ProvisioningSucceeded"), std::string::npos);
  ExpectOneToOne(W());
}

TEST_F(Leader, ConfigMapLockWhereLeasesAreAbsent) {
  W().CreateNamespace("cm");
  W().CreateStorageClass("cm");
  ControllerFlags f;
  f.extra = {"--leader-election", "--leader-election-lock", "configmap",
             "--leader-election-retry-period", "0.25"};
  ASSERT_TRUE(W().StartController(2, f));
  W().CreateClaim("cm", "x", "16Mi", "cm");
  ASSERT_TRUE(W().WaitBound("cm", "x"));
  auto cms = W().api().List(kube::ResourcePath::Core("configmaps", "default"));
  ASSERT_TRUE(cms.ok());
  bool found = false;
  for (const auto& cm : (*cms)["items"]) {
    const auto ann = cm["metadata"].value("annotations", nlohmann::json::object());
    if (!ann.contains("control-plane.alpha.kubernetes.io/leader")) continue;
    auto record = nlohmann::json::parse(ann["control-plane.alpha.kubernetes.io/leader"].get<std::string>());
    EXPECT_EQ(record["holderIdentity"], "controller-2");
    EXPECT_GT(record["leaseDurationSeconds"].get<int>(), 0);
    found = true;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace flexcsi::controller_test
