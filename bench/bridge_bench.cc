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
//
// Options (bench/caller_checks_bench.py uses them to run phase 1 against a real kube-apiserver):
//   --concurrency-only     phase 1 alone
//   --bridge BIN, --flexexec BIN   other builds (e.g. a previous release's)
//   --kubeconfig FILE      the bridge identifies every call with that API server
//                          (trustPodAuthors: false); without it every call is trusted
//   --pods FILE            JSON list of {"volume": i, "pod": p, "namespace", "name", "uid"}: the
//                          pod objects each mount is for (kubelet's kubernetes.io/pod.* keys
//                          and the pod volume dir carry them); default: made-up pods
//   --pv-prefix P          the volumes' names are P<i> (default pv-bench-)
//   --before-staging CMD   runs `CMD FILE` once the volumes exist and before any is attached,
//                          FILE a JSON object {volume name: volumeID}: where the PVs are made
//   --json OUT             the figures of phase 1 as JSON
// Beside calls/s and latencies phase 1 reports what the burst cost in CPU (the bridge,
// csi-loopback with its tools, the flexexec processes) and the machine's load, since on a
// shared machine the calls/s say as much about the neighbours as about the bridge.
#include <dirent.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
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

struct BenchOptions {
  bool concurrency_only = false;
  std::string bridge_binary, flexexec_binary, kubeconfig, pods_file, before_staging, json_out;
  std::string pv_prefix = "pv-bench-";
};

// CPU seconds (user + system, with reaped children) of a process, from /proc/<pid>/stat.
double ProcessCpuSeconds(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::vector<std::string> f;
  for (std::string w; fields >> w;) f.push_back(w);
  // After the command: state is field 3; utime, stime, cutime, cstime are fields 14-17.
  if (f.size() < 15) return 0;
  double ticks = 0;
  for (int i = 11; i <= 14; ++i) ticks += std::stod(f[i]);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double ChildrenCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The machine's busy and total CPU seconds so far (/proc/stat), all CPUs.
std::pair<double, double> MachineCpuSeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  std::vector<double> v;
  for (double x; v.size() < 8 && in >> x;) v.push_back(x);
  double total = 0;
  for (double x : v) total += x;
  const double idle = v.size() > 4 ? v[3] + v[4] : 0;  // idle + iowait
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return {(total - idle) / hz, total / hz};
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double WallClockSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// flexcsi_csi_rpc_duration_seconds {method: (count, sum)} from the bridge's /metrics.
std::map<std::string, std::pair<double, double>> RpcTimes(const std::string& metrics) {
  std::map<std::string, std::pair<double, double>> out;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    for (const char* suffix : {"_sum{", "_count{"}) {
      const std::string prefix = std::string("flexcsi_csi_rpc_duration_seconds") + suffix;
      if (line.rfind(prefix, 0) != 0) continue;
      const auto m = line.find("method=\"");
      const auto end = line.find('"', m + 8);
      if (m == std::string::npos || end == std::string::npos) continue;
      const std::string method = line.substr(m + 8, end - m - 8);
      const double value = std::atof(line.c_str() + line.rfind(' ') + 1);
      (std::strcmp(suffix, "_sum{") == 0 ? out[method].second : out[method].first) += value;
    }
  }
  return out;
}

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

// What one burst cost, measured around it.
struct Cost {
  double bridge_cpu = 0, driver_cpu = 0, flexexec_cpu = 0, bench_cpu = 0;
  double machine_busy = 0, machine_total = 0;
  std::string load_before, load_after;
  double started_at = 0, ended_at = 0;  // wall clock, seconds since the epoch
  std::map<std::string, std::pair<double, double>> rpcs;  // method: (calls, seconds)
};

class CostMeter {
 public:
  explicit CostMeter(TestEnvironment& env, bool metrics) : env_(env), metrics_(metrics) {
    cost_.load_before = LoadAverage();
    if (metrics_) rpcs_ = RpcTimes(env_.ScrapeMetrics());
    bridge_ = ProcessCpuSeconds(env_.bridge_pid());
    driver_ = ProcessCpuSeconds(env_.driver_pid());
    children_ = ChildrenCpuSeconds();
    self_ = SelfCpuSeconds();
    machine_ = MachineCpuSeconds();
    cost_.started_at = WallClockSeconds();
  }
  Cost Stop() {
    cost_.ended_at = WallClockSeconds();
    const auto machine = MachineCpuSeconds();
    cost_.machine_busy = machine.first - machine_.first;
    cost_.machine_total = machine.second - machine_.second;
    cost_.bench_cpu = SelfCpuSeconds() - self_;
    cost_.flexexec_cpu = ChildrenCpuSeconds() - children_;
    cost_.driver_cpu = ProcessCpuSeconds(env_.driver_pid()) - driver_;
    cost_.bridge_cpu = ProcessCpuSeconds(env_.bridge_pid()) - bridge_;
    cost_.load_after = LoadAverage();
    if (metrics_) {
      for (const auto& [method, v] : RpcTimes(env_.ScrapeMetrics())) {
        const auto before = rpcs_[method];
        if (v.first - before.first > 0) {
          cost_.rpcs[method] = {v.first - before.first, v.second - before.second};
        }
      }
    }
    return cost_;
  }

 private:
  static double SelfCpuSeconds() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  }
  TestEnvironment& env_;
  bool metrics_;
  Cost cost_;
  std::map<std::string, std::pair<double, double>> rpcs_;
  double bridge_ = 0, driver_ = 0, children_ = 0, self_ = 0;
  std::pair<double, double> machine_;
};

void ReportCost(const Burst& b, const Cost& c) {
  const double n = static_cast<double>(std::max<size_t>(b.ms.size(), 1));
  std::printf("    CPU per call: bridge %.2f ms, csi-loopback (with its tools) %.2f ms, flexexec "
              "%.2f ms, this bench %.2f ms; machine busy %.0f%% of %.1f CPU-s; load %s -> %s\n",
              1e3 * c.bridge_cpu / n, 1e3 * c.driver_cpu / n, 1e3 * c.flexexec_cpu / n,
              1e3 * c.bench_cpu / n, 100 * c.machine_busy / std::max(c.machine_total, 1e-9),
              c.machine_total, c.load_before.c_str(), c.load_after.c_str());
  for (const auto& [method, v] : c.rpcs) {
    std::printf("    %s: %.0f calls, mean %.1f ms\n", method.c_str(), v.first,
                1e3 * v.second / std::max(v.first, 1.0));
  }
}

nlohmann::json BurstJson(const Burst& b, const Cost& c) {
  nlohmann::json rpcs = nlohmann::json::object();
  for (const auto& [method, v] : c.rpcs) rpcs[method] = {{"calls", v.first}, {"seconds", v.second}};
  return {{"calls", b.ms.size()},
          {"errors", b.errors},
          {"first_error", b.first_error},
          {"wall_s", b.wall_s},
          {"calls_per_s", b.ms.size() / b.wall_s},
          {"mean_ms", b.ms.empty() ? 0.0
                                   : std::accumulate(b.ms.begin(), b.ms.end(), 0.0) / b.ms.size()},
          {"p50_ms", Percentile(b.ms, 0.50)},
          {"p90_ms", Percentile(b.ms, 0.90)},
          {"p99_ms", Percentile(b.ms, 0.99)},
          {"max_ms", Percentile(b.ms, 1.0)},
          {"cpu_s",
           {{"bridge", c.bridge_cpu},
            {"driver", c.driver_cpu},
            {"flexexec", c.flexexec_cpu},
            {"bench", c.bench_cpu}}},
          {"machine_busy_cpu_s", c.machine_busy},
          {"machine_total_cpu_s", c.machine_total},
          {"load_before", c.load_before},
          {"load_after", c.load_after},
          {"started_at", c.started_at},
          {"ended_at", c.ended_at},
          {"rpcs", rpcs}};
}

// The pods of --pods: {(volume index, pod index): pod}.
std::map<std::pair<int, int>, PodInfo> ReadPods(const std::string& path, std::string* error) {
  std::map<std::pair<int, int>, PodInfo> pods;
  std::ifstream in(path);
  nlohmann::json list = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) {
    *error = path + " is not a JSON list";
    return pods;
  }
  for (const auto& e : list) {
    PodInfo p;
    p.namespace_name = e.value("namespace", "");
    p.name = e.value("name", "");
    p.uid = e.value("uid", "");
    pods[{e.value("volume", -1), e.value("pod", -1)}] = p;
  }
  return pods;
}

int ConcurrencyBench(TestEnvironment& env, const BenchOptions& options, nlohmann::json* out) {
  KubeletCaller& caller = env.caller();
  std::printf("concurrency: %d volumes x %d pods = %d concurrent calls per burst\n", kVolumes,
              kPodsPerVolume, kVolumes * kPodsPerVolume);
  std::map<std::pair<int, int>, PodInfo> pods;
  if (!options.pods_file.empty()) {
    std::string error;
    pods = ReadPods(options.pods_file, &error);
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
  }
  std::vector<FlexVolumeSource> volumes;
  nlohmann::json handles = nlohmann::json::object();
  for (int i = 0; i < kVolumes; ++i) {
    const std::string id = env.CreateVolume("bench-" + std::to_string(i), 16 << 20, "ext4");
    if (id.empty()) return 1;
    volumes.push_back(env.VolumeSource(options.pv_prefix + std::to_string(i), id));
    handles[volumes.back().volume_name] = id;
  }
  if (!options.before_staging.empty()) {
    // The PVs these volumes are, made by the caller (e.g. in a real API server).
    const std::string file = env.root() + "/volume-handles.json";
    std::ofstream(file) << handles.dump(2) << "\n";
    const std::string command = options.before_staging + " " + file;
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "%s failed\n", command.c_str());
      return 1;
    }
  }
  double staging_started = WallClockSeconds();
  for (const auto& v : volumes) {
    DriverResult r = caller.Attach(v);
    const std::string device = r.reply.is_object() ? r.reply.value("device", "") : "";
    if (r.success()) r = caller.WaitForAttach(device, v);
    if (r.success()) r = caller.MountDevice(v, device);
    if (!r.success()) {
      std::fprintf(stderr, "staging %s failed: %s\n", v.volume_name.c_str(),
                   r.Describe().c_str());
      return 1;
    }
  }
  const double staging_ended = WallClockSeconds();
  std::vector<std::vector<std::string>> mounts, unmounts;
  for (int p = 0; p < kPodsPerVolume; ++p) {
    for (int i = 0; i < kVolumes; ++i) {
      const FlexVolumeSource& v = volumes[i];
      PodInfo pod = env.Pod("pod-" + std::to_string(p) + "-" + v.volume_name);
      if (!pods.empty()) {
        auto it = pods.find({i, p});
        if (it == pods.end()) {
          std::fprintf(stderr, "%s names no pod %d of volume %d\n", options.pods_file.c_str(), p,
                       i);
          return 1;
        }
        pod = it->second;
      }
      const std::string dir = caller.PodVolumeDirFor(pod, v);
      fs::create_directories(dir);  // kubelet's part before mount
      mounts.push_back({"mount", dir, MountOptionsJson(v, pod)});
      unmounts.push_back({"unmount", dir});
    }
  }
  CostMeter mount_meter(env, /*metrics=*/true);
  Burst mounted = RunConcurrently(caller, mounts);
  const Cost mount_cost = mount_meter.Stop();
  Report("mount", mounted);
  ReportCost(mounted, mount_cost);
  if (mounted.errors > 0) {
    // What the bridge said about the first failing volume, to tell a bug from an overload.
    const auto at = mounted.first_error.find(options.pv_prefix);
    const std::string volume =
        at == std::string::npos
            ? std::string("\n")
            : mounted.first_error.substr(at, mounted.first_error.find(' ', at) - at);
    std::istringstream log(env.ReadBridgeLog());
    for (std::string line; std::getline(log, line);) {
      if (line.find(volume + " ") != std::string::npos || line.find("reconcile") != std::string::npos) {
        std::printf("    bridge: %s\n", line.c_str());
      }
    }
  }
  CostMeter unmount_meter(env, /*metrics=*/true);
  Burst unmounted = RunConcurrently(caller, unmounts);
  const Cost unmount_cost = unmount_meter.Stop();
  Report("unmount", unmounted);
  ReportCost(unmounted, unmount_cost);
  for (const auto& v : volumes) {
    caller.UnmountDevice(v);
    caller.Detach(v);
  }
  std::printf("  records left after teardown: %zu\n", env.BridgeRecordCount());
  if (out) {
    *out = {{"mount", BurstJson(mounted, mount_cost)},
            {"unmount", BurstJson(unmounted, unmount_cost)},
            {"staging", {{"started_at", staging_started}, {"ended_at", staging_ended}}}};
  }
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

int Run(const BenchOptions& options) {
  EnvOptions env_options;
  env_options.metrics = true;  // the CSI calls' times, read around each burst
  env_options.bridge_binary = options.bridge_binary;
  env_options.flexexec_binary = options.flexexec_binary;
  env_options.kubeconfig = options.kubeconfig;
  TestEnvironment env(env_options);
  if (auto started = env.Start(); !started) {
    std::fprintf(stderr, "environment: %s\n", started.message());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::printf("flexcsi-bridge RSS idle: %ld KiB\n", BridgeRssKiB(env.bridge_config_path()));
  nlohmann::json figures;
  int failures = ConcurrencyBench(env, options, &figures);
  if (!options.json_out.empty()) {
    figures["bridge_binary"] = options.bridge_binary;
    figures["flexexec_binary"] = options.flexexec_binary;
    figures["kubeconfig"] = options.kubeconfig;
    std::ofstream(options.json_out) << figures.dump(2) << "\n";
  }
  if (!options.concurrency_only) failures += RecordsBench(env);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi

int main(int argc, char** argv) {
  flexcsi::kubelet::BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* into) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      *into = argv[++i];
    };
    if (a == "--concurrency-only") {
      options.concurrency_only = true;
    } else if (a == "--bridge") {
      value(&options.bridge_binary);
    } else if (a == "--flexexec") {
      value(&options.flexexec_binary);
    } else if (a == "--kubeconfig") {
      value(&options.kubeconfig);
    } else if (a == "--pods") {
      value(&options.pods_file);
    } else if (a == "--pv-prefix") {
      value(&options.pv_prefix);
    } else if (a == "--before-staging") {
      value(&options.before_staging);
    } else if (a == "--json") {
      value(&options.json_out);
    } else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of bridge_bench.cc)\n",
                   a.c_str());
      return 2;
    }
  }
  return flexcsi::kubelet::Run(options);
}
