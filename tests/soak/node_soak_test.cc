// Node soak (issue #37): flexcsi-bridge and csi-loopback, driven through whole volume life
// cycles by the kubelet-faithful caller (tests/kubelet), must not grow. Three volumes go through
// their life cycles at once, a call at a time each, out of step with one another, so that records
// come and go while others stay; each volume has a thread of its own, as kubelet's operation
// executor runs one operation at a time per volume and different volumes' at the same time: attach,
// isattached, waitforattach, mountdevice, getvolumename, two or three pods' mount (read-write with
// different fsGroups, read-only), isattached again (the attach/detach controller's periodic check),
// the pods' unmount and kubelet's removal of their dirs, unmountdevice and detach. After each batch
// of life cycles, once every volume has finished its current one: nothing left (mounts, loop
// devices, bridge records, driver state), then a sample of both daemons' memory, open files,
// threads and logs, the bridge's state database, WAL and metrics page. At the end JudgeLevelsOff
// (levels_off.h) judges every figure.
//
//   FLEXCSI_SOAK_LIFECYCLES=N    life cycles (default 500: the CI run)
//   FLEXCSI_SOAK_SAMPLE_EVERY=N  life cycles per batch and sample (default 20)
//   FLEXCSI_SOAK_REPORT_DIR=DIR  also write the samples and verdicts as DIR/node-soak.json
// The long run is bench/soak_bench.py.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/kubelet/scenario_test_util.h"
#include "tests/soak/process_resources.h"
#include "tests/soak/soak_report.h"

namespace flexcsi::soak {
namespace {

using kubelet::DriverResult;
using kubelet::FlexVolumeSource;
using kubelet::PodInfo;
using kubelet::TestEnvironment;

constexpr int64_t kVolumeBytes = 64 * 1024 * 1024;
constexpr int kVolumes = 3;
// Calls made in a batch before the next volume starts its first: out of step from the start.
constexpr int kStagger = 3;

// One call of a life cycle, as kubelet or the attach/detach controller makes it.
struct LifecycleCall {
  std::string what;
  std::function<DriverResult()> run;
  bool not_supported_is_fine = false;
};

// One volume's life cycles, advanced a call at a time.
class VolumeLane {
 public:
  // A caller of its own (a copy of the environment's, after init): lanes call at the same time.
  VolumeLane(TestEnvironment* env, FlexVolumeSource volume)
      : env_(env), caller_(env->caller()), volume_(std::move(volume)) {}

  bool idle() const { return next_ >= calls_.size(); }

  // Plans life cycle `n` (numbered across all volumes): pods that differ from one cycle to the
  // next, read-write and read-only, with and without fsGroup.
  void Start(int64_t n) {
    n_ = n;
    calls_.clear();
    next_ = 0;
    kubelet::KubeletCaller& caller = caller_;
    const std::string tag = "n" + std::to_string(n);
    std::vector<std::pair<PodInfo, FlexVolumeSource>> pods;
    PodInfo writer = env_->Pod(tag + "-rw");
    writer.fs_group = 1000 + n % 3;
    pods.push_back({writer, volume_});
    PodInfo reader = env_->Pod(tag + "-ro");
    reader.fs_group = 2000;
    FlexVolumeSource read_only = volume_;
    read_only.read_only = true;
    pods.push_back({reader, read_only});
    if (n % 3 == 0) pods.push_back({env_->Pod(tag + "-plain"), volume_});

    calls_.push_back({"attach", [this, &caller] {
                        DriverResult r = caller.Attach(volume_);
                        if (r.success() && r.reply.is_object())
                          device_ = r.reply.value("device", "");
                        return r;
                      }});
    calls_.push_back({"isattached", [this, &caller] { return caller.IsAttached(volume_); }});
    calls_.push_back({"waitforattach", [this, &caller] {
                        DriverResult r = caller.WaitForAttach(device_, volume_);
                        if (r.success() && r.reply.is_object()) {
                          device_ = r.reply.value("device", device_);
                        }
                        return r;
                      }});
    calls_.push_back(
        {"mountdevice", [this, &caller] { return caller.MountDevice(volume_, device_); }});
    calls_.push_back({"getvolumename",
                      [this, &caller] {
                        return caller.Exec({"getvolumename", kubelet::BaseOptionsJson(volume_)});
                      },
                      true});
    for (const auto& [pod, source] : pods) {
      calls_.push_back({"mount " + pod.name, [&caller, pod = pod, source = source] {
                          return caller.SetUp(source, pod);
                        }});
    }
    calls_.push_back({"isattached", [this, &caller] { return caller.IsAttached(volume_); }});
    if (n % 2) std::reverse(pods.begin(), pods.end());
    for (const auto& [pod, source] : pods) {
      calls_.push_back({"unmount " + pod.name, [this, &caller, pod = pod, source = source] {
                          DriverResult r = caller.TearDown(source, pod);
                          if (r.success()) RemovePodDir(pod);
                          return r;
                        }});
    }
    calls_.push_back({"unmountdevice", [this, &caller] { return caller.UnmountDevice(volume_); }});
    calls_.push_back({"detach", [this, &caller] { return caller.Detach(volume_); }});
  }

  // Runs the next call; false (with a test failure) when it failed.
  bool Step() {
    const LifecycleCall& call = calls_[next_++];
    const DriverResult r = call.run();
    const bool ok = r.success() || (call.not_supported_is_fine &&
                                    r.outcome == DriverResult::Outcome::kNotSupported);
    if (!ok) {
      ADD_FAILURE() << "life cycle " << n_ << " of " << volume_.volume_name << ", " << call.what
                    << ": " << r.Describe();
    }
    return ok;
  }

 private:
  // kubelet's cleanup of an orphaned pod's dir once its volumes are torn down: only empty dirs go
  // (rmdir), so a mount or file left inside stays for the leftover check to find.
  void RemovePodDir(const PodInfo& pod) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(env_->kubelet_root()) / "pods" / pod.uid;
    std::vector<fs::path> dirs;
    std::error_code error;
    for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end;
         it.increment(error)) {
      if (it->is_directory()) dirs.push_back(it->path());
    }
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->c_str());
    ::rmdir(dir.c_str());
  }

  TestEnvironment* env_;
  kubelet::KubeletCaller caller_;
  FlexVolumeSource volume_;
  std::vector<LifecycleCall> calls_;
  size_t next_ = 0;
  int64_t n_ = 0;
  std::string device_;
};

// Life cycles [first, end) on the lanes, each lane in a thread of its own taking the next life
// cycle when it has finished one; lane i makes its first call once the lanes before it have made
// i * kStagger calls of this batch. Returns once every lane is idle; false when a call failed
// (the others stop after their current call).
bool RunBatch(std::vector<VolumeLane>& lanes, int64_t first, int64_t end) {
  std::mutex mu;
  std::condition_variable progressed;
  int64_t next = first;
  int64_t calls = 0;
  bool failed = false;
  auto run_lane = [&](size_t i) {
    VolumeLane& lane = lanes[i];
    {
      std::unique_lock<std::mutex> lock(mu);
      progressed.wait(lock, [&] {
        return failed || next >= end || calls >= static_cast<int64_t>(i) * kStagger;
      });
    }
    for (;;) {
      if (lane.idle()) {
        std::lock_guard<std::mutex> lock(mu);
        if (failed || next >= end) return;
        lane.Start(next++);
      }
      const bool ok = lane.Step();
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
      failed |= !ok;
      progressed.notify_all();
      if (failed) return;
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < lanes.size(); ++i) threads.emplace_back(run_lane, i);
  for (std::thread& t : threads) t.join();
  return !failed;
}

std::vector<MetricRule> NodeRules() {
  return {MemoryKibRule("bridge_rss_kib"),     ExactCountRule("bridge_fds"),
          ExactCountRule("bridge_threads"),    FileBytesRule("bridge_db_bytes"),
          WalBytesRule("bridge_wal_bytes"),    FileBytesRule("bridge_metrics_bytes"),
          LoggedBytesRule("bridge_log_bytes"), MemoryKibRule("driver_rss_kib"),
          ExactCountRule("driver_fds"),        ExactCountRule("driver_threads"),
          FileBytesRule("driver_state_bytes"), LoggedBytesRule("driver_log_bytes")};
}

::testing::AssertionResult Sample(TestEnvironment& env, int64_t cycle, SoakReport* report) {
  const std::vector<ProcessResources> at_rest =
      SampleProcessesAtRest({env.bridge_pid(), env.driver_pid()});
  const ProcessResources& bridge = at_rest[0];
  const ProcessResources& driver = at_rest[1];
  if (!bridge.ok() || !driver.ok()) {
    return ::testing::AssertionFailure()
           << "after " << cycle << " life cycles flexcsi-bridge (pid " << env.bridge_pid()
           << ") or csi-loopback (pid " << env.driver_pid() << ") is gone";
  }
  report->Add(cycle, {{"bridge_rss_kib", bridge.rss_kib},
                      {"bridge_fds", bridge.open_fds},
                      {"bridge_threads", bridge.threads},
                      {"bridge_db_bytes", FileBytes(env.state_db())},
                      {"bridge_wal_bytes", FileBytes(env.state_db() + "-wal")},
                      {"bridge_metrics_bytes", env.ScrapeMetrics().size()},
                      {"bridge_log_bytes", FileBytes(env.bridge_log_path())},
                      {"driver_rss_kib", driver.rss_kib},
                      {"driver_fds", driver.open_fds},
                      {"driver_threads", driver.threads},
                      {"driver_state_bytes", FileBytes(env.csi_state_dir() + "/state.json")},
                      {"driver_log_bytes", FileBytes(env.driver_log_path())}});
  return ::testing::AssertionSuccess();
}

// No pod dir is left once every pod of a batch is gone (kubelet removed them; the bridge must
// have left nothing inside).
void ExpectNoPodDirs(const TestEnvironment& env) {
  std::error_code error;
  std::filesystem::directory_iterator pods(env.kubelet_root() + "/pods", error);
  EXPECT_TRUE(!error && pods == std::filesystem::directory_iterator())
      << "pod dir left: " << (error ? error.message() : pods->path().string());
}

TEST(NodeSoakTest, BridgeAndDriverLevelOffOverLifecycles) {
  const int64_t lifecycles = EnvInt("FLEXCSI_SOAK_LIFECYCLES", 500);
  const int64_t sample_every = EnvInt("FLEXCSI_SOAK_SAMPLE_EVERY", 20);
  ASSERT_GT(sample_every, 0);
  kubelet::EnvOptions options;
  options.metrics = true;  // as deployed; a metric that gains a label per volume is a leak too
  TestEnvironment env(options);
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  std::vector<VolumeLane> lanes;
  lanes.reserve(kVolumes);  // their calls point at them
  for (int i = 0; i < kVolumes; ++i) {
    const std::string id = env.CreateVolume("vol-soak-" + std::to_string(i), kVolumeBytes, "ext4");
    ASSERT_FALSE(id.empty());
    lanes.emplace_back(&env, env.VolumeSource("pv-soak-" + std::to_string(i), id));
  }

  SoakReport report("node-soak", NodeRules());
  ASSERT_TRUE(Sample(env, 0, &report));
  int64_t finished = 0;
  while (finished < lifecycles) {
    const int64_t batch_end = std::min(lifecycles, finished + sample_every);
    ASSERT_TRUE(RunBatch(lanes, finished, batch_end)) << "after " << finished << " life cycles";
    finished = batch_end;
    kubelet::ExpectNothingLeaked(env);
    ExpectNoPodDirs(env);
    EXPECT_EQ("", env.RecordsVersusMountTable());
    ASSERT_FALSE(HasFailure()) << "after " << finished << " life cycles";
    ASSERT_TRUE(Sample(env, finished, &report));
  }

  EXPECT_TRUE(report.Conclude());
}

}  // namespace
}  // namespace flexcsi::soak
