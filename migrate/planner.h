// The planner: for every in-tree and FlexVolume PV, what it becomes under CSI and whether it can
// move now. Pure computation over ClusterObjects (no I/O), shared by `migrate plan` (the whole
// cluster) and `migrate apply` (the fresh objects of one PV, re-read before its first write).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/cluster_objects.h"
#include "migrate/storage_class_plan.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

// Why a PV can or cannot move now; the first that applies, in this order of precedence.
enum class Verdict {
  kCanMove,
  kUntranslatable,       // the translator refuses it (its message is the reason)
  kUnbound,              // no claim, or the claim is not Bound to this PV
  kDriverNotRegistered,  // no CSIDriver object, CSINode or Node's nodeid annotation lists it
  kInUse,                // pods that are not Succeeded/Failed use the claim
};
const char* VerdictName(Verdict v);  // "can-move", "untranslatable", ...

// The top-level owner of a pod: Deployment (through its ReplicaSet), StatefulSet, ReplicaSet,
// ReplicationController, DaemonSet, Job; empty kind for a pod without a controller.
struct WorkloadRef {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string group_version;  // for the /scale subresource
  std::string resource;       // plural; empty when the kind cannot be scaled to zero
  // Set when migrate must not scale it although its kind scales: an HPA with minReplicas 0.
  std::string blocker;
  bool scalable() const { return !resource.empty() && blocker.empty(); }
  std::string ToString() const { return kind + "/" + name; }
  bool operator<(const WorkloadRef& o) const {
    return std::tie(namespace_, kind, name) < std::tie(o.namespace_, o.kind, o.name);
  }
  bool operator==(const WorkloadRef& o) const {
    return kind == o.kind && namespace_ == o.namespace_ && name == o.name;
  }
};

struct PodRef {
  std::string namespace_;
  std::string name;
  std::string phase;
  std::string node;
  WorkloadRef owner;  // kind empty: a bare pod
};

// The Secret `apply` writes in the claim's namespace for a PV whose rule derives its secrets (a CSI
// PV can only name a Secret; docs/mapping-rules.md). No value is known or shown here: the keys
// are read from the rule's Secret only when apply writes it.
struct WrittenSecretPlan {
  std::string namespace_;
  std::string name;
  std::vector<std::string> keys;  // the keys it will hold; with from_secret and no singleKeyAs,
                                  // every key of that Secret too
  std::string from_secret;        // "namespace/name" of the Secret the rule reads, or ""
};

struct VolumePlan {
  std::string pv_name;
  std::string source;  // the PV's volume source field: "awsElasticBlockStore", "flexVolume", ...
  std::string plugin;  // in-tree plugin name, "flexvolume-<vendor>~<name>" for FlexVolume
  std::string csi_driver;
  std::string reclaim_policy;
  std::string pv_phase;
  std::string claim_namespace;
  std::string claim_name;
  std::string claim_phase;
  std::vector<PodRef> pods;            // pods that hold the claim (not Succeeded/Failed)
  std::vector<WorkloadRef> workloads;  // their owners, each once
  nlohmann::json target_pv;            // the translator's output; null when untranslatable
  std::optional<WrittenSecretPlan> written_secret;
  Verdict verdict = Verdict::kCanMove;
  std::string reason;  // empty for kCanMove

  std::string ClaimKey() const {
    return claim_name.empty() ? "" : claim_namespace + "/" + claim_name;
  }
};

// A pod template (or a bare pod) with an inline in-tree or FlexVolume volume: work for the
// operator, who must edit the workload; migrate never edits workloads.
struct InlineVolumeWork {
  std::string kind;  // Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController,
                     // Job, CronJob, Pod
  std::string namespace_;
  std::string name;
  std::string volume;      // volumes[].name
  std::string source;      // "gcePersistentDisk", "flexVolume", ...
  std::string csi_driver;  // what the translator maps it to; empty when it cannot
  std::string note;        // the translator's error, when it cannot
};

// A workload (or a bare pod) whose pods hold claims of migratable PVs: moved as one workload
// group under one scale-down with --scale-down, or refused with what the operator must do.
struct WorkloadPlan {
  WorkloadRef workload;  // kind "Pod" for a pod without a controller
  std::vector<std::string> pvs;
  std::string refusal;  // empty: scales to zero with --scale-down
};

struct Plan {
  std::vector<VolumePlan> volumes;  // sorted by PV name
  std::vector<InlineVolumeWork> inline_volumes;
  std::vector<WorkloadPlan> workloads;  // sorted by namespace, kind, name
  // Cluster-wide whatever the namespace: classes still on in-tree plugins or flexcsi-controller.
  std::vector<StorageClassPlan> storage_classes;
};

struct PlanOptions {
  std::string namespace_;  // non-empty: only PVs claimed from this namespace
};

// Volume source fields of the eight in-tree plugins the translator knows, and flexVolume.
const std::vector<std::string>& MigratableSourceFields();
// The first of MigratableSourceFields() present in `spec` (PV spec or pod volume), or "".
std::string MigratableSourceOf(const nlohmann::json& spec);

// Indexes of the objects, built once so planning 10,000 PVs stays linear.
class ClusterIndex {
 public:
  explicit ClusterIndex(const ClusterObjects& objects);
  const nlohmann::json* Claim(const std::string& ns, const std::string& name) const;
  // Pods naming the claim in spec.volumes[].persistentVolumeClaim, in any phase.
  const std::vector<const nlohmann::json*>& PodsOfClaim(const std::string& ns,
                                                        const std::string& name) const;
  // The pod's top-level controller, with `blocker` set when an HPA forbids scaling it.
  WorkloadRef OwnerOf(const nlohmann::json& pod) const;
  bool DriverRegistered(const std::string& driver) const;

 private:
  WorkloadRef ControllerOf(const nlohmann::json& pod) const;
  std::unordered_map<std::string, const nlohmann::json*> claims_;
  std::unordered_map<std::string, std::vector<const nlohmann::json*>> pods_by_claim_;
  std::unordered_map<std::string, const nlohmann::json*> replicasets_;
  std::unordered_map<std::string, const nlohmann::json*> hpa_by_target_;  // "Kind/ns/name"
  std::set<std::string> csidrivers_;
  std::set<std::string> node_drivers_;
  std::vector<const nlohmann::json*> empty_;
};

// The Secret apply writes for a translated flexVolume PV, or none (translator's FlexVolumeOfPV).
std::optional<WrittenSecretPlan> PlanWrittenSecret(const nlohmann::json& pv,
                                                   const translator::Translator& translator);

// One PV (which must have a MigratableSourceOf its spec) against the index.
VolumePlan PlanVolume(const nlohmann::json& pv, const ClusterIndex& index,
                      const translator::Translator& translator);

Plan BuildPlan(const ClusterObjects& objects, const translator::Translator& translator,
               const PlanOptions& options);

bool PodIsTerminated(const nlohmann::json& pod);

// Why migrate does not scale the owner of a pod holding a claim, with what the operator must
// do instead; "" when it scales to zero (Deployment, StatefulSet, ReplicaSet,
// ReplicationController without an HPA that scales from zero). `pod` names a bare pod.
std::string ScaleDownRefusal(const WorkloadRef& owner, const std::string& pod);

// "in use by pod ns/a (Deployment/web), ns/b": the planner's kInUse reason.
std::string InUseReason(const std::vector<PodRef>& pods);

// The one in-use rule of apply and rollback, checked before either writes anything: "" when no
// pod holds the claim, or when `scale_down` and every pod holding it has an owner that scales to
// zero; otherwise why the PV must not be touched now.
std::string InUseRefusal(const std::vector<PodRef>& pods, bool scale_down);

}  // namespace flexcsi::migrate
