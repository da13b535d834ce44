// controller_bench: flexcsi-controller provisioning N claims (default 500) against the fake API
// server (real TLS) and a real csi-loopback. Prints claims/s, claim->PV and claim->Bound latency
// percentiles, and the controller's RSS. A program that reports figures, not a test.
//
//   build-*/bench/controller_bench [claims] [worker-threads]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/kube_client.h"
#include "kube/kube_config.h"
#include "tests/apiserver/fake_apiserver_process.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      ::dup2(::fileno(f), 1);
      ::dup2(::fileno(f), 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

void Stop(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status;
    if (::waitpid(pid, &status, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

long StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace flexcsi;
  const int claims = argc > 1 ? std::atoi(argv[1]) : 500;
  const std::string workers = argc > 2 ? argv[2] : "4";
  char tmpl[] = "/tmp/flexcsi-controller-bench.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string root = tmpl;
  fs::create_directories(root + "/csi");

  testing::FakeApiServerProcess api;
  testing::FakeApiServerOptions api_options;
  api_options.persist_state = false;
  if (Status s = api.Start(root + "/api", api_options); !s.ok()) {
    std::cerr << "fake API server: " << s.ToString() << "\n";
    return 1;
  }
  const std::string socket = root + "/csi.sock";
  pid_t driver = Spawn({CSI_LOOPBACK_BINARY, "--endpoint", "unix://" + socket, "--nodeid",
                        "node-1", "--state-dir", root + "/csi"},
                       root + "/csi-loopback.log");
  for (int i = 0; i < 200 && !fs::exists(socket); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  nlohmann::json config = {
      {"drivers",
       {{{"flexDriver", "flexcsi/loopback"},
         {"csiEndpoint", "unix://" + socket},
         {"rule",
          {{"csiDriver", "loopback.csi.flexcsi.io"},
           {"volumeHandle", {{"fromOption", "volumeID"}}},
           {"defaultFsType", "ext4"}}}}}}};
  std::ofstream(root + "/bridge.yaml") << config.dump(2);

  kube::ConfigFlags flags;
  flags.kubeconfig = api.kubeconfig_path();
  auto client_config = kube::LoadClientConfig(flags);
  auto client = kube::KubeClient::Create(*client_config);
  if (!client.ok()) {
    std::cerr << client.status().ToString() << "\n";
    return 1;
  }
  kube::KubeClient& k = **client;
  (void)k.Create(kube::ResourcePath::Core("namespaces"),
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}});
  (void)k.Create(kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses"),
                 {{"apiVersion", "storage.k8s.io/v1"},
                  {"kind", "StorageClass"},
                  {"metadata", {{"name", "bench"}}},
                  {"provisioner", "loopback.csi.flexcsi.io"},
                  {"volumeBindingMode", "Immediate"}});

  pid_t controller = Spawn({FLEXCSI_CONTROLLER_BINARY, "--kubeconfig", api.kubeconfig_path(),
                            "--bridge-config", root + "/bridge.yaml", "--journal",
                            root + "/journal.db", "--worker-threads", workers},
                           root + "/controller.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long idle_rss = StatusKb(controller, "VmRSS");

  std::map<std::string, Clock::time_point> created;  // claim name -> creation time
  const auto start = Clock::now();
  for (int i = 0; i < claims; ++i) {
    const std::string name = "c" + std::to_string(i);
    auto r = k.Create(kube::ResourcePath::Core("persistentvolumeclaims", "bench"),
                      {{"apiVersion", "v1"},
                       {"kind", "PersistentVolumeClaim"},
                       {"metadata", {{"name", name}, {"namespace", "bench"}}},
                       {"spec",
                        {{"accessModes", {"ReadWriteOnce"}},
                         {"storageClassName", "bench"},
                         {"resources", {{"requests", {{"storage", "16Mi"}}}}}}}});
    if (!r.ok()) {
      std::cerr << "create claim: " << r.status().ToString() << "\n";
      return 1;
    }
    created[name] = Clock::now();
  }
  const double create_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::map<std::string, double> pv_seen, bound_seen;
  long peak_rss = 0;
  const auto deadline = Clock::now() + std::chrono::minutes(10);
  while (static_cast<int>(bound_seen.size()) < claims && Clock::now() < deadline) {
    auto list = k.List(kube::ResourcePath::Core("persistentvolumeclaims", "bench"));
    const auto now = Clock::now();
    if (list.ok()) {
      for (const auto& c : (*list)["items"]) {
        const std::string name = c["metadata"]["name"];
        const double age = std::chrono::duration<double>(now - created[name]).count();
        if (!c["spec"].value("volumeName", "").empty() && !pv_seen.count(name)) {
          pv_seen[name] = age;
        }
        if (c["status"].value("phase", "") == "Bound" && !bound_seen.count(name)) {
          bound_seen[name] = age;
          if (!pv_seen.count(name)) pv_seen[name] = age;
        }
      }
    }
    peak_rss = std::max(peak_rss, StatusKb(controller, "VmRSS"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> bound;
  for (const auto& [n, s] : bound_seen) bound.push_back(s * 1000);
  const long hwm = StatusKb(controller, "VmHWM");

  std::printf("controller_bench: %d claims, %s worker threads, fake API server + csi-loopback\n",
              claims, workers.c_str());
  std::printf("  claims created in %.2f s (API round trips from one client)\n", create_seconds);
  std::printf("  bound: %zu/%d in %.2f s -> %.1f claims/s\n", bound_seen.size(), claims, total,
              bound_seen.size() / total);
  std::printf("  claim -> Bound latency: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
              Percentile(bound, 0.5), Percentile(bound, 0.99), Percentile(bound, 1.0));
  std::printf("  controller RSS: %.1f MiB idle, %.1f MiB peak sampled, VmHWM %.1f MiB\n",
              idle_rss / 1024.0, peak_rss / 1024.0, hwm / 1024.0);

  Stop(controller);
  Stop(driver);
  (void)api.Stop();
  fs::remove_all(root);
  return static_cast<int>(bound_seen.size()) == claims ? 0 : 1;
}
