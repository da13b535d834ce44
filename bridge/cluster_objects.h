// ClusterObjects: the bridge's reads of the objects that say who a FlexVolume call is for
// (call_identity.h): the PV a call names, the pod its mount path names, and the PVs of a driver.
// KubeClusterObjects reads them from the API server and caches them, so that identifying a
// call stays cheap at hundreds of mounts at once (bench/README.md, "Caller checks"):
// - a PV for kPvFreshness: its volume source is immutable, its claimRef changes on binding;
// - a pod by its uid for as long as it is remembered: its volumes are immutable;
// - the list of every PV, for the inline check, for kListFreshness;
// - the pods of a node, for attach and mountdevice, which name no pod, for kListFreshness unless
//   asked fresh.
// Needs get, list on pods and get, list on persistentvolumes (deploy/kubernetes/base/*/rbac.yaml).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/lru_cache.h"
#include "common/status.h"
#include "kube/kube_client.h"

namespace flexcsi {

class ClusterObjects {
 public:
  virtual ~ClusterObjects() = default;
  // The PV, or nullopt when there is none.
  virtual StatusOr<std::optional<nlohmann::json>> PersistentVolume(const std::string& name) = 0;
  // The pod namespace/name, or nullopt when there is none or its uid is not `uid` (a pod of
  // that name made again).
  virtual StatusOr<std::optional<nlohmann::json>> Pod(const std::string& namespace_name,
                                                      const std::string& name,
                                                      const std::string& uid) = 0;
  // Every PV of the cluster.
  virtual StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>> PersistentVolumes() = 0;
  // The pods bound to node `node_name`; `fresh`: read at most kFreshList ago (a pod bound a
  // moment ago), which lets one list serve a burst of mounts.
  virtual StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>> PodsOnNode(
      const std::string& node_name, bool fresh) = 0;
};

class KubeClusterObjects : public ClusterObjects {
 public:
  static constexpr std::chrono::seconds kPvFreshness{5};
  static constexpr std::chrono::seconds kListFreshness{10};
  static constexpr std::chrono::seconds kFreshList{1};
  static constexpr size_t kRememberedPods = 4096;

  explicit KubeClusterObjects(std::unique_ptr<kube::KubeClient> client);

  StatusOr<std::optional<nlohmann::json>> PersistentVolume(const std::string& name) override;
  StatusOr<std::optional<nlohmann::json>> Pod(const std::string& namespace_name,
                                              const std::string& name,
                                              const std::string& uid) override;
  StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>> PersistentVolumes() override;
  StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>> PodsOnNode(
      const std::string& node_name, bool fresh) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct CachedList {
    Clock::time_point read_at;
    std::shared_ptr<const std::vector<nlohmann::json>> items;
  };
  struct CachedPv {
    Clock::time_point read_at;
    std::optional<nlohmann::json> pv;
  };
  // GET, with 404 as nullopt. REQUIRES: client_mu_ held.
  StatusOr<std::optional<nlohmann::json>> GetOrNone(const kube::ResourcePath& path);

  std::mutex client_mu_;  // KubeClient calls are made one at a time
  std::unique_ptr<kube::KubeClient> client_;
  std::mutex cache_mu_;
  LruCache<CachedPv> pvs_{kRememberedPods};                  // guarded by cache_mu_
  LruCache<nlohmann::json> pods_{kRememberedPods};           // by uid; guarded by cache_mu_
  Clock::time_point list_read_at_;                           // guarded by cache_mu_
  std::shared_ptr<const std::vector<nlohmann::json>> list_;  // guarded by cache_mu_
  LruCache<CachedList> node_pods_{64};                       // by node name; guarded by cache_mu_
};

}  // namespace flexcsi
