// ControllerContext: what every part of flexcsi-controller (provisioner, deleter, resizer,
// snapshotter) shares: the API client, the bridge configuration, one CsiClient per driver,
// the event recorder and the intent journal. Owned by Controller; parts hold a reference.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "bridge/csi_client.h"
#include "bridge/metrics.h"
#include "controller/cluster_capabilities.h"
#include "controller/event_recorder.h"
#include "controller/intent_journal.h"
#include "controller/node_deployment.h"
#include "common/json_access.h"
#include "controller/secret_params.h"
#include "controller/topology.h"
#include "kube/informer.h"
#include "kube/kube_client.h"

namespace flexcsi::controller {

inline constexpr const char* kComponent = "flexcsi-controller";

struct ControllerContext {
  kube::KubeClient* client = nullptr;
  BridgeConfig bridge;
  std::map<std::string, std::unique_ptr<CsiClient>> csi;  // flex driver -> client
  Metrics* metrics = nullptr;
  EventRecorder* events = nullptr;
  IntentJournal* journal = nullptr;
  std::chrono::milliseconds timeout{60000};  // per CSI call, like the sidecars' --timeout
  ClusterCapabilities cluster;                // discovered at start (Controller::Start)
  // --node-deployment: this process serves one node (node_deployment.h); unset: the cluster.
  std::optional<NodeDeployment> node_deployment;
  // With node_deployment: this node's segment per flex driver (its NodeGetInfo topology).
  std::map<std::string, TopologySegment> node_topology;
  const kube::Informer* claim_cache = nullptr;      // the claims informer, for cheap polling
  // Every Node (name and labels) and CSINode (name and driver entries), watched by Controller
  // (node_topology_cache.h): topology is read from them, not listed again for every claim.
  // Null (or not yet synced): the reads below ask the API server.
  const kube::Informer* node_cache = nullptr;
  const kube::Informer* csinode_cache = nullptr;
  // Every StorageClass, watched (a handful of objects, read for every claim), as csi-provisioner
  // reads classes from its lister. Null or not synced: StorageClass() asks the API server.
  const kube::Informer* class_cache = nullptr;
  const kube::Informer* volume_cache = nullptr;  // the PVs informer
  const std::atomic<bool>* stopping = nullptr;      // set when this instance stops acting

  CsiClient& Csi(const DriverConfig& driver) { return *csi.at(driver.flex_driver); }
  // Whether this process deletes or expands the PV (a PV of `driver`): always, except under
  // --node-deployment, where only the PVs whose nodeAffinity this node satisfies are its own.
  bool ServesVolume(const DriverConfig& driver, const nlohmann::json& pv) const;
  // The driver whose provisioner name is `provisioner`, or nullptr.
  const DriverConfig* DriverByProvisioner(const std::string& provisioner) const;

  // The secret's data, base64-decoded, for a CSI request. NOT_FOUND names the secret.
  StatusOr<std::map<std::string, std::string>> SecretData(const SecretRef& ref);

  // Topology keys of a driver: CSINode's topologyKeys for `node` when registered there (and the
  // cluster serves CSINode), else the keys of the driver's NodeGetInfo accessible topology
  // (cached), else none.
  std::vector<std::string> TopologyKeys(const DriverConfig& driver, const std::string& node);

  // Whether the driver has the VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability (Identity
  // GetPluginCapabilities; cached once answered).
  StatusOr<bool> SupportsTopology(const DriverConfig& driver);

  // Where the driver is registered now (topology.h AggregateTopology over all Nodes and
  // CSINodes; a cluster that does not serve CSINode (before 1.17) is judged by labels only).
  // With the Node and CSINode caches synced, the answer is kept until a Node's labels or a
  // CSINode's driver entries change (TopologyObjectChanged): one aggregation per change, not one
  // per claim over every node (at 1,000 nodes and 1,000 claims, a million node views).
  StatusOr<std::shared_ptr<const RegisteredTopology>> RegisteredTopologyOf(
      const DriverConfig& driver);
  // Told of every Node and CSINode event by Controller's handlers (`view` is the cached view).
  // A heartbeat changes only the resourceVersion and keeps what was computed.
  void TopologyObjectChanged(const std::string& kind, const std::string& type,
                             const nlohmann::json& view);

  // The items of the Node list (kept as RegisteredTopologyOf's answer is).
  StatusOr<std::shared_ptr<const nlohmann::json>> ListNodes();
  // A Node (at least its name and labels) from node_cache, else from the API server: a node
  // that joined a moment ago may not be in the cache yet.
  StatusOr<nlohmann::json> Node(const std::string& name);
  // A StorageClass from class_cache, else from the API server (NOT_FOUND when it is gone).
  StatusOr<nlohmann::json> StorageClass(const std::string& name);
  // A claim from claim_cache, else from the API server (NOT_FOUND when it is gone).
  StatusOr<nlohmann::json> Claim(const std::string& namespace_, const std::string& name);
  // Whether the PV exists: yes when the synced PV cache holds it, else the API server's word.
  StatusOr<bool> VolumeExists(const std::string& pv_name);

 private:
  bool TopologyCachesSynced() const;

  std::mutex mu_;
  std::map<std::string, std::vector<std::string>> node_info_keys_;  // guarded by mu_
  std::map<std::string, bool> supports_topology_;                   // guarded by mu_
  // What Node and CSINode views were last seen (kind/name -> hash without resourceVersion), and
  // a count of their changes; the node list and the topologies computed at that count.
  std::map<std::string, size_t> topology_views_;                    // guarded by mu_
  uint64_t topology_changes_ = 0;                                   // guarded by mu_
  struct TopologyMemo {
    uint64_t at_change = 0;
    std::shared_ptr<const nlohmann::json> nodes;
    std::map<std::string, std::shared_ptr<const RegisteredTopology>> registered;  // per driver
  };
  TopologyMemo topology_memo_;                                      // guarded by mu_
};

// Small accessors for API objects (JStr and JField are in common/json_access.h).
std::string Annotation(const nlohmann::json& object, const std::string& key);
bool HasFinalizer(const nlohmann::json& object, const std::string& finalizer);
bool BeingDeleted(const nlohmann::json& object);

}  // namespace flexcsi::controller
