// flexcsi-controller: dynamic provisioning, deletion, clones, snapshots and expansion of
// FlexVolume PVs through the wrapped driver's CSI controller service. Flags follow the CSI
// sidecars (external-provisioner, external-snapshotter, external-resizer).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <random>
#include <tuple>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "common/version.h"
#include "controller/controller.h"
#include "controller/leader_election.h"
#include "controller/provisioner_lock.h"
#include "controller/served_drivers.h"
#include "kube/kube_config.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// Durations as the sidecars take them ("15s", "1m30s", "500ms") or plain seconds ("15", "0.25").
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  if (text.empty()) return false;
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t used = 0;
    double number;
    try {
      number = std::stod(text.substr(i), &used);
    } catch (...) {
      return false;
    }
    if (number < 0) return false;
    i += used;
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    if (unit.empty() || unit == "s") {
      total_ms += number * 1000;
    } else if (unit == "ms") {
      total_ms += number;
    } else if (unit == "m") {
      total_ms += number * 60000;
    } else if (unit == "h") {
      total_ms += number * 3600000;
    } else {
      return false;
    }
    if (unit.empty() && i < text.size()) return false;
  }
  *out = std::chrono::milliseconds(static_cast<int64_t>(total_ms));
  return true;
}

// The --node-deployment flags into options->node_deployment; false (after one line on stderr)
// for flags that contradict each other or do not parse.
bool NodeDeploymentFromFlags(bool node_deployment, std::string node_name, bool immediate_binding,
                             const std::string& base_delay, const std::string& max_delay,
                             flexcsi::controller::ControllerOptions* options) {
  if (!node_deployment) {
    if (node_name.empty()) return true;
    std::cerr << "flexcsi-controller: --node-name only has a meaning with --node-deployment\n";
    return false;
  }
  if (node_name.empty()) {
    const char* env = std::getenv("NODE_NAME");
    node_name = env ? env : "";
  }
  if (node_name.empty()) {
    std::cerr << "flexcsi-controller: --node-deployment needs the node's name: --node-name or "
                 "$NODE_NAME (in a DaemonSet from the downward API, spec.nodeName)\n";
    return false;
  }
  if (options->leader_election) {
    // One instance per node serves that node; a lock shared by all nodes would leave all but
    // one node without a provisioner (external-provisioner's lock name ignores the node).
    std::cerr << "flexcsi-controller: --leader-election and --node-deployment exclude each "
                 "other: each node's instance serves only its node, so there is no one to "
                 "elect among the nodes; run one instance per node (a DaemonSet)\n";
    return false;
  }
  flexcsi::controller::NodeDeployment node;
  node.node_name = node_name;
  node.immediate_binding = immediate_binding;
  for (const auto& [flag, text, out] :
       {std::make_tuple("--node-deployment-base-delay", &base_delay, &node.base_delay),
        std::make_tuple("--node-deployment-max-delay", &max_delay, &node.max_delay)}) {
    if (!ParseDuration(*text, out)) {
      std::cerr << "flexcsi-controller: " << flag << " \"" << *text
                << "\" is not a duration such as 15s, 500ms or 1m\n";
      return false;
    }
  }
  if (node.max_delay < node.base_delay) {
    std::cerr << "flexcsi-controller: --node-deployment-max-delay must not be shorter than "
                 "--node-deployment-base-delay\n";
    return false;
  }
  options->node_deployment = node;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace flexcsi;
  CLI::App app{
      "flexcsi-controller: provisions, deletes, snapshots and expands FlexVolume PVs "
      "through CSI"};
  controller::ControllerOptions options;
  options.election.namespace_.clear();  // defaulted after parsing, as external-provisioner does
  kube::ConfigFlags flags;
  std::string lock = "auto";
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s", timeout = "60s",
              resync = "30s", retry_start = "1s", retry_max = "5m";
  options.bridge_config_path = kDefaultBridgeConfigPath;
  app.set_version_flag("--version", VersionLine("flexcsi-controller"));
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
                 "namespace of the lock object (default, as external-provisioner's: $POD_NAMESPACE, "
                 "else the pod's service-account namespace, else default)");
  app.add_option("--leader-election-lock", lock,
                 "the lock csi-provisioner takes: lease (v2 and later, v1.x with "
                 "--leader-election-type=leases), endpoints (v1.x's default), configmap, or auto "
                 "(lease where served, else configmap)")
      ->capture_default_str();
  app.add_option("--leader-election-lease-duration", lease_duration, "duration, e.g. 15s")
      ->capture_default_str();
  app.add_option("--leader-election-renew-deadline", renew_deadline, "duration, e.g. 15s")
      ->capture_default_str();
  app.add_option("--leader-election-retry-period", retry_period, "duration, e.g. 15s")
      ->capture_default_str();
  app.add_option("--identity", options.identity,
                 "leader election identity (default: hostname_random)");
  app.add_option("--worker-threads", options.worker_threads, "parallel operations")
      ->capture_default_str();
  app.add_option("--timeout", timeout, "per CSI call, e.g. 60s")->capture_default_str();
  app.add_option("--resync-period", resync, "between full re-checks, e.g. 30s")
      ->capture_default_str();
  app.add_option("--retry-interval-start", retry_start,
                 "backoff after a claim's, snapshot's or resize's first failure; doubles per "
                 "failure")
      ->capture_default_str();
  app.add_option("--retry-interval-max", retry_max, "longest backoff between retries")
      ->capture_default_str();
  app.add_option("--metrics-address", options.metrics_address,
                 "host:port for /metrics and /healthz (empty: off)");
  bool node_deployment = false, immediate_binding = true;
  std::string node_name, node_base_delay = "20s", node_max_delay = "60s";
  app.add_flag("--node-deployment", node_deployment,
               "run beside a node-local driver on every node: provision only the claims whose "
               "selected node is this node, delete only this node's volumes (as "
               "external-provisioner's --node-deployment)");
  app.add_option("--node-name", node_name, "this node's name (default: $NODE_NAME)");
  app.add_option("--node-deployment-immediate-binding", immediate_binding,
                 "with --node-deployment: take Immediate claims for this node by setting their "
                 "selected node (one node wins)")
      ->capture_default_str();
  app.add_option("--node-deployment-base-delay", node_base_delay,
                 "with --node-deployment: an Immediate claim is taken after a random wait below "
                 "this, doubled per lost race")
      ->capture_default_str();
  app.add_option("--node-deployment-max-delay", node_max_delay,
                 "with --node-deployment: the longest such wait")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // Flags that contradict each other are refused before anything is read or contacted.
  if (!NodeDeploymentFromFlags(node_deployment, node_name, immediate_binding, node_base_delay,
                               node_max_delay, &options)) {
    return 2;
  }
  auto lock_kind = controller::ParseLeaderElectionLock(lock);
  if (!lock_kind.ok()) {
    std::cerr << "flexcsi-controller: " << lock_kind.status().message() << "\n";
    return 2;
  }
  options.election.lock = *lock_kind;

  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  // The first line of every run, so that a log read after an upgrade says which controller
  // wrote it.
  spdlog::info("{} starting", VersionLine("flexcsi-controller"));
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

  for (const auto& [flag, text, out] :
       {std::make_tuple("--timeout", &timeout, &options.timeout),
        std::make_tuple("--resync-period", &resync, &options.resync),
        std::make_tuple("--retry-interval-start", &retry_start, &options.retry_interval_start),
        std::make_tuple("--retry-interval-max", &retry_max, &options.retry_interval_max),
        std::make_tuple("--leader-election-lease-duration", &lease_duration,
                        &options.election.lease_duration),
        std::make_tuple("--leader-election-renew-deadline", &renew_deadline,
                        &options.election.renew_deadline),
        std::make_tuple("--leader-election-retry-period", &retry_period,
                        &options.election.retry_period)}) {
    if (!ParseDuration(*text, out) || out->count() <= 0) {
      std::cerr << "flexcsi-controller: " << flag << " \"" << *text
                << "\" is not a duration such as 15s, 500ms or 1m\n";
      return 2;
    }
  }
  if (options.election.renew_deadline >= options.election.lease_duration) {
    std::cerr << "flexcsi-controller: --leader-election-renew-deadline must be shorter than "
                 "--leader-election-lease-duration\n";
    return 2;
  }
  // csi-provisioner v1.x judges expiry by its own fixed 15 s lease, whatever the record says:
  // this instance must stop writing before then.
  if (options.election.lock == controller::LeaderElectionConfig::Lock::kEndpoints &&
      options.election.renew_deadline >= std::chrono::seconds(15)) {
    std::cerr << "flexcsi-controller: with --leader-election-lock endpoints, "
                 "--leader-election-renew-deadline must be shorter than 15s: csi-provisioner v1.x "
                 "takes the lock 15 s after it last saw it renewed, whatever the lock says\n";
    return 2;
  }
  if (Status one = controller::CheckOneEntryPerProvisioner(*bridge); !one.ok()) {
    std::cerr << "flexcsi-controller: " << one.message() << "\n";
    return 1;
  }
  // The lock is external-provisioner's for the driver, so that the two never provision for it
  // at once. One lock gates all the work of a process: with leader election it serves one
  // provisioner name (run one flexcsi-controller per driver to hand them over one by one).
  const std::string& provisioner = bridge->drivers.front().provisioner;
  for (const auto& d : bridge->drivers) {
    if (options.leader_election && d.provisioner != provisioner) {
      std::cerr << "flexcsi-controller: with --leader-election one process serves one "
                   "provisioner name, and this configuration has "
                << provisioner << " and " << d.provisioner
                << ": run one flexcsi-controller per driver (each takes the leader-election "
                   "lock external-provisioner takes for that driver)\n";
      return 1;
    }
  }
  options.election.name = controller::ExternalProvisionerLockName(provisioner);
  if (options.election.namespace_.empty()) {
    const char* pod_namespace = std::getenv("POD_NAMESPACE");
    options.election.namespace_ = controller::DefaultLockNamespace(
        pod_namespace ? pod_namespace : "", controller::kServiceAccountNamespaceFile);
  }
  if (options.identity.empty()) {
    char host[256] = "";
    ::gethostname(host, sizeof(host) - 1);
    std::random_device rd;
    options.identity = std::string(host) + "_" + std::to_string(rd() % 1000000);
    if (options.node_deployment) options.identity += "_" + options.node_deployment->node_name;
  }
  options.election.identity = options.identity;

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // The lock has a client of its own: the work's client is fenced by the lock, and a renewal
  // must give up within the renew deadline rather than after the default 30 s (client-go bounds
  // each renewal by it too).
  std::unique_ptr<kube::KubeClient> election_client;
  if (options.leader_election) {
    kube::ClientConfig election_config = *config;
    election_config.request_timeout = options.election.renew_deadline;
    election_config.user_agent = "flexcsi-controller/leader-election";
    auto made = kube::KubeClient::Create(election_config);
    if (!made.ok()) {
      std::cerr << "flexcsi-controller: " << made.status().message() << "\n";
      return 1;
    }
    election_client = std::move(*made);
  }

  controller::Controller controller(options, std::move(*bridge), client->get(),
                                    election_client.get());
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
