// kill -9 of flexcsi-bridge at random moments of many attachable life cycles, including in the
// middle of a call. After each kill the bridge is restarted and the failed call retried the way
// kubelet retries (same call, growing backoff), and afterwards nothing may be leaked and the
// bridge's records must match the kernel's mount table.
//
// Seeded (FLEXCSI_FAULT_SEED overrides the default), so a failure can be replayed.
#include <cstdlib>
#include <random>
#include <thread>

#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int kLifecycles = 20;
constexpr int kMaxAttempts = 12;

uint32_t Seed() {
  const char* s = std::getenv("FLEXCSI_FAULT_SEED");
  return s && *s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : 20261121u;
}

TEST(FaultInjectionTest, BridgeKilledAtRandomPointsLeaksNothing) {
  const uint32_t seed = Seed();
  SCOPED_TRACE("FLEXCSI_FAULT_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  TestEnvironment env;
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back(env.CreateVolume("vol-fault-" + std::to_string(i), 64 * kMiB, "ext4"));
    ASSERT_FALSE(ids.back().empty());
  }

  int kills = 0, retries = 0;
  for (int cycle = 0; cycle < kLifecycles; ++cycle) {
    SCOPED_TRACE("lifecycle " + std::to_string(cycle));
    const std::string& id = ids[cycle % ids.size()];
    AttachableLifecycle life(
        &env.caller(), env.VolumeSource("pv-fault-" + std::to_string(cycle % 2), id),
        env.Pod("f" + std::to_string(cycle) + "a"), env.Pod("f" + std::to_string(cycle) + "b"));
    const auto& steps = AllSteps();
    const Step kill_step = steps[std::uniform_int_distribution<size_t>(0, steps.size() - 1)(rng)];
    // 0 ms kills before the call reaches the bridge; up to 40 ms lands inside most calls.
    const int kill_after_ms = std::uniform_int_distribution<int>(0, 40)(rng);

    for (Step s : steps) {
      DriverResult r;
      if (s == kill_step) {
        std::thread killer([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
          env.KillBridge(SIGKILL);
        });
        r = life.Run(s);
        killer.join();
        ++kills;
        ASSERT_TRUE(env.StartBridge()) << "restart after kill during " << StepName(s);
      } else {
        r = life.Run(s);
      }
      // kubelet's retry: the same operation again, with exponential backoff from 500 ms
      // (shortened here; the bridge must not depend on the delay).
      int delay_ms = 50;
      for (int attempt = 1; !r.success() && attempt < kMaxAttempts; ++attempt) {
        ++retries;
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        delay_ms = std::min(delay_ms * 2, 1000);
        r = life.Run(s);
      }
      ASSERT_TRUE(r.success()) << StepName(s) << " still failing after " << kMaxAttempts
                               << " attempts (kill at " << StepName(kill_step) << "+"
                               << kill_after_ms << " ms): " << r.Describe();
      if (s == Step::kMountPodB) {
        ASSERT_TRUE(WriteTextFile(life.PodDir(Step::kMountPodA) + "/f", "c"));
        EXPECT_EQ("c", ReadTextFile(life.PodDir(Step::kMountPodB) + "/f"));
      }
    }
    ASSERT_EQ("", env.RecordsVersusMountTable());
    ASSERT_TRUE(env.MountsUnderRoot().empty()) << env.MountsUnderRoot().front();
  }
  std::printf("fault injection: %d lifecycles, %d kills, %d retries (seed %u)\n", kLifecycles,
              kills, retries, seed);
  ExpectNothingLeaked(env);
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
