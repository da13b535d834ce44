#include "bridge/bridge_daemon.h"

#include <sys/stat.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "bridge/cluster_access.h"
#include "bridge/cluster_objects.h"

namespace flexcsi {
namespace {

void MakeParentDirectory(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) mkdir(path.substr(0, slash).c_str(), 0700);
}

// Logs each node plugin's identity; a driver that is still starting is not an error here.
void LogDriverIdentities(const BridgeConfig& config, CsiClients& clients) {
  for (const auto& d : config.drivers) {
    CsiClient& client = clients.For(d.csi_endpoint);
    const Deadline deadline = Deadline::In(std::chrono::seconds(3));
    auto info = client.GetPluginInfo(deadline);
    if (!info.ok()) {
      spdlog::warn("driver {}: CSI endpoint {} not answering yet: {}", d.flex_driver,
                   d.csi_endpoint, info.status().ToString());
      continue;
    }
    if (!d.CsiDriver().empty() && info->name() != d.CsiDriver()) {
      spdlog::warn("driver {}: endpoint {} serves CSI driver {}, but the rule maps to {}",
                   d.flex_driver, d.csi_endpoint, info->name(), d.CsiDriver());
    }
    auto node = client.NodeGetInfo(deadline);
    spdlog::info("driver {} -> CSI {} {} at {} (node id {})", d.flex_driver, info->name(),
                 info->vendor_version(), d.csi_endpoint,
                 node.ok() ? node->node_id() : "unknown: " + node.status().message());
  }
}

bool AnyRuleReadsSecrets(const BridgeConfig& config) {
  for (const auto& d : config.drivers) {
    for (const auto& rule : d.mapping.rules()) {
      if (rule.secrets && rule.secrets->name) return true;
    }
  }
  return false;
}

}  // namespace

BridgeDaemon::BridgeDaemon(BridgeConfig config) : config_(std::move(config)) {
  metrics_.ExposeBuildInfo("bridge");
}

BridgeDaemon::~BridgeDaemon() { Stop(); }

Status BridgeDaemon::Start() {
  MakeParentDirectory(config_.state_database);
  auto store = StateStore::Open(config_.state_database);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  clients_ = std::make_unique<CsiClients>(&metrics_,
                                          std::chrono::seconds(config_.unavailable_retry_seconds));
  ctx_ = std::make_unique<BridgeContext>(
      BridgeContext{config_, *store_, locks_, metrics_, *clients_, repairs_});
  dispatcher_ = std::make_unique<CallDispatcher>(*ctx_);
  // Before serving: a bridge that cannot tell a PV's call from a pod author's would either
  // refuse every mount or trust them all, so it says so once, at start.
  if (!config_.trust_pod_authors) {
    ClusterAccess access = ResolveClusterAccess(config_);
    if (!access.client) {
      return FailedPrecondition(
          "the bridge identifies each call's volume with the cluster (docs/security.md), but " +
          access.why_not + "; give it a kubeconfig, or set trustPodAuthors: true on nodes "
          "where only the admin creates pods");
    }
    cluster_objects_ = std::make_unique<KubeClusterObjects>(std::move(access.client));
    ctx_->cluster = cluster_objects_.get();
    ctx_->node_name = config_.node_name;
    if (const char* env = std::getenv("NODE_NAME"); ctx_->node_name.empty() && env != nullptr) {
      ctx_->node_name = env;
    }
  } else {
    spdlog::warn("trustPodAuthors: every FlexVolume call is taken as the admin's; inline "
                 "volumes are not told from PVs (docs/security.md)");
  }
  // A wrong root is not fatal: the bridge serves, reports itself not ready and logs why (once),
  // and turns ready when kubelet's dirs appear (a bridge started before kubelet on a new node).
  kubelet_root_ = std::make_unique<KubeletRootWatch>(config_.kubelet_root);
  kubelet_root_->Check();
  ctx_->kubelet_root = kubelet_root_.get();

  LogDriverIdentities(config_, *clients_);
  // Registration runs beside the serving, never in front of it: a cluster that is down or
  // denies the writes must not keep a single mount from happening.
  registrar_ =
      std::make_unique<NodeRegistrar>(config_, *clients_, ResolveRegistrationAccess(config_));
  registrar_->Start();
  ctx_->registrar = registrar_.get();
  if (AnyRuleReadsSecrets(config_)) {
    ClusterAccess access = ResolveClusterAccess(config_);
    if (!access.client) {
      spdlog::warn("mounts whose rule reads a Secret will fail: {}", access.why_not);
    }
    secret_reader_ = std::make_unique<SecretReader>(std::move(access.client), access.why_not);
    ctx_->secrets = secret_reader_.get();
  }
  startup_report_ = ReconcileWithMountTable(*ctx_, ReconcileScope::kAllRecords);
  for (const auto& line : startup_report_.details) spdlog::warn("reconcile: {}", line);
  auto counts = store_->CountRecords();
  spdlog::info(
      "start-up reconciliation: {} repaired ({} promoted, {} rolled back), {} failed; "
      "records now: {} attachments, {} stagings, {} publications",
      startup_report_.repaired(), startup_report_.promoted, startup_report_.rolled_back,
      startup_report_.failed, counts.ok() ? counts->attachments : -1,
      counts.ok() ? counts->stagings : -1, counts.ok() ? counts->publications : -1);

  // /healthz answers from these, so that no HTTP request waits on a driver.
  dispatcher_->StartDriverProbes();
  if (!config_.metrics_address.empty()) {
    metrics_server_ =
        std::make_unique<MetricsHttpServer>(metrics_, [this] { return dispatcher_->Ready(); });
    FLEXCSI_RETURN_IF_ERROR(metrics_server_->Start(config_.metrics_address));
    // The bound port, which differs from the configured one when that asks for port 0.
    const std::string host = config_.metrics_address.substr(0, config_.metrics_address.rfind(':'));
    spdlog::info("metrics on http://{}:{}/metrics", host, metrics_server_->port());
  }
  server_ = std::make_unique<RequestServer>(*dispatcher_);
  FLEXCSI_RETURN_IF_ERROR(server_->Start(config_.socket));
  if (config_.reconcile_interval_seconds > 0) {
    reconciler_ = std::make_unique<PeriodicReconciler>(
        *ctx_, std::chrono::seconds(config_.reconcile_interval_seconds));
    reconciler_->Start();
  }
  return Status::Ok();
}

void BridgeDaemon::Stop() {
  if (server_) server_->Stop();
  if (reconciler_) reconciler_->Stop();
  if (registrar_) registrar_->Stop();
  if (metrics_server_) metrics_server_->Stop();
  if (dispatcher_) dispatcher_->StopDriverProbes();
  server_.reset();
  reconciler_.reset();
  metrics_server_.reset();
}

}  // namespace flexcsi
