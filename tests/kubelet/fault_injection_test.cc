// kill -9 of flexcsi-bridge at random moments of many attachable life cycles, including in the
// middle of a call. After each kill the bridge is restarted and the failed call retried the way
// kubelet retries (same call, growing backoff), and afterwards nothing may be leaked and the
// bridge's records must match the kernel's mount table.
//
// Seeded (FLEXCSI_FAULT_SEED overrides the default), so a failure can be replayed. Run for the
// default driver shape and for a driver whose NodeStageVolume mounts nothing, where the bridge
// mounts its marker at the device mount path (more windows for a kill: between NodeStage and the
// marker, between NodeUnstage and its removal).
#include <cstdlib>
#include <random>
#include <thread>

#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// kubelet retries a failed call for as long as it takes; the bound only keeps a call that never
// succeeds from stalling the run. Generous: a busy machine slows every retry.
constexpr std::chrono::seconds kRetryBound(120);

struct FaultShape {
  const char* name;
  bool stage_without_mount;
  int lifecycles;
};

uint32_t Seed() {
  const char* s = std::getenv("FLEXCSI_FAULT_SEED");
  return s && *s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : 20261121u;
}

class FaultInjectionTest : public ::testing::TestWithParam<FaultShape> {};

TEST_P(FaultInjectionTest, KilledBridgeLeaksNothing) {
  const uint32_t seed = Seed();
  SCOPED_TRACE("FLEXCSI_FAULT_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const int kLifecycles = GetParam().lifecycles;
  EnvOptions options;
  options.csi_stage_without_mount = GetParam().stage_without_mount;
  TestEnvironment env(options);
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back(env.CreateVolume("vol-fault-" + std::to_string(i), 64 * kMiB, "ext4"));
    ASSERT_FALSE(ids.back().empty());
  }

  int kills = 0, interrupted = 0, mid_call = 0, retries = 0;
  for (int cycle = 0; cycle < kLifecycles; ++cycle) {
    SCOPED_TRACE("lifecycle " + std::to_string(cycle));
    const std::string& id = ids[cycle % ids.size()];
    AttachableLifecycle life(
        &env.caller(), env.VolumeSource("pv-fault-" + std::to_string(cycle % 2), id),
        env.Pod("f" + std::to_string(cycle) + "a"), env.Pod("f" + std::to_string(cycle) + "b"));
    const auto& steps = AllSteps();
    // Each step is a kill point with probability 1/4 (about two per life cycle), each kill
    // after 0-15 ms: 0 kills before the call reaches the bridge, the calls take 5-30 ms, so
    // most kills land inside a call and some just after it.
    std::vector<int> kill_after_ms(steps.size(), -1);
    for (int& k : kill_after_ms) {
      if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
        k = std::uniform_int_distribution<int>(0, 15)(rng);
      }
    }

    for (size_t i = 0; i < steps.size(); ++i) {
      const Step s = steps[i];
      const int kill_ms = kill_after_ms[i];
      DriverResult r;
      if (kill_ms >= 0) {
        std::thread killer([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(kill_ms));
          env.KillBridge(SIGKILL);
        });
        r = life.Run(s);
        killer.join();
        ++kills;
        if (!r.success()) ++interrupted;
        // The bridge had the request and died before answering: the interesting case.
        if (r.error.find("without answering") != std::string::npos) ++mid_call;
        ASSERT_TRUE(env.StartBridge()) << "restart after kill during " << StepName(s);
        // Start-up reconciliation has rolled back or finished whatever the kill interrupted.
        EXPECT_EQ("", env.RecordsVersusMountTable())
            << "right after the restart that followed a kill during " << StepName(s) << "+"
            << kill_ms << " ms";
      } else {
        r = life.Run(s);
      }
      // kubelet's retry: the same operation again, with exponential backoff from 500 ms
      // (shortened here; the bridge must not depend on the delay).
      int delay_ms = 50, attempts = 1;
      const auto give_up = std::chrono::steady_clock::now() + kRetryBound;
      for (; !r.success() && std::chrono::steady_clock::now() < give_up; ++attempts) {
        ++retries;
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        delay_ms = std::min(delay_ms * 2, 1000);
        r = life.Run(s);
      }
      ASSERT_TRUE(r.success()) << StepName(s) << " still failing after " << attempts
                               << " attempts in " << kRetryBound.count() << " s (killed after " << kill_ms
                               << " ms, -1: no kill): " << r.Describe();
      if (s == Step::kMountPodB) {
        ASSERT_TRUE(WriteTextFile(life.PodDir(Step::kMountPodA) + "/f", "c"));
        EXPECT_EQ("c", ReadTextFile(life.PodDir(Step::kMountPodB) + "/f"));
      }
    }
    ASSERT_EQ("", env.RecordsVersusMountTable());
    ASSERT_TRUE(env.MountsUnderRoot().empty()) << env.MountsUnderRoot().front();
  }
  std::printf(
      "fault injection: %d lifecycles, %d kills, %d failed the call (%d while the bridge held "
      "the request), %d retries (seed %u)\n",
      kLifecycles, kills, interrupted, mid_call, retries, seed);
  ExpectNothingLeaked(env);
}

void PrintTo(const FaultShape& shape, std::ostream* os) { *os << shape.name; }

INSTANTIATE_TEST_SUITE_P(Shape, FaultInjectionTest,
                         ::testing::Values(FaultShape{"DriverMount", false, 20},
                                           FaultShape{"RecordOnly", true, 10}),
                         [](const ::testing::TestParamInfo<FaultShape>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
