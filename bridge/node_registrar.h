// NodeRegistrar: registers every CSI driver the bridge serves on this node's Node and CSINode,
// as kubelet's CSI plugin does when a driver's registration socket appears (node_info_rules.h
// has the rules). external-provisioner and the scheduler need it: without the topology labels a
// provisioned PV's nodeAffinity matches no FlexVolume node.
//
// A background thread asks each driver for NodeGetInfo every few seconds; whenever the answer
// differs from what it last registered (first start, a driver restarted with another node id, a
// new socket) or the API objects changed (RegistrationWatch streams them; where the RBAC allows
// no watch, they are read back every 60 s), it writes them again.
// Failures are retried per driver with exponential backoff (1 s to 5 min) and never block a
// mount. Without cluster access the bridge says so once and keeps serving mounts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "bridge/bridge_context.h"
#include "bridge/node_info_rules.h"
#include "bridge/registration_watch.h"
#include "kube/kube_client.h"

namespace flexcsi {

// One registration written through the API: the Node patch, then the CSINode entry, in
// storage.k8s.io/v1, or v1beta1 where only that is served (1.14-1.16: kubelet's nodeinfomanager
// writes it there, and csi-provisioner v1.x takes its topology keys from it); skipped where
// neither is served: clusters before 1.14 get labels and the annotation only. Conflicts are retried on a fresh read. Returns whether a CSINode entry was
// written (false: not served).
StatusOr<bool> RegisterDriverOnNode(kube::KubeClient& client, const std::string& node_name,
                                    const DriverNodeInfo& info);
// The reverse, for `flexcsi uninstall-driver`: the CSINode entry, the node-id entry, and the
// topology labels no other driver's entry lists.
Status UnregisterDriverFromNode(kube::KubeClient& client, const std::string& node_name,
                                const std::string& driver);
// How the cluster registers `expected.driver` on the node now.
StatusOr<RegisteredDriver> InspectDriverRegistration(kube::KubeClient& client,
                                                     const std::string& node_name,
                                                     const DriverNodeInfo& expected);

// Where the bridge's node registration gets its node name and cluster access: the
// configuration's nodeName, else $NODE_NAME (the DaemonSet's downward API); its kubeconfig, else
// in-cluster configuration when running in a pod. An empty node name or client, with `why`,
// means no registration.
struct RegistrationAccess {
  std::string node_name;
  std::unique_ptr<kube::KubeClient> client;
  std::string why_not;  // set when registration is off
};
RegistrationAccess ResolveRegistrationAccess(const BridgeConfig& config);

class NodeRegistrar {
 public:
  NodeRegistrar(const BridgeConfig& config, CsiClients& clients, RegistrationAccess access);
  ~NodeRegistrar();

  void Start();
  void Stop();

  // Per CSI endpoint: {"driver", "nodeId", "state": registered|pending|failed|off|disabled, "message",
  // "attempts"}. For bridge.health and so `flexcsi doctor`.
  nlohmann::json Snapshot() const;

 private:
  struct DriverState {
    std::string driver;  // CSI name, once known
    std::optional<DriverNodeInfo> registered;
    std::string state = "pending";
    std::string message;
    int attempts = 0;
    std::chrono::steady_clock::time_point next_attempt{};
    std::chrono::steady_clock::time_point next_check{};  // without a watch
    uint64_t checked_generation = 0;                      // with one
    std::chrono::milliseconds delay{0};
  };
  void Run();
  // Starts the watch, or stops it for the timed check while the RBAC refuses it.
  void KeepWatching();
  // Whether the cluster's copy of a registration already made may have changed since the last
  // look: the watch saw an event that leaves it not matching, or (no watch) 60 s went by.
  bool RegistrationMayHaveChanged(DriverState& state, const DriverNodeInfo& want,
                                  std::chrono::steady_clock::time_point now);
  void SyncEndpoint(const std::string& endpoint, DriverState& state);

  const BridgeConfig& config_;
  CsiClients& clients_;
  RegistrationAccess access_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;  // the watch saw an event; guarded by mu_
  std::map<std::string, DriverState> states_;  // by CSI endpoint; guarded by mu_
  std::unique_ptr<RegistrationWatch> watch_;    // null without cluster access
  // Run's thread only: when to try a refused watch again; whether the refusal was logged
  std::chrono::steady_clock::time_point retry_watch_at_{};
  bool watch_refusal_logged_ = false;
  std::thread thread_;
};

}  // namespace flexcsi
