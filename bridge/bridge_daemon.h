// BridgeDaemon: one flexcsi-bridge process, wired together. Start() opens the state, reconciles
// it with the mount table, then serves; Stop() undoes that in reverse order.
#pragma once

#include <memory>

#include "bridge/bridge_config.h"
#include "bridge/bridge_context.h"
#include "bridge/call_dispatcher.h"
#include "bridge/cluster_objects.h"
#include "bridge/metrics_http_server.h"
#include "bridge/node_registrar.h"
#include "bridge/reconciler.h"
#include "bridge/request_server.h"
#include "bridge/rule_secrets.h"

namespace flexcsi {

class BridgeDaemon {
 public:
  explicit BridgeDaemon(BridgeConfig config);
  ~BridgeDaemon();

  Status Start();
  void Stop();

  // What the start-up reconciliation did (valid after Start()).
  const ReconcileReport& startup_report() const { return startup_report_; }

 private:
  BridgeConfig config_;
  Metrics metrics_;
  VolumeLocks locks_;
  RepairBackoff repairs_{&metrics_};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<KubeletRootWatch> kubelet_root_;
  std::unique_ptr<CsiClients> clients_;
  std::unique_ptr<BridgeContext> ctx_;
  std::unique_ptr<CallDispatcher> dispatcher_;
  std::unique_ptr<RequestServer> server_;
  std::unique_ptr<PeriodicReconciler> reconciler_;
  std::unique_ptr<NodeRegistrar> registrar_;
  std::unique_ptr<SecretReader> secret_reader_;  // when a rule reads Secrets
  std::unique_ptr<ClusterObjects> cluster_objects_;  // unless trustPodAuthors
  std::unique_ptr<MetricsHttpServer> metrics_server_;
  ReconcileReport startup_report_;
};

}  // namespace flexcsi
