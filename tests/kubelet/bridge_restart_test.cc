// The bridge daemon is restarted between two calls of the attachable life cycle, at every
// position: unmount, unmountdevice and detach carry no options, so the bridge must find what it
// needs in its state database after a restart.
#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

class BridgeRestartTest : public ::testing::TestWithParam<Step> {};

TEST_P(BridgeRestartTest, LifecycleCompletesAcrossBridgeRestart) {
  TestEnvironment env;
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  std::string id = env.CreateVolume("vol-restart", 64 * kMiB, "ext4");
  ASSERT_FALSE(id.empty());
  AttachableLifecycle life(&env.caller(), env.VolumeSource("pv-restart", id), env.Pod("rs-0"),
                           env.Pod("rs-1"));
  for (Step s : AllSteps()) {
    if (s == GetParam()) {
      ASSERT_TRUE(env.RestartBridge(SIGKILL)) << "restart before " << StepName(s);
      EXPECT_EQ("", env.RecordsVersusMountTable()) << "after restart, before " << StepName(s);
    }
    ASSERT_DRIVER_OK(life.Run(s)) << StepName(s);
    if (s == Step::kMountPodB) {
      ASSERT_TRUE(WriteTextFile(life.PodDir(Step::kMountPodA) + "/f", "z"));
      EXPECT_EQ("z", ReadTextFile(life.PodDir(Step::kMountPodB) + "/f"));
    }
  }
  ExpectNothingLeaked(env);
}

// Restart before every step but the first (a restart before attach tests nothing).
INSTANTIATE_TEST_SUITE_P(BeforeStep, BridgeRestartTest,
                         ::testing::Values(Step::kWaitForAttach, Step::kMountDevice,
                                           Step::kMountPodA, Step::kMountPodB, Step::kUnmountPodA,
                                           Step::kUnmountPodB, Step::kUnmountDevice, Step::kDetach),
                         [](const ::testing::TestParamInfo<Step>& info) {
                           return std::string(StepName(info.param));
                         });

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
