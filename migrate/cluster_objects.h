// The cluster objects a migration looks at, as lists of API JSON, and the reads that fetch them.
// The planner works on these lists only (no I/O), so it can be tested and benchmarked on
// generated objects; ListClusterObjects is the one place that lists them from a server.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"

namespace flexcsi::migrate {

struct ClusterObjects {
  std::vector<nlohmann::json> pvs;
  std::vector<nlohmann::json> pvcs;
  std::vector<nlohmann::json> pods;
  std::vector<nlohmann::json> replicasets;
  std::vector<nlohmann::json> deployments;
  std::vector<nlohmann::json> statefulsets;
  std::vector<nlohmann::json> daemonsets;
  std::vector<nlohmann::json> replicationcontrollers;
  std::vector<nlohmann::json> jobs;
  std::vector<nlohmann::json> cronjobs;
  std::vector<nlohmann::json> csidrivers;
  std::vector<nlohmann::json> csinodes;
  std::vector<nlohmann::json> hpas;  // HorizontalPodAutoscalers (autoscaling/v2, else v1)
  std::vector<nlohmann::json> storageclasses;
  // Read only by the leftovers check (ListLeftoverObjects): cluster-wide, never by plan/apply.
  std::vector<nlohmann::json> volumeattachments;
  // Read by the leftovers check, and by plan/apply where no CSINode v1 is served
  // (ListDriverRegistrations).
  std::vector<nlohmann::json> nodes;
  // Drivers registered on some node, as CSINodes or Nodes list them, when known without the
  // objects (apply's watched caches, watched_objects.h); added to those the objects list.
  std::set<std::string> node_drivers;
};

// Lists everything `plan` needs. Namespaced kinds are listed in `namespace_` only when it is
// non-empty, else in all namespaces. Workload kinds a server does not serve (404 on the
// collection, e.g. batch/v1 on a stripped-down API server) are left empty.
StatusOr<ClusterObjects> ListClusterObjects(kube::KubeClient& client,
                                            const std::string& namespace_);

// Where the planner learns which CSI drivers are installed: the CSIDrivers (storage.k8s.io/v1,
// else v1beta1: 1.14-1.17) and CSINodes (v1), and, where no CSINode v1 is served (before 1.17),
// the Nodes, whose csi.volume.kubernetes.io/nodeid annotation then shows the registrations.
// Replaces objects->nodes in that case.
Status ListDriverRegistrations(kube::KubeClient& client, ClusterObjects* objects);

// The leftovers check also needs VolumeAttachments and Nodes (leftovers.h).
Status ListLeftoverObjects(kube::KubeClient& client, ClusterObjects* objects);

// HorizontalPodAutoscalers in `namespace_` (all when empty) into `out`: autoscaling/v2, else
// autoscaling/v1 on servers older than v1.23; none where neither is served. Both versions carry
// what the planner reads (spec.scaleTargetRef, spec.minReplicas).
Status ListHorizontalPodAutoscalers(kube::KubeClient& client, const std::string& namespace_,
                                    std::vector<nlohmann::json>* out);

// A copy of `object` fit to be created again: metadata.uid, resourceVersion, creationTimestamp,
// deletionTimestamp, deletionGracePeriodSeconds, generation, managedFields, selfLink and status
// removed (the server sets them), and spec.claimRef.resourceVersion removed (it names a version
// of the claim that a re-created PV must not pin).
nlohmann::json StripServerFields(const nlohmann::json& object);

// Small readers for API JSON; missing or mistyped fields read as empty.
std::string Str(const nlohmann::json& object, const nlohmann::json::json_pointer& ptr);
std::string NameOf(const nlohmann::json& object);
std::string NamespaceOf(const nlohmann::json& object);
std::string UidOf(const nlohmann::json& object);

}  // namespace flexcsi::migrate
