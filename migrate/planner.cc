#include "migrate/planner.h"

#include <algorithm>
#include <map>

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// external-provisioner's finalizer, which flexcsi-controller puts on the FlexVolume PVs it makes.
constexpr const char* kProvisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer";

// The translator's output less that finalizer. It is the original PV's provisioner's promise to
// delete the volume first; flexcsi-controller keeps it for FlexVolume PVs only. The CSI PV's own
// provisioner adds it where it keeps that promise (csi-provisioner v3 with HonorPVReclaimPolicy,
// to existing PVs too), and one that does not know it (v1.2.2, the Kubernetes 1.14 era's) never
// removes it: the CSI PV, once deleted, would stay Terminating for good.
void DropProvisionerFinalizer(json* target) {
  const json::json_pointer ptr("/metadata/finalizers");
  if (!target->contains(ptr) || !target->at(ptr).is_array()) return;
  json kept = json::array();
  for (const auto& f : target->at(ptr)) {
    if (f != kProvisionerFinalizer) kept.push_back(f);
  }
  if (kept.empty()) {
    (*target)["metadata"].erase("finalizers");
  } else {
    target->at(ptr) = std::move(kept);
  }
}

// The controller owner reference of `object`, or null.
const json* ControllerRef(const json& object) {
  const json* refs = nullptr;
  if (object.contains("metadata") && object["metadata"].is_object() &&
      object["metadata"].contains("ownerReferences")) {
    refs = &object["metadata"]["ownerReferences"];
  }
  if (refs == nullptr || !refs->is_array()) return nullptr;
  for (const auto& r : *refs) {
    if (r.is_object() && r.value("controller", false)) return &r;
  }
  return nullptr;
}

WorkloadRef MakeWorkload(const std::string& kind, const std::string& ns, const std::string& name) {
  WorkloadRef w{kind, ns, name, "", "", ""};
  if (kind == "Deployment") {
    w.group_version = "apps/v1";
    w.resource = "deployments";
  } else if (kind == "StatefulSet") {
    w.group_version = "apps/v1";
    w.resource = "statefulsets";
  } else if (kind == "ReplicaSet") {
    w.group_version = "apps/v1";
    w.resource = "replicasets";
  } else if (kind == "ReplicationController") {
    w.group_version = "v1";
    w.resource = "replicationcontrollers";
  }
  // DaemonSet, Job and anything else cannot be scaled to zero: resource stays empty.
  return w;
}

const json& Volumes(const json& pod_spec) {
  static const json kEmpty = json::array();
  if (!pod_spec.is_object() || !pod_spec.contains("volumes") || !pod_spec["volumes"].is_array()) {
    return kEmpty;
  }
  return pod_spec["volumes"];
}

void CollectInline(const std::string& kind, const json& object, const json& pod_spec,
                   const translator::Translator& translator, std::vector<InlineVolumeWork>* out) {
  for (const auto& volume : Volumes(pod_spec)) {
    const std::string source = MigratableSourceOf(volume);
    if (source.empty()) continue;
    InlineVolumeWork work{
        kind, NamespaceOf(object), NameOf(object), volume.value("name", ""), source, "", ""};
    auto translated = translator.TranslateInTreeInlineVolumeToCSI(volume, NamespaceOf(object));
    if (translated.ok()) {
      work.csi_driver = Str(*translated, "/spec/csi/driver"_json_pointer);
    } else {
      work.note = translated.status().message();
    }
    out->push_back(std::move(work));
  }
}

const json& PodTemplateSpec(const json& workload) {
  static const json kNull;
  const json::json_pointer p("/spec/template/spec");
  return workload.is_object() && workload.contains(p) ? workload.at(p) : kNull;
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kCanMove:
      return "can-move";
    case Verdict::kUntranslatable:
      return "untranslatable";
    case Verdict::kUnbound:
      return "unbound";
    case Verdict::kDriverNotRegistered:
      return "driver-not-registered";
    case Verdict::kInUse:
      return "in-use";
  }
  return "unknown";
}

const std::vector<std::string>& MigratableSourceFields() {
  static const std::vector<std::string> kFields = {
      "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "azureFile", "cinder",
      "vsphereVolume",        "portworxVolume",    "rbd",       "flexVolume"};
  return kFields;
}

std::string MigratableSourceOf(const json& spec) {
  if (!spec.is_object()) return "";
  for (const auto& f : MigratableSourceFields()) {
    if (spec.contains(f) && !spec[f].is_null()) return f;
  }
  return "";
}

bool PodIsTerminated(const json& pod) {
  const std::string phase = Str(pod, "/status/phase"_json_pointer);
  return phase == "Succeeded" || phase == "Failed";
}

ClusterIndex::ClusterIndex(const ClusterObjects& o) {
  claims_.reserve(o.pvcs.size());
  for (const auto& c : o.pvcs) claims_[Key(NamespaceOf(c), NameOf(c))] = &c;
  for (const auto& pod : o.pods) {
    const json::json_pointer spec("/spec");
    if (!pod.is_object() || !pod.contains(spec)) continue;
    for (const auto& v : Volumes(pod.at(spec))) {
      const std::string claim = Str(v, "/persistentVolumeClaim/claimName"_json_pointer);
      if (!claim.empty()) pods_by_claim_[Key(NamespaceOf(pod), claim)].push_back(&pod);
    }
  }
  for (const auto& rs : o.replicasets) replicasets_[Key(NamespaceOf(rs), NameOf(rs))] = &rs;
  for (const auto& h : o.hpas) {
    const std::string kind = Str(h, "/spec/scaleTargetRef/kind"_json_pointer);
    const std::string name = Str(h, "/spec/scaleTargetRef/name"_json_pointer);
    hpa_by_target_[kind + "/" + Key(NamespaceOf(h), name)] = &h;
  }
  for (const auto& d : o.csidrivers) csidrivers_.insert(NameOf(d));
  node_drivers_.insert(o.node_drivers.begin(), o.node_drivers.end());
  for (const auto& n : o.csinodes) {
    const json::json_pointer drivers("/spec/drivers");
    if (!n.is_object() || !n.contains(drivers) || !n.at(drivers).is_array()) continue;
    for (const auto& d : n.at(drivers)) {
      if (d.is_object()) node_drivers_.insert(d.value("name", ""));
    }
  }
  for (const auto& n : o.nodes) {
    // kubelet's nodeinfomanager (and the bridge) keep a JSON map of driver -> node id here.
    const json by_driver = json::parse(
        Str(n, "/metadata/annotations/csi.volume.kubernetes.io~1nodeid"_json_pointer), nullptr,
        false);
    if (!by_driver.is_object()) continue;
    for (const auto& entry : by_driver.items()) node_drivers_.insert(entry.key());
  }
}

const json* ClusterIndex::Claim(const std::string& ns, const std::string& name) const {
  auto it = claims_.find(Key(ns, name));
  return it == claims_.end() ? nullptr : it->second;
}

const std::vector<const json*>& ClusterIndex::PodsOfClaim(const std::string& ns,
                                                          const std::string& name) const {
  auto it = pods_by_claim_.find(Key(ns, name));
  return it == pods_by_claim_.end() ? empty_ : it->second;
}

WorkloadRef ClusterIndex::OwnerOf(const json& pod) const {
  WorkloadRef owner = ControllerOf(pod);
  // An HPA stands still while its target is at 0 replicas (the HPA controller: "scaling is
  // disabled since the replica count of the target is zero") unless its minReplicas is 0, which
  // the HPAScaleToZero feature allows: then it may scale the workload up mid-move.
  auto hpa = hpa_by_target_.find(owner.kind + "/" + Key(owner.namespace_, owner.name));
  if (owner.scalable() && hpa != hpa_by_target_.end()) {
    const json& spec = hpa->second->value("spec", json::object());
    if (spec.contains("minReplicas") && spec["minReplicas"].is_number_integer() &&
        spec["minReplicas"].get<int64_t>() == 0) {
      owner.blocker = "HorizontalPodAutoscaler " + NameOf(*hpa->second) +
                      " has minReplicas 0 and could scale it up from 0 during the move: set its "
                      "minReplicas to 1 or more while the PVs move, then apply again";
    }
  }
  return owner;
}

WorkloadRef ClusterIndex::ControllerOf(const json& pod) const {
  const json* ref = ControllerRef(pod);
  const std::string ns = NamespaceOf(pod);
  if (ref == nullptr) return WorkloadRef{};
  const std::string kind = ref->value("kind", "");
  const std::string name = ref->value("name", "");
  if (kind == "ReplicaSet") {
    auto it = replicasets_.find(Key(ns, name));
    if (it != replicasets_.end()) {
      const json* up = ControllerRef(*it->second);
      if (up != nullptr && up->value("kind", "") == "Deployment") {
        return MakeWorkload("Deployment", ns, up->value("name", ""));
      }
      if (up != nullptr) return MakeWorkload(up->value("kind", ""), ns, up->value("name", ""));
    }
  }
  return MakeWorkload(kind, ns, name);
}

bool ClusterIndex::DriverRegistered(const std::string& driver) const {
  return csidrivers_.count(driver) > 0 || node_drivers_.count(driver) > 0;
}

std::optional<WrittenSecretPlan> PlanWrittenSecret(const json& pv,
                                                   const translator::Translator& translator) {
  if (MigratableSourceOf(pv.value("spec", json::object())) != "flexVolume") return std::nullopt;
  auto volume = translator.FlexVolumeOfPV(pv);
  if (!volume.ok() || !translator::DerivesSecrets(*volume)) return std::nullopt;
  WrittenSecretPlan w;
  w.name = translator::WrittenSecretName(NameOf(pv));
  w.namespace_ = Str(pv, "/spec/claimRef/namespace"_json_pointer);
  for (const auto& [key, value] : volume->secret_values) w.keys.push_back(key);
  if (volume->read_secret) {
    w.from_secret = volume->read_secret->namespace_name + "/" + volume->read_secret->name;
    const std::string& as = volume->read_secret_single_key_as;
    if (!as.empty() && std::find(w.keys.begin(), w.keys.end(), as) == w.keys.end()) {
      w.keys.push_back(as);
      std::sort(w.keys.begin(), w.keys.end());
    }
  }
  return w;
}

VolumePlan PlanVolume(const json& pv, const ClusterIndex& index,
                      const translator::Translator& translator) {
  VolumePlan p;
  p.pv_name = NameOf(pv);
  p.source = MigratableSourceOf(pv.value("spec", json::object()));
  p.reclaim_policy = Str(pv, "/spec/persistentVolumeReclaimPolicy"_json_pointer);
  p.pv_phase = Str(pv, "/status/phase"_json_pointer);
  p.claim_namespace = Str(pv, "/spec/claimRef/namespace"_json_pointer);
  p.claim_name = Str(pv, "/spec/claimRef/name"_json_pointer);

  const json* claim = p.claim_name.empty() ? nullptr : index.Claim(p.claim_namespace, p.claim_name);
  if (claim != nullptr) {
    p.claim_phase = Str(*claim, "/status/phase"_json_pointer);
    for (const json* pod : index.PodsOfClaim(p.claim_namespace, p.claim_name)) {
      if (PodIsTerminated(*pod)) continue;
      PodRef ref{NamespaceOf(*pod), NameOf(*pod), Str(*pod, "/status/phase"_json_pointer),
                 Str(*pod, "/spec/nodeName"_json_pointer), index.OwnerOf(*pod)};
      if (!ref.owner.kind.empty() &&
          std::find(p.workloads.begin(), p.workloads.end(), ref.owner) == p.workloads.end()) {
        p.workloads.push_back(ref.owner);
      }
      p.pods.push_back(std::move(ref));
    }
  }

  auto plugin = translator.GetInTreePluginNameFromSpec(&pv, nullptr);
  if (plugin.ok()) p.plugin = *plugin;
  auto target = translator.TranslateInTreePVToCSI(StripServerFields(pv));
  if (!target.ok()) {
    p.verdict = Verdict::kUntranslatable;
    p.reason = target.status().message();
    return p;
  }
  p.target_pv = std::move(*target);
  DropProvisionerFinalizer(&p.target_pv);
  p.written_secret = PlanWrittenSecret(pv, translator);
  p.csi_driver = Str(p.target_pv, "/spec/csi/driver"_json_pointer);

  if (p.claim_name.empty()) {
    p.verdict = Verdict::kUnbound;
    p.reason = "the PV has no claim" + (p.pv_phase.empty() ? "" : " (phase " + p.pv_phase + ")");
    return p;
  }
  if (claim == nullptr) {
    p.verdict = Verdict::kUnbound;
    p.reason = "claim " + p.ClaimKey() + " does not exist";
    return p;
  }
  const std::string ref_uid = Str(pv, "/spec/claimRef/uid"_json_pointer);
  if (Str(*claim, "/spec/volumeName"_json_pointer) != p.pv_name ||
      (!ref_uid.empty() && ref_uid != UidOf(*claim))) {
    p.verdict = Verdict::kUnbound;
    p.reason = "claim " + p.ClaimKey() + " is not bound to this PV";
    return p;
  }
  if (p.pv_phase != "Bound" || p.claim_phase != "Bound") {
    p.verdict = Verdict::kUnbound;
    p.reason = "not Bound (PV " + (p.pv_phase.empty() ? "no phase" : p.pv_phase) + ", claim " +
               (p.claim_phase.empty() ? "no phase" : p.claim_phase) + ")";
    return p;
  }
  if (!index.DriverRegistered(p.csi_driver)) {
    p.verdict = Verdict::kDriverNotRegistered;
    p.reason = "CSI driver " + p.csi_driver +
               " is not registered (no CSIDriver object, and no CSINode or Node annotation "
               "csi.volume.kubernetes.io/nodeid lists it)";
    return p;
  }
  if (!p.pods.empty()) {
    p.verdict = Verdict::kInUse;
    p.reason = InUseReason(p.pods);
    return p;
  }
  p.verdict = Verdict::kCanMove;
  return p;
}

Plan BuildPlan(const ClusterObjects& objects, const translator::Translator& translator,
               const PlanOptions& options) {
  ClusterIndex index(objects);
  Plan plan;
  for (const auto& pv : objects.pvs) {
    if (MigratableSourceOf(pv.value("spec", json::object())).empty()) continue;
    if (!options.namespace_.empty() &&
        Str(pv, "/spec/claimRef/namespace"_json_pointer) != options.namespace_) {
      continue;
    }
    plan.volumes.push_back(PlanVolume(pv, index, translator));
  }
  std::sort(plan.volumes.begin(), plan.volumes.end(),
            [](const VolumePlan& a, const VolumePlan& b) { return a.pv_name < b.pv_name; });

  std::map<WorkloadRef, WorkloadPlan> workloads;
  for (const auto& v : plan.volumes) {
    for (const auto& pod : v.pods) {
      WorkloadRef w = pod.owner;
      if (w.kind.empty()) w = WorkloadRef{"Pod", pod.namespace_, pod.name, "", "", ""};
      WorkloadPlan& wp = workloads[w];
      if (wp.pvs.empty()) {
        wp.workload = w;
        wp.refusal = ScaleDownRefusal(pod.owner, pod.namespace_ + "/" + pod.name);
      }
      if (std::find(wp.pvs.begin(), wp.pvs.end(), v.pv_name) == wp.pvs.end()) {
        wp.pvs.push_back(v.pv_name);
      }
    }
  }
  for (auto& [ref, wp] : workloads) plan.workloads.push_back(std::move(wp));

  auto templates = [&](const std::vector<json>& list, const std::string& kind) {
    for (const auto& w : list) {
      // ReplicaSets of a Deployment and Jobs of a CronJob are reported through their owner.
      if ((kind == "ReplicaSet" || kind == "Job") && ControllerRef(w) != nullptr) continue;
      CollectInline(kind, w, PodTemplateSpec(w), translator, &plan.inline_volumes);
    }
  };
  templates(objects.deployments, "Deployment");
  templates(objects.statefulsets, "StatefulSet");
  templates(objects.daemonsets, "DaemonSet");
  templates(objects.replicasets, "ReplicaSet");
  templates(objects.replicationcontrollers, "ReplicationController");
  templates(objects.jobs, "Job");
  for (const auto& cj : objects.cronjobs) {
    const json::json_pointer p("/spec/jobTemplate/spec/template/spec");
    if (cj.is_object() && cj.contains(p)) {
      CollectInline("CronJob", cj, cj.at(p), translator, &plan.inline_volumes);
    }
  }
  for (const auto& pod : objects.pods) {
    if (ControllerRef(pod) != nullptr) continue;  // their template was reported above
    CollectInline("Pod", pod, pod.value("spec", json::object()), translator, &plan.inline_volumes);
  }
  plan.storage_classes = PlanStorageClasses(objects, translator);
  return plan;
}

std::string InUseReason(const std::vector<PodRef>& pods) {
  std::string names;
  for (const auto& pod : pods) {
    if (!names.empty()) names += ", ";
    names += pod.namespace_ + "/" + pod.name;
    if (!pod.owner.kind.empty()) names += " (" + pod.owner.ToString() + ")";
  }
  return "in use by pod" + std::string(pods.size() > 1 ? "s " : " ") + names;
}

std::string ScaleDownRefusal(const WorkloadRef& owner, const std::string& pod) {
  if (owner.scalable()) return "";
  if (!owner.blocker.empty()) return owner.ToString() + ": " + owner.blocker;
  if (owner.kind.empty()) {
    return "pod " + pod +
           " has no controller and cannot be scaled down: delete it (nothing brings it back), "
           "apply again, then create it again";
  }
  if (owner.kind == "DaemonSet") {
    return "DaemonSet/" + owner.name +
           " cannot be scaled to zero: make it run on no node while the PVs move (a nodeSelector "
           "no node matches) or delete it, apply again, then restore it";
  }
  if (owner.kind == "Job") {
    return "Job/" + owner.name +
           " cannot be scaled down: wait until it completes (or delete it), then apply again";
  }
  return owner.ToString() + " cannot be scaled down by migrate: stop its pods, then apply again";
}

std::string InUseRefusal(const std::vector<PodRef>& pods, bool scale_down) {
  if (pods.empty()) return "";
  if (!scale_down) return InUseReason(pods) + "; stop them or use --scale-down";
  for (const auto& pod : pods) {
    if (!pod.owner.scalable()) {
      return "in use by pod " + pod.namespace_ + "/" + pod.name + ": " +
             ScaleDownRefusal(pod.owner, pod.namespace_ + "/" + pod.name);
    }
  }
  return "";
}

}  // namespace flexcsi::migrate
