// bridge_bench: flexcsi-bridge under concurrent load and with many records.
//   1. Concurrency: 64 volumes staged through flexexec, then 256 `mount` calls at once (4 pods
//      per volume) and 256 `unmount` calls at once, each a real flexexec exec as kubelet does
//      it. Reports errors, throughput and per-call p50/p99.
//   2. Memory: the daemon's resident set idle (just started) and with 10,000 records.
//   3. Start-up reconciliation with 10,000 publication records whose targets are real bind
//      mounts: time from exec to the socket accepting calls (the daemon reconciles before it
//      serves), and what the reconciliation reported.
// Runs the real binaries through tests/kubelet's TestEnvironment, so it needs root and a
// private mount namespace: unshare -m --propagation private bridge_bench
// A benchmark program: it prints figures and asserts nothing about time.
#include <dirent.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bridge/state_store.h"
#include "tests/kubelet/test_environment.h"

namespace flexcsi {
namespace kubelet {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kVolumes = 64;
constexpr int kPodsPerVolume = 4;
constexpr int kRecords = 10000;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// The resident set of the flexcsi-bridge started with `config_path`, in KiB (0 if not found).
long BridgeRssKiB(const std::string& config_path) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    if (args.find("flexcsi-bridge") == std::string::npos ||
        args.find(config_path) == std::string::npos) {
      continue;
    }
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
  }
  return 0;
}

struct Burst {
  std::vector<double> ms;
  int errors = 0;
  double wall_s = 0;
  std::string first_error;
};

// Runs every argv at once, one thread each, as many kubelet workers would.
Burst RunConcurrently(const KubeletCaller& caller, const std::vector<std::vector<std::string>>& calls) {
  Burst burst;
  std::mutex mu;
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (const auto& argv : calls) {
    threads.emplace_back([&, argv] {
      while (!go) std::this_thread::yield();
      const auto start = Clock::now();
      DriverResult r = caller.Exec(argv, std::chrono::minutes(3));
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      std::lock_guard<std::mutex> lock(mu);
      burst.ms.push_back(ms);
      if (!r.success()) {
        ++burst.errors;
        if (burst.first_error.empty()) burst.first_error = r.Describe();
      }
    });
  }
  const auto start = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  burst.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return burst;
}

void Report(const char* what, const Burst& b) {
  std::printf("  %-8s %zu calls: %d errors, %.2f s wall, %.0f calls/s, p50 %.1f ms, p99 %.1f ms\n",
              what, b.ms.size(), b.errors, b.wall_s, b.ms.size() / b.wall_s,
              Percentile(b.ms, 0.50), Percentile(b.ms, 0.99));
  if (!b.first_error.empty()) std::printf("    first error: %s\n", b.first_error.c_str());
}

int ConcurrencyBench(TestEnvironment& env) {
  KubeletCaller& caller = env.caller();
  std::printf("concurrency: %d volumes x %d pods = %d concurrent calls per burst\n", kVolumes,
              kPodsPerVolume, kVolumes * kPodsPerVolume);
  std::vector<FlexVolumeSource> volumes;
  for (int i = 0; i < kVolumes; ++i) {
    const std::string id = env.CreateVolume("bench-" + std::to_string(i), 16 << 20, "ext4");
    if (id.empty()) return 1;
    FlexVolumeSource v = env.VolumeSource("pv-bench-" + std::to_string(i), id);
    DriverResult r = caller.Attach(v);
    const std::string device = r.reply.is_object() ? r.reply.value("device", "") : "";
    if (r.success()) r = caller.WaitForAttach(device, v);
    if (r.success()) r = caller.MountDevice(v, device);
    if (!r.success()) {
      std::fprintf(stderr, "staging %s failed: %s\n", id.c_str(), r.Describe().c_str());
      return 1;
    }
    volumes.push_back(v);
  }
  std::vector<std::vector<std::string>> mounts, unmounts;
  for (int p = 0; p < kPodsPerVolume; ++p) {
    for (const auto& v : volumes) {
      PodInfo pod = env.Pod("pod-" + std::to_string(p) + "-" + v.volume_name);
      const std::string dir = caller.PodVolumeDirFor(pod, v);
      fs::create_directories(dir);  // kubelet's part before mount
      mounts.push_back({"mount", dir, MountOptionsJson(v, pod)});
      unmounts.push_back({"unmount", dir});
    }
  }
  Burst mounted = RunConcurrently(caller, mounts);
  Report("mount", mounted);
  if (mounted.errors > 0) {
    // What the bridge said about the first failing volume, to tell a bug from an overload.
    const auto at = mounted.first_error.find("pv-bench-");
    const std::string volume =
        mounted.first_error.substr(at, mounted.first_error.find(' ', at) - at);
    std::istringstream log(env.ReadBridgeLog());
    for (std::string line; std::getline(log, line);) {
      if (line.find(volume + " ") != std::string::npos || line.find("reconcile") != std::string::npos) {
        std::printf("    bridge: %s\n", line.c_str());
      }
    }
  }
  Burst unmounted = RunConcurrently(caller, unmounts);
  Report("unmount", unmounted);
  for (const auto& v : volumes) {
    caller.UnmountDevice(v);
    caller.Detach(v);
  }
  std::printf("  records left after teardown: %zu\n", env.BridgeRecordCount());
  return mounted.errors + unmounted.errors == 0 ? 0 : 1;
}

int RecordsBench(TestEnvironment& env) {
  std::printf("%d records, every target a real bind mount:\n", kRecords);
  env.KillBridge(SIGTERM);
  const std::string source = env.root() + "/bench-source";
  fs::create_directories(source);
  std::vector<std::string> targets;
  {
    auto store = StateStore::Open(env.state_db());
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    const auto start = Clock::now();
    for (int i = 0; i < kRecords; ++i) {
      PublicationRecord r;
      r.target_path = env.kubelet_root() + "/pods/bench-" + std::to_string(i) +
                      "/volumes/flexcsi~loopback/pv-bench";
      r.flex_driver = kTestDriver;
      r.volume_name = "pv-bench";
      r.csi_driver = kTestCsiDriver;
      r.volume_id = "bench-volume-" + std::to_string(i);
      r.pod_uid = "bench-" + std::to_string(i);
      r.phase = Phase::kDone;
      fs::create_directories(r.target_path);
      if (::mount(source.c_str(), r.target_path.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
          !(*store)->PutPublication(r).ok()) {
        std::fprintf(stderr, "setting up record %d failed\n", i);
        return 1;
      }
      targets.push_back(r.target_path);
    }
    std::printf("  setup: %d bind mounts + durable record writes in %.1f s\n", kRecords,
                std::chrono::duration<double>(Clock::now() - start).count());
  }
  const auto start = Clock::now();
  if (auto started = env.StartBridge(); !started) {
    std::fprintf(stderr, "bridge restart: %s\n", started.message());
    return 1;
  }
  const double ready_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("  start-up with reconciliation until serving: %.2f s\n", ready_s);
  std::string log = env.ReadBridgeLog();
  auto line = log.rfind("start-up reconciliation");
  if (line != std::string::npos) {
    std::printf("  bridge: %s\n", log.substr(line, log.find('\n', line) - line).c_str());
  }
  std::printf("  RSS with %d records: %ld KiB\n", kRecords, BridgeRssKiB(env.bridge_config_path()));
  env.KillBridge(SIGTERM);
  for (auto it = targets.rbegin(); it != targets.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  return 0;
}

int Run() {
  TestEnvironment env;
  if (auto started = env.Start(); !started) {
    std::fprintf(stderr, "environment: %s\n", started.message());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::printf("flexcsi-bridge RSS idle: %ld KiB\n", BridgeRssKiB(env.bridge_config_path()));
  int failures = ConcurrencyBench(env);
  failures += RecordsBench(env);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi

int main() { return flexcsi::kubelet::Run(); }
