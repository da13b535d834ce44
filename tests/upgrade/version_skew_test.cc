// Version skew during a DaemonSet rollout (issue #37): kubelet may exec a newly copied flexexec
// against the previous release's bridge, or the previous flexexec against the new bridge, and a
// volume mounted before the rollout is torn down after it. Every FlexVolume call must work
// across the skew or fail with a Failure reply that kubelet retries until the rollout completes;
// no mount, loop device or bridge record may be lost or orphaned.
#include <cstdio>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/upgrade/upgrade_test_util.h"

namespace flexcsi {
namespace upgrade {
namespace {

using kubelet::AttachableLifecycle;
using kubelet::Step;

constexpr int64_t kSkewMiB = 1024 * 1024;
// xfs grows online without CAP_SYS_RESOURCE (tests/kubelet/README.md); its minimum is 300 MiB.
constexpr int64_t kSkewOldBytes = 320 * kSkewMiB;
constexpr int64_t kSkewNewBytes = 480 * kSkewMiB;

struct Pairing {
  Version flexexec;
  Version bridge;
  const char* name;
};

void PrintTo(const Pairing& pairing, std::ostream* os) { *os << pairing.name; }

class SkewedPairingTest : public UpgradeTest, public ::testing::WithParamInterface<Pairing> {};

// All twelve calls, one life cycle, with the pairing's flexexec and bridge. A call that fails
// (cleanly) is retried as kubelet would, once the rollout has completed (both current); the
// skew is then restored for the next call.
TEST_P(SkewedPairingTest, EveryCallWorksOrFailsCleanlyUntilTheRolloutCompletes) {
  const Pairing pairing = GetParam();
  auto env = StartWorld(pairing.flexexec, pairing.bridge);
  ASSERT_TRUE(env);
  kubelet::KubeletCaller& caller = env->caller();
  const std::string id = env->CreateVolume("vol-skew", kSkewOldBytes, "xfs");
  ASSERT_FALSE(id.empty());
  kubelet::FlexVolumeSource v = env->VolumeSource("pv-skew", id);
  v.fs_type = "xfs";
  const kubelet::PodInfo pod = env->Pod("skew-0");
  const std::string pod_dir = caller.PodVolumeDirFor(pod, v);
  std::string device;  // what attach and waitforattach answer, as the node status keeps it

  struct Call {
    const char* name;
    std::function<DriverResult()> run;
  };
  const std::vector<Call> calls = {
      {"init", [&] { return caller.Init(); }},
      {"getvolumename",
       [&] {
         return caller.Exec({"getvolumename", kubelet::BaseOptionsJson(v)});
       }},
      {"attach",
       [&] {
         DriverResult r = caller.Attach(v);
         if (r.success()) device = r.reply.value("device", "");
         return r;
       }},
      {"isattached", [&] { return caller.IsAttached(v); }},
      {"waitforattach",
       [&] {
         DriverResult r = caller.WaitForAttach(device, v);
         if (r.success()) device = r.reply.value("device", device);
         return r;
       }},
      {"mountdevice", [&] { return caller.MountDevice(v, device); }},
      {"mount", [&] { return caller.SetUp(v, pod); }},
      {"expandvolume", [&] { return caller.ExpandVolume(v, kSkewNewBytes, kSkewOldBytes); }},
      {"expandfs",
       [&] { return caller.ExpandFs(v, device, pod_dir, kSkewNewBytes, kSkewOldBytes); }},
      {"unmount", [&] { return caller.TearDown(v, pod); }},
      {"unmountdevice", [&] { return caller.UnmountDevice(v); }},
      {"detach", [&] { return caller.Detach(v); }},
  };
  for (const Call& call : calls) {
    DriverResult r = call.run();
    ASSERT_TRUE(SuccessOrCleanFailure(call.name, r));
    std::printf("%s, %s: %s\n", pairing.name, call.name, Reply(r).c_str());
    if (r.outcome == DriverResult::Outcome::kFailure) {
      ASSERT_TRUE(RollBridge(*env, Version::kCurrent));
      ASSERT_TRUE(RollFlexexec(*env, Version::kCurrent));
      ASSERT_DRIVER_OK(call.run()) << call.name << " retried after the rollout";
      ASSERT_TRUE(RollBridge(*env, pairing.bridge));
      ASSERT_TRUE(RollFlexexec(*env, pairing.flexexec));
    }
    ExpectRecordsMatchMounts(*env, std::string("after ") + call.name);
    if (std::string(call.name) == "isattached" && r.success()) {
      EXPECT_EQ(true, r.reply.value("attached", false)) << r.Describe();
    }
    if (std::string(call.name) == "mount") {
      ASSERT_TRUE(kubelet::WriteTextFile(pod_dir + "/kept", "across the skew"));
    }
    if (std::string(call.name) == "expandfs") {
      EXPECT_GT(kubelet::TotalBytes(pod_dir), static_cast<uint64_t>(kSkewOldBytes));
      EXPECT_EQ("across the skew", kubelet::ReadTextFile(pod_dir + "/kept"));
    }
  }
  kubelet::ExpectNothingLeaked(*env);
}

INSTANTIATE_TEST_SUITE_P(Skew, SkewedPairingTest,
                         ::testing::Values(Pairing{Version::kPrevious, Version::kCurrent,
                                                   "PreviousFlexexecCurrentBridge"},
                                           Pairing{Version::kCurrent, Version::kPrevious,
                                                   "CurrentFlexexecPreviousBridge"}),
                         [](const ::testing::TestParamInfo<Pairing>& info) {
                           return std::string(info.param.name);
                         });

struct Rollout {
  Version from;
  Version to;
  bool bridge_first;  // the DaemonSet's bridge container restarts before the installer's copy
  const char* name;
};

void PrintTo(const Rollout& rollout, std::ostream* os) { *os << rollout.name; }

class MountedAcrossRolloutTest : public UpgradeTest,
                                 public ::testing::WithParamInterface<Rollout> {};

std::set<std::string> MountSet(const TestEnvironment& env) {
  auto mounts = env.MountsUnderRoot();
  return {mounts.begin(), mounts.end()};
}

// Two pods use a volume mounted by `from`; the rollout replaces one half, pod A's unmount runs in
// the skew, the other half follows, and pod B, the device and the attachment are torn down by
// `to`. Mounts and records survive each half; a failed unmount in the skew is retried after it.
TEST_P(MountedAcrossRolloutTest, VolumeMountedBeforeIsTornDownAfter) {
  const Rollout rollout = GetParam();
  auto env = StartWorld(rollout.from, rollout.from);
  ASSERT_TRUE(env);
  ASSERT_DRIVER_OK(env->caller().Init());
  const std::string id = env->CreateVolume("vol-rollout", 64 * kSkewMiB, "ext4");
  ASSERT_FALSE(id.empty());
  AttachableLifecycle life(&env->caller(), env->VolumeSource("pv-rollout", id),
                           env->Pod("rollout-a"), env->Pod("rollout-b"));
  for (Step s : {Step::kAttach, Step::kWaitForAttach, Step::kMountDevice, Step::kMountPodA,
                 Step::kMountPodB}) {
    ASSERT_DRIVER_OK(life.Run(s)) << StepName(s);
  }
  ASSERT_TRUE(kubelet::WriteTextFile(life.PodDir(Step::kMountPodA) + "/kept", "rolled"));
  const std::set<std::string> mounted = MountSet(*env);
  const size_t records = env->BridgeRecordCount();

  // While no bridge runs, kubelet's calls fail cleanly and are retried.
  auto call_without_bridge = [&] {
    DriverResult gap = env->caller().IsAttached(life.volume());
    EXPECT_FALSE(gap.success()) << gap.Describe();
    EXPECT_TRUE(SuccessOrCleanFailure("isattached without a bridge", gap));
  };
  auto roll_half = [&](bool bridge) {
    return bridge ? RollBridge(*env, rollout.to, call_without_bridge)
                  : RollFlexexec(*env, rollout.to);
  };
  ASSERT_TRUE(roll_half(rollout.bridge_first));
  EXPECT_EQ(mounted, MountSet(*env)) << "the first half of the rollout changed the mounts";
  EXPECT_EQ(records, env->BridgeRecordCount()) << "the first half changed the bridge's records";
  ExpectRecordsMatchMounts(*env, "after the first half");
  EXPECT_EQ("rolled", kubelet::ReadTextFile(life.PodDir(Step::kMountPodB) + "/kept"));

  DriverResult attached = env->caller().IsAttached(life.volume());
  EXPECT_TRUE(SuccessOrCleanFailure("isattached", attached));
  std::printf("%s, isattached in the skew: %s\n", rollout.name, Reply(attached).c_str());
  DriverResult unmount_a = life.Run(Step::kUnmountPodA);
  ASSERT_TRUE(SuccessOrCleanFailure("unmount", unmount_a));
  std::printf("%s, unmount in the skew: %s\n", rollout.name, Reply(unmount_a).c_str());
  ExpectRecordsMatchMounts(*env, "after unmount in the skew");

  ASSERT_TRUE(roll_half(!rollout.bridge_first));
  ASSERT_DRIVER_OK(env->caller().Init());  // kubelet probes the replaced executable
  if (!unmount_a.success()) {
    ASSERT_DRIVER_OK(life.Run(Step::kUnmountPodA)) << "retried after the rollout";
  }
  for (Step s : {Step::kUnmountPodB, Step::kUnmountDevice, Step::kDetach}) {
    ASSERT_DRIVER_OK(life.Run(s)) << StepName(s) << " after the rollout";
  }
  kubelet::ExpectNothingLeaked(*env);
}

INSTANTIATE_TEST_SUITE_P(
    Rollouts, MountedAcrossRolloutTest,
    ::testing::Values(Rollout{Version::kPrevious, Version::kCurrent, true, "UpgradeBridgeFirst"},
                      Rollout{Version::kPrevious, Version::kCurrent, false, "UpgradeFlexexecFirst"},
                      Rollout{Version::kCurrent, Version::kPrevious, true, "DowngradeBridgeFirst"},
                      Rollout{Version::kCurrent, Version::kPrevious, false,
                              "DowngradeFlexexecFirst"}),
    [](const ::testing::TestParamInfo<Rollout>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace upgrade
}  // namespace flexcsi
