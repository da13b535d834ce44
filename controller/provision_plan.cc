#include "controller/provision_plan.h"

#include <algorithm>
#include <set>

#include "bridge/csi_requests.h"
#include "common/json_access.h"
#include "controller/quantity.h"

namespace flexcsi::controller {
namespace {

std::string Annotation(const nlohmann::json& object, const std::string& key) {
  const auto& ann = JField(JField(object, "metadata"), "annotations");
  return ann.is_object() ? JStr(ann, key.c_str()) : std::string();
}

// The claim, class or volume kinds a FlexVolume PV cannot be; the class's reclaimPolicy.
Status RefuseWhatFlexVolumeCannotBe(const nlohmann::json& claim,
                                    const nlohmann::json& storage_class, ProvisionPlan* plan) {
  if (JStr(JField(claim, "spec"), "volumeMode") == "Block") {
    return InvalidArgument(
        "volumeMode Block is not possible: FlexVolume PVs are filesystem "
        "volumes only");
  }
  const auto& mount_options = JField(storage_class, "mountOptions");
  if (mount_options.is_array() && !mount_options.empty()) {
    return InvalidArgument("StorageClass " + plan->storage_class +
                           " has mountOptions, which Kubernetes rejects on FlexVolume PVs; put "
                           "the flags into the driver's mountFlags in the bridge configuration");
  }
  const std::string reclaim = JStr(storage_class, "reclaimPolicy");
  if (!reclaim.empty()) plan->reclaim_policy = reclaim;
  if (plan->reclaim_policy != "Delete" && plan->reclaim_policy != "Retain") {
    return InvalidArgument("reclaimPolicy " + plan->reclaim_policy +
                           " is not supported (Delete or Retain)");
  }
  return Status::Ok();
}

// The class's parameters, every value a string.
StatusOr<std::map<std::string, std::string>> ClassParameters(const nlohmann::json& storage_class) {
  std::map<std::string, std::string> params;
  const auto& class_params = JField(storage_class, "parameters");
  if (class_params.is_object()) {
    for (auto it = class_params.begin(); it != class_params.end(); ++it) {
      if (!it.value().is_string()) {
        return InvalidArgument("StorageClass parameter " + it.key() + " is not a string");
      }
      params[it.key()] = it.value().get<std::string>();
    }
  }
  return params;
}

// CreateVolume gets every parameter but the csi.storage.k8s.io/ ones the provisioner consumes.
Status PassOnDriverParameters(const std::map<std::string, std::string>& params,
                              csi::v1::CreateVolumeRequest* request) {
  static const std::set<std::string> kKnown = {
      "csi.storage.k8s.io/fstype",
      "csi.storage.k8s.io/secret-name",
      "csi.storage.k8s.io/secret-namespace",
      "csi.storage.k8s.io/provisioner-secret-name",
      "csi.storage.k8s.io/provisioner-secret-namespace",
      "csi.storage.k8s.io/controller-publish-secret-name",
      "csi.storage.k8s.io/controller-publish-secret-namespace",
      "csi.storage.k8s.io/node-stage-secret-name",
      "csi.storage.k8s.io/node-stage-secret-namespace",
      "csi.storage.k8s.io/node-publish-secret-name",
      "csi.storage.k8s.io/node-publish-secret-namespace",
      "csi.storage.k8s.io/controller-expand-secret-name",
      "csi.storage.k8s.io/controller-expand-secret-namespace",
      "csi.storage.k8s.io/node-expand-secret-name",
      "csi.storage.k8s.io/node-expand-secret-namespace"};
  for (const auto& [key, value] : params) {
    if (IsProvisionerOnlyParameter(key)) {
      // external-provisioner fails on unknown csi.storage.k8s.io/ keys too: a typo in a secret
      // key would otherwise silently provision without the secret.
      if (!kKnown.count(key)) {
        return InvalidArgument("StorageClass parameter " + key +
                               " is not a csi.storage.k8s.io/ key this provisioner knows");
      }
      continue;
    }
    (*request->mutable_parameters())[key] = value;
  }
  return Status::Ok();
}

// The class's fsType (CSI key, else the old "fstype"), else the driver rule's default.
std::string FsTypeFor(const std::map<std::string, std::string>& params,
                      const DriverConfig& driver) {
  for (const char* key : {"csi.storage.k8s.io/fstype", "fstype"}) {
    auto it = params.find(key);
    if (it != params.end()) return it->second;
  }
  return driver.mapping.rules().front().default_fs_type;
}

// The provisioner and controller-expand secrets, and the one node secret a FlexVolume PV's
// secretRef can carry.
Status ResolveSecrets(const std::map<std::string, std::string>& params, const nlohmann::json& claim,
                      ProvisionPlan* plan) {
  auto secret = ResolveSecretRef(SecretKind::kProvisioner, params, plan->pv_name, &claim);
  if (!secret.ok()) return secret.status();
  plan->provisioner_secret = *secret;
  auto stage = ResolveSecretRef(SecretKind::kNodeStage, params, plan->pv_name, &claim);
  if (!stage.ok()) return stage.status();
  auto publish = ResolveSecretRef(SecretKind::kNodePublish, params, plan->pv_name, &claim);
  if (!publish.ok()) return publish.status();
  auto controller_publish =
      ResolveSecretRef(SecretKind::kControllerPublish, params, plan->pv_name, &claim);
  if (!controller_publish.ok()) return controller_publish.status();
  // A FlexVolume PV has one secretRef; kubelet hands its keys to every call and the bridge's
  // rule passes them on as the node secrets. Different node secrets cannot be expressed.
  for (const auto* other : {&*publish, &*controller_publish}) {
    if (other->has_value() && stage->has_value() && !(**other == **stage)) {
      return InvalidArgument(
          "a FlexVolume PV carries one secretRef, but the class names "
          "different node-stage, node-publish or controller-publish secrets");
    }
  }
  plan->node_secret = stage->has_value()     ? *stage
                      : publish->has_value() ? *publish
                                             : *controller_publish;
  auto expand = ResolveSecretRef(SecretKind::kControllerExpand, params, plan->pv_name, &claim);
  if (!expand.ok()) return expand.status();
  plan->controller_expand_secret = *expand;
  return Status::Ok();
}

// The claim's capacity range and access modes, the latter as CSI capabilities with fsType.
Status PlanCapacityAndCapabilities(const nlohmann::json& claim, ProvisionPlan* plan) {
  FLEXCSI_RETURN_IF_ERROR(CapacityRangeFromClaim(claim, plan->request.mutable_capacity_range()));
  plan->requested_bytes = plan->request.capacity_range().required_bytes();
  const auto& modes = JField(JField(claim, "spec"), "accessModes");
  if (modes.is_array()) {
    for (const auto& m : modes) {
      if (m.is_string()) plan->access_modes.push_back(m.get<std::string>());
    }
  }
  return AddCapabilities(plan->access_modes, plan->fs_type,
                         plan->request.mutable_volume_capabilities());
}

// The requisite segments, sorted and unique, and the preferred order: Immediate binding spreads
// like external-provisioner; WaitForFirstConsumer prefers the node's segment.
void SetAccessibilityRequirement(std::vector<TopologySegment> requisite, bool node_selected,
                                 const std::string& claim_name,
                                 csi::v1::CreateVolumeRequest* request) {
  if (requisite.empty()) return;
  const std::vector<TopologySegment> preferred =
      node_selected ? requisite : PreferredOrder(requisite, claim_name);
  std::sort(requisite.begin(), requisite.end());
  requisite.erase(std::unique(requisite.begin(), requisite.end()), requisite.end());
  auto* req = request->mutable_accessibility_requirements();
  for (const auto& seg : requisite) {
    auto* t = req->add_requisite();
    for (const auto& [k, v] : seg) (*t->mutable_segments())[k] = v;
  }
  for (const auto& seg : preferred) {
    auto* t = req->add_preferred();
    for (const auto& [k, v] : seg) (*t->mutable_segments())[k] = v;
  }
}

void SetContentSource(const ContentSource& source, csi::v1::CreateVolumeRequest* request) {
  if (source.kind == ContentSource::kVolume) {
    request->mutable_volume_content_source()->mutable_volume()->set_volume_id(source.id);
  } else if (source.kind == ContentSource::kSnapshot) {
    request->mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id(source.id);
  }
}

}  // namespace

std::string RequestedProvisioner(const nlohmann::json& claim) {
  std::string p = Annotation(claim, kAnnStorageProvisioner);
  if (p.empty()) p = Annotation(claim, kAnnBetaStorageProvisioner);
  return p;
}

std::string SelectedNode(const nlohmann::json& claim) {
  std::string node = Annotation(claim, kAnnSelectedNode);
  if (node.empty()) node = Annotation(claim, kAnnAlphaSelectedNode);
  return node;
}

std::string ProvisionerOfClaim(const nlohmann::json& claim, const nlohmann::json& storage_class) {
  std::string requested = RequestedProvisioner(claim);
  if (requested.empty() && !SelectedNode(claim).empty() &&
      JStr(storage_class, "volumeBindingMode") == "WaitForFirstConsumer" &&
      JStr(JField(storage_class, "metadata"), "name") ==
          JStr(JField(claim, "spec"), "storageClassName")) {
    requested = JStr(storage_class, "provisioner");
  }
  return requested;
}

bool ClaimNeedsProvisioning(const nlohmann::json& claim, const nlohmann::json& storage_class,
                            const std::string& provisioner) {
  if (ProvisionerOfClaim(claim, storage_class) != provisioner) return false;
  const auto& meta = JField(claim, "metadata");
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return false;
  if (!JStr(JField(claim, "spec"), "volumeName").empty()) return false;
  const std::string phase = JStr(JField(claim, "status"), "phase");
  if (!phase.empty() && phase != "Pending") return false;
  if (JStr(storage_class, "volumeBindingMode") == "WaitForFirstConsumer" &&
      SelectedNode(claim).empty()) {
    return false;
  }
  return true;
}

Status CapacityRangeFromClaim(const nlohmann::json& claim, csi::v1::CapacityRange* range) {
  const auto& resources = JField(JField(claim, "spec"), "resources");
  const std::string request = JStr(JField(resources, "requests"), "storage");
  if (request.empty()) {
    return InvalidArgument("the claim has no spec.resources.requests.storage");
  }
  auto required = ParseStorageQuantity(request);
  if (!required.ok()) return required.status().WithContext("requests.storage");
  range->set_required_bytes(*required);
  const std::string limit = JStr(JField(resources, "limits"), "storage");
  if (!limit.empty()) {
    auto limit_bytes = ParseStorageQuantity(limit);
    if (!limit_bytes.ok()) return limit_bytes.status().WithContext("limits.storage");
    if (*limit_bytes < *required) {
      return InvalidArgument("limits.storage " + limit + " is smaller than requests.storage " +
                             request);
    }
    range->set_limit_bytes(*limit_bytes);
  }
  return Status::Ok();
}

Status AddCapabilities(const std::vector<std::string>& access_modes, const std::string& fs_type,
                       google::protobuf::RepeatedPtrField<csi::v1::VolumeCapability>* out) {
  if (access_modes.empty()) return InvalidArgument("the claim lists no accessModes");
  for (const auto& mode : access_modes) {
    csi::v1::VolumeCapability cap =
        MountCapability({mode, fs_type, {}, std::nullopt}, /*single_node_multi_writer=*/false);
    if (cap.access_mode().mode() == csi::v1::VolumeCapability::AccessMode::UNKNOWN) {
      return InvalidArgument("access mode \"" + mode + "\" is not a Kubernetes access mode");
    }
    *out->Add() = cap;
  }
  return Status::Ok();
}

StatusOr<ProvisionPlan> PlanProvision(const ProvisionInputs& in) {
  ProvisionPlan plan;
  const auto& meta = JField(in.claim, "metadata");
  const std::string uid = JStr(meta, "uid");
  if (uid.empty()) return InvalidArgument("the claim has no metadata.uid");
  plan.pv_name = "pvc-" + uid;
  plan.storage_class = JStr(JField(in.storage_class, "metadata"), "name");
  plan.request.set_name(plan.pv_name);
  FLEXCSI_RETURN_IF_ERROR(RefuseWhatFlexVolumeCannotBe(in.claim, in.storage_class, &plan));

  auto params = ClassParameters(in.storage_class);
  if (!params.ok()) return params.status();
  FLEXCSI_RETURN_IF_ERROR(PassOnDriverParameters(*params, &plan.request));
  plan.fs_type = FsTypeFor(*params, in.driver);
  FLEXCSI_RETURN_IF_ERROR(ResolveSecrets(*params, in.claim, &plan));
  FLEXCSI_RETURN_IF_ERROR(PlanCapacityAndCapabilities(in.claim, &plan));

  auto requisite = RequisiteTopology(in.storage_class, in.node, in.topology_keys, in.topology);
  if (!requisite.ok()) return requisite.status();
  SetAccessibilityRequirement(std::move(*requisite), in.node != nullptr, JStr(meta, "name"),
                              &plan.request);
  SetContentSource(in.source, &plan.request);
  return plan;
}

}  // namespace flexcsi::controller
