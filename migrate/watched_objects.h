// WatchedObjects: what `apply` and `rollback` read for every PV, watched once for the whole run
// (kube::Informer, one per kind) instead of listed for each PV: the PVs, claims, pods,
// ReplicaSets, HorizontalPodAutoscalers, CSIDrivers, CSINodes, Nodes and VolumeAttachments.
// Listing pods, nodes, CSINodes and VolumeAttachments again for each PV, and polling each PV and
// claim while waiting, cost about 50 requests a PV and whole-cluster lists on big clusters
// (issue #36); a watch costs one list and a stream per kind for the run.
//
// Each informer keeps a small view of each object (the *View functions), enough for the planner
// (PlanVolume) and the waits, and indexes are kept beside it (pods by claim, drivers by node,
// attached volume names, VolumeAttachments by PV) so that one PV's reads never copy a whole kind.
//
// Every reader answers std::nullopt when its kind is not being watched right now: never synced,
// not served, the watch refused (RBAC without `watch`: the informer then only re-lists, and its
// cache may be tens of seconds old), or between a broken stream and the next list. The caller
// then reads the server as before; a run never fails because a watch was refused.
//
// Freshness: a cache lags the server by the watch's latency. The PV and claim readers take the
// newest resourceVersion the caller has seen of that object (from its own reads and writes) and
// answer std::nullopt until the cache has caught up with it, so a run always sees its own writes;
// writes decided on a cached copy carry its resourceVersion (a 409 re-reads the server).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/informer.h"
#include "kube/kube_client.h"

namespace flexcsi::migrate {

// The views kept of each object; each keeps metadata.name and namespace (the cache's key).
// PVs and claims: the object less metadata.managedFields (a PV is written back from its copy).
nlohmann::json PvOrClaimView(nlohmann::json object);
// Pods: owner references, the claims of spec.volumes, spec.nodeName, status.phase.
nlohmann::json PodView(nlohmann::json pod);
// ReplicaSets: owner references (a Deployment's pods are owned through one).
nlohmann::json ReplicaSetView(nlohmann::json replicaset);
// HorizontalPodAutoscalers: spec.scaleTargetRef and spec.minReplicas.
nlohmann::json HpaView(nlohmann::json hpa);
// CSIDrivers: the name.
nlohmann::json CsiDriverView(nlohmann::json csidriver);
// CSINodes: the names of spec.drivers.
nlohmann::json CsiNodeView(nlohmann::json csinode);
// Nodes: the csi.volume.kubernetes.io/nodeid annotation, and as status.volumesAttached[].name
// every unique volume name of status.volumesAttached and status.volumesInUse.
nlohmann::json NodeView(nlohmann::json node);
// VolumeAttachments: spec.source.persistentVolumeName.
nlohmann::json VolumeAttachmentView(nlohmann::json attachment);

// True when resourceVersion `rv` is the same as or newer than `than` (empty `than`: always).
// Resource versions are etcd revisions, decimal integers, on every server flexcsi knows; one
// that is not is never taken as newer, so the caller reads the server.
bool ResourceVersionAtLeast(const std::string& rv, const std::string& than);

class WatchedObjects {
 public:
  // Namespaced kinds are watched in `namespace_` only when it is not empty.
  WatchedObjects(kube::KubeClient* client, std::string namespace_);
  ~WatchedObjects();  // stops the informers and joins their threads
  WatchedObjects(const WatchedObjects&) = delete;
  WatchedObjects& operator=(const WatchedObjects&) = delete;

  // Finds the served versions (discovery), starts one informer per kind and waits up to
  // `timeout` for each to list and open its watch. Never fails: kinds that do not are read from
  // the server by the callers (and start being served from the cache if their watch opens later).
  void Start(std::chrono::milliseconds timeout);
  // "watching 9 kinds" or "watching 7 kinds; listing per PV: pods (watch refused: ...)": for
  // the run's log.
  std::string Summary() const;

  // Whether PVs / claims in `ns` are being watched (their readers may still wait for the cache to
  // catch up).
  bool PvsWatched() const { return Watched(pvs_); }
  bool ClaimsWatched(const std::string& ns) const { return InNamespace(ns) && Watched(claims_); }
  // The cached PV / claim; the inner nullopt when the cache has none. Outer nullopt: not
  // watched, or the cache is older than `seen` (the newest resourceVersion the caller saw).
  std::optional<std::optional<nlohmann::json>> Pv(const std::string& name,
                                                  const std::string& seen) const;
  std::optional<std::optional<nlohmann::json>> Claim(const std::string& ns, const std::string& name,
                                                     const std::string& seen) const;
  // Pod views naming claim ns/name in spec.volumes, in any phase.
  std::optional<std::vector<nlohmann::json>> PodsOfClaim(const std::string& ns,
                                                         const std::string& claim) const;
  std::optional<std::optional<nlohmann::json>> ReplicaSet(const std::string& ns,
                                                          const std::string& name) const;
  std::optional<std::vector<nlohmann::json>> Hpas(const std::string& ns) const;
  std::optional<std::vector<nlohmann::json>> CsiDrivers() const;
  // The drivers CSINodes list (storage.k8s.io/v1), or where that is not served the drivers in
  // Nodes' csi.volume.kubernetes.io/nodeid annotations, as ListDriverRegistrations reads them.
  std::optional<std::set<std::string>> NodeDrivers() const;
  // Whether any node lists a unique volume name for which `matches` is true, in
  // status.volumesAttached or status.volumesInUse.
  std::optional<bool> AnyNodeListsVolume(
      const std::function<bool(const std::string&)>& matches) const;
  // Whether a VolumeAttachment (storage.k8s.io/v1) names PV `pv`; false where none is served.
  std::optional<bool> VolumeAttachmentNames(const std::string& pv) const;

  // Waiting for the caches: Changes() counts every event of every kind; AwaitChange returns once
  // it has moved past `seen`, or at `until`.
  uint64_t Changes() const { return changes_.load(); }
  void AwaitChange(uint64_t seen, std::chrono::steady_clock::time_point until) const;

 private:
  struct Kind;
  Kind* Add(const std::string& label, kube::ResourcePath path, kube::Informer::Transform view);
  bool Watched(const Kind* kind) const;
  bool InNamespace(const std::string& ns) const { return namespace_.empty() || namespace_ == ns; }
  void Changed();

  kube::KubeClient* client_;
  std::string namespace_;
  std::vector<std::unique_ptr<Kind>> kinds_;
  Kind* pvs_ = nullptr;
  Kind* claims_ = nullptr;
  Kind* pods_ = nullptr;
  Kind* replicasets_ = nullptr;
  Kind* hpas_ = nullptr;
  Kind* csidrivers_ = nullptr;
  Kind* csinodes_ = nullptr;  // null where storage.k8s.io/v1 csinodes is not served
  Kind* nodes_ = nullptr;
  Kind* attachments_ = nullptr;      // null where storage.k8s.io/v1 volumeattachments is not served
  bool drivers_from_nodes_ = false;  // no CSINode v1: registrations from Nodes' annotation
  // Discovery answered for these kinds (else their readers always answer std::nullopt).
  bool hpas_known_ = false;
  bool csidrivers_known_ = false;
  bool node_drivers_known_ = false;
  bool attachments_known_ = false;

  // Indexes, kept by the informers' handlers. REQUIRES index_mutex_.
  mutable std::mutex index_mutex_;
  std::map<std::string, std::set<std::string>> pods_by_claim_;       // "ns/claim" -> pod keys
  std::map<std::string, std::vector<std::string>> claims_of_pod_;    // pod key -> "ns/claim"
  std::map<std::string, std::set<std::string>> drivers_of_node_;     // CSINode or Node name
  std::map<std::string, std::vector<std::string>> volumes_of_node_;  // Node name
  std::map<std::string, std::string> pv_of_attachment_;              // VolumeAttachment name

  std::atomic<uint64_t> changes_{0};
  mutable std::mutex change_mutex_;
  mutable std::condition_variable change_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace flexcsi::migrate
