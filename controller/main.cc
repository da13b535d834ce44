// flexcsi-controller: dynamic provisioning, deletion, clones, snapshots and expansion of
// FlexVolume PVs through the wrapped driver's CSI controller service. Flags follow the CSI
// sidecars (external-provisioner, external-snapshotter, external-resizer).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "kube/kube_config.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// Lease names follow external-provisioner: the provisioner name with characters Kubernetes
// names do not allow replaced by '-'.
std::string LeaseNameFor(const std::string& provisioner) {
  std::string out;
  for (char c : provisioner) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '-';
  }
  return "flexcsi-controller-" + out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace flexcsi;
  CLI::App app{"flexcsi-controller: provisions, deletes, snapshots and expands FlexVolume PVs "
               "through CSI"};
  controller::ControllerOptions options;
  kube::ConfigFlags flags;
  std::string lock = "auto";
  double lease_duration = 15, renew_deadline = 10, retry_period = 2, timeout = 60, resync = 30;
  options.bridge_config_path = kDefaultBridgeConfigPath;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file; empty: $KUBECONFIG, ~/.kube/config, else in-cluster");
  app.add_flag("--in-cluster", flags.in_cluster, "use the pod's service account");
  app.add_option("--bridge-config", options.bridge_config_path,
                 "the bridge configuration (drivers, mapping rules, provisioner names)")
      ->capture_default_str();
  app.add_option("--journal", options.journal_path,
                 "SQLite journal of volumes being created (keep it on a persistent volume or a "
                 "hostPath)")
      ->capture_default_str();
  app.add_flag("--leader-election", options.leader_election, "run with leader election");
  app.add_option("--leader-election-namespace", options.election.namespace_,
                 "namespace of the lock object")
      ->capture_default_str();
  app.add_option("--leader-election-lock", lock, "auto, lease or configmap")->capture_default_str();
  app.add_option("--leader-election-lease-duration", lease_duration, "seconds")
      ->capture_default_str();
  app.add_option("--leader-election-renew-deadline", renew_deadline, "seconds")
      ->capture_default_str();
  app.add_option("--leader-election-retry-period", retry_period, "seconds")->capture_default_str();
  app.add_option("--identity", options.identity, "leader election identity (default: hostname_random)");
  app.add_option("--worker-threads", options.worker_threads, "parallel operations")
      ->capture_default_str();
  app.add_option("--timeout", timeout, "seconds per CSI call")->capture_default_str();
  app.add_option("--resync-period", resync, "seconds between full re-checks")->capture_default_str();
  app.add_option("--metrics-address", options.metrics_address,
                 "host:port for /metrics and /healthz (empty: off)");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  auto bridge = BridgeConfig::LoadFile(options.bridge_config_path);
  if (!bridge.ok()) {
    std::cerr << "flexcsi-controller: " << bridge.status().message() << "\n";
    return 1;
  }
  auto config = flags.in_cluster ? kube::LoadInClusterConfig() : kube::LoadClientConfig(flags);
  if (!config.ok()) {
    std::cerr << "flexcsi-controller: " << config.status().message() << "\n";
    return 1;
  }
  config->user_agent = "flexcsi-controller";
  auto client = kube::KubeClient::Create(*config);
  if (!client.ok()) {
    std::cerr << "flexcsi-controller: " << client.status().message() << "\n";
    return 1;
  }

  auto seconds = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  options.timeout = seconds(timeout);
  options.resync = seconds(resync);
  options.election.lease_duration = seconds(lease_duration);
  options.election.renew_deadline = seconds(renew_deadline);
  options.election.retry_period = seconds(retry_period);
  if (lock == "lease") {
    options.election.lock = controller::LeaderElectionConfig::Lock::kLease;
  } else if (lock == "configmap") {
    options.election.lock = controller::LeaderElectionConfig::Lock::kConfigMap;
  } else if (lock != "auto") {
    std::cerr << "flexcsi-controller: --leader-election-lock must be auto, lease or configmap\n";
    return 1;
  }
  options.election.name = LeaseNameFor(bridge->drivers.front().provisioner);
  if (options.identity.empty()) {
    char host[256] = "";
    ::gethostname(host, sizeof(host) - 1);
    std::random_device rd;
    options.identity = std::string(host) + "_" + std::to_string(rd() % 1000000);
  }
  options.election.identity = options.identity;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  controller::Controller controller(options, std::move(*bridge), client->get());
  Status started = controller.Start();
  if (!started.ok()) {
    std::cerr << "flexcsi-controller: " << started.ToString() << "\n";
    return 1;
  }
  spdlog::info("flexcsi-controller {} started", options.identity);
  Status ran = controller.Run(g_stop);
  if (!ran.ok()) {
    spdlog::error("{}", ran.ToString());
    return 1;
  }
  return 0;
}
