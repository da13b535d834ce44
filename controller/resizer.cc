#include "controller/resizer.h"

#include <spdlog/spdlog.h>

#include "controller/fault_points.h"
#include "controller/flex_pv.h"
#include "controller/quantity.h"
#include "controller/secret_params.h"

namespace flexcsi::controller {
namespace {

int64_t Bytes(const nlohmann::json& capacity_holder) {
  const std::string q = JStr(JField(capacity_holder, "capacity"), "storage");
  if (q.empty()) return 0;
  auto b = ParseStorageQuantity(q);
  return b.ok() ? *b : 0;
}

StatusOr<int64_t> RequestedBytes(const nlohmann::json& claim) {
  return ParseStorageQuantity(
      JStr(JField(JField(JField(claim, "spec"), "resources"), "requests"), "storage"));
}

nlohmann::json Condition(const std::string& type, const std::string& message) {
  return {{"type", type},
          {"status", "True"},
          {"lastProbeTime", nullptr},
          {"lastTransitionTime", NowRfc3339()},
          {"message", message}};
}

}  // namespace

Status Resizer::PatchClaimStatus(const nlohmann::json& claim, const nlohmann::json& status_patch) {
  const auto& meta = JField(claim, "metadata");
  auto patched = ctx_.client->Patch(
      kube::ResourcePath::Core("persistentvolumeclaims", JStr(meta, "namespace"))
          .Named(JStr(meta, "name"))
          .Sub("status"),
      kube::PatchType::kMerge, {{"status", status_patch}});
  return patched.ok() ? Status::Ok() : patched.status();
}

bool Resizer::ExpansionRequested(const nlohmann::json& claim) {
  if (JStr(JField(claim, "status"), "phase") != "Bound") return false;
  auto requested = RequestedBytes(claim);
  const int64_t recorded = Bytes(JField(claim, "status"));
  return requested.ok() && recorded != 0 && *requested > recorded;
}

Status Resizer::SyncClaim(const nlohmann::json& claim) {
  if (!ExpansionRequested(claim)) return Status::Ok();
  const std::string pv_name = JStr(JField(claim, "spec"), "volumeName");
  const int64_t requested = *RequestedBytes(claim);

  auto pv = ctx_.client->Get(kube::ResourcePath::Core("persistentvolumes").Named(pv_name));
  if (!pv.ok()) return kube::IsNotFound(pv.status()) ? Status::Ok() : pv.status();
  const DriverConfig* driver = DriverOfPV(ctx_.bridge, *pv);
  if (driver == nullptr || !ctx_.ServesVolume(*driver, *pv)) return Status::Ok();
  const auto& claim_ref = JField(JField(*pv, "spec"), "claimRef");
  if (JStr(claim_ref, "uid") != JStr(JField(claim, "metadata"), "uid")) return Status::Ok();

  const std::string done = Annotation(*pv, kAnnExpandedBytes);
  if (!done.empty() && std::stoll(done) >= requested) return Status::Ok();
  if (!ctx_.cluster.ExpandsFlexVolumes()) {
    // Growing the storage would leave a file system kubelet never grows and a claim that never
    // shows the new size: refuse, once, where the user asked.
    const std::string why = "resize volume \"" + pv_name + "\" by resizer \"" +
                            driver->provisioner + "\" refused: Kubernetes " +
                            ctx_.cluster.version.Describe() +
                            " cannot expand FlexVolume PVs (kubelet grows their file system "
                            "from 1.13 on); the volume keeps its size";
    if (ctx_.events->RecordOnce(claim, kEventWarning, "VolumeResizeFailed", why)) {
      spdlog::warn("claim {}/{}: {}", JStr(JField(claim, "metadata"), "namespace"),
                   JStr(JField(claim, "metadata"), "name"), why);
    }
    return Status::Ok();
  }

  auto volume = CsiVolumeOfPV(*driver, *pv);
  if (!volume.ok()) return volume.status().WithContext("PV " + pv_name);
  ctx_.events->Record(claim, kEventNormal, "Resizing",
                      "External resizer is resizing volume " + pv_name);
  // No Resizing condition here: the expand controller's no-op expander has already marked the
  // claim (FileSystemResizePending); replacing its conditions would make it start over.

  csi::v1::ControllerExpandVolumeRequest req;
  req.set_volume_id(volume->volume_handle);
  req.mutable_capacity_range()->set_required_bytes(requested);
  const std::string fs_type = JStr(JField(JField(*pv, "spec"), "flexVolume"), "fsType");
  auto* cap = req.mutable_volume_capability();
  cap->mutable_mount()->set_fs_type(fs_type);
  cap->mutable_access_mode()->set_mode(csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  // The controller-expand secret of the class, if the class still exists and names one.
  const std::string class_name = JStr(JField(*pv, "spec"), "storageClassName");
  if (!class_name.empty()) {
    auto sc = ctx_.StorageClass(class_name);
    if (sc.ok() && JField(*sc, "parameters").is_object()) {
      std::map<std::string, std::string> params;
      for (auto it = (*sc)["parameters"].begin(); it != (*sc)["parameters"].end(); ++it) {
        if (it.value().is_string()) params[it.key()] = it.value().get<std::string>();
      }
      auto ref = ResolveSecretRef(SecretKind::kControllerExpand, params, pv_name, &claim);
      if (ref.ok() && ref->has_value()) {
        auto data = ctx_.SecretData(**ref);
        if (!data.ok()) return data.status();
        for (const auto& [k, v] : *data) (*req.mutable_secrets())[k] = v;
      }
    }
  }
  auto expanded = ctx_.Csi(*driver).ControllerExpandVolume(req, Deadline::In(ctx_.timeout));
  if (!expanded.ok()) {
    const Status failed = WithSecretsRedacted(expanded.status(), req.secrets());
    ctx_.events->Record(claim, kEventWarning, "VolumeResizeFailed",
                        "resize volume \"" + pv_name + "\" by resizer \"" + driver->provisioner +
                            "\" failed: " + failed.message());
    return failed;
  }
  CrashPoint("expand-volume");
  const int64_t new_bytes =
      expanded->capacity_bytes() > 0 ? expanded->capacity_bytes() : requested;
  const int64_t pv_bytes = Bytes(JField(*pv, "spec"));
  nlohmann::json pv_patch = {
      {"metadata", {{"annotations", {{kAnnExpandedBytes, std::to_string(new_bytes)}}}}}};
  if (pv_bytes < new_bytes) pv_patch["spec"] = {{"capacity", {{"storage", FormatStorageQuantity(new_bytes)}}}};
  auto patched = ctx_.client->Patch(
      kube::ResourcePath::Core("persistentvolumes").Named(pv_name), kube::PatchType::kMerge,
      pv_patch);
  if (!patched.ok()) return patched.status();

  bool pending = false;
  const auto& conditions = JField(JField(claim, "status"), "conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) pending |= JStr(c, "type") == "FileSystemResizePending";
  }
  if (expanded->node_expansion_required()) {
    if (!pending) FLEXCSI_RETURN_IF_ERROR(PatchClaimStatus(
        claim, {{"conditions", nlohmann::json::array({Condition(
                                   "FileSystemResizePending",
                                   "Waiting for user to (re-)start a pod to finish file system "
                                   "resize of volume on node.")})}}));
    ctx_.events->Record(claim, kEventNormal, "FileSystemResizeRequired",
                        "Require file system resize of volume on node");
  } else {
    FLEXCSI_RETURN_IF_ERROR(PatchClaimStatus(
        claim, {{"capacity", {{"storage", FormatStorageQuantity(new_bytes)}}},
                {"conditions", nlohmann::json::array()}}));
    ctx_.events->Record(claim, kEventNormal, "VolumeResizeSuccessful", "Resize volume succeeded");
  }
  spdlog::info("expanded volume {} of PV {} to {} bytes", volume->volume_handle, pv_name,
               new_bytes);
  return Status::Ok();
}

}  // namespace flexcsi::controller
