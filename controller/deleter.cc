#include "controller/deleter.h"

#include <spdlog/spdlog.h>

#include "controller/fault_points.h"
#include "controller/flex_pv.h"
#include "controller/provision_plan.h"

namespace flexcsi::controller {
namespace {

kube::ResourcePath PVs() { return kube::ResourcePath::Core("persistentvolumes"); }

}  // namespace

Status Deleter::RemoveFinalizer(nlohmann::json pv) {
  // An update carrying the read resourceVersion: a concurrent change makes it a 409 and the
  // key is retried with a fresh copy, so no other finalizer is ever dropped.
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& f : pv["metadata"]["finalizers"]) {
    if (f != kProvisionerFinalizer) kept.push_back(f);
  }
  pv["metadata"]["finalizers"] = kept;
  auto updated = ctx_.client->Update(PVs().Named(JStr(pv["metadata"], "name")), pv);
  if (!updated.ok() && !kube::IsNotFound(updated.status())) return updated.status();
  return Status::Ok();
}

bool Deleter::MayNeedWork(const nlohmann::json& pv) {
  return BeingDeleted(pv) || JStr(JField(pv, "status"), "phase") == "Released";
}

Status Deleter::SyncVolume(const std::string& pv_name) {
  auto pv = ctx_.client->Get(PVs().Named(pv_name));
  if (!pv.ok()) return kube::IsNotFound(pv.status()) ? Status::Ok() : pv.status();
  const DriverConfig* driver = DriverOfPV(ctx_.bridge, *pv);
  if (driver == nullptr || Annotation(*pv, kAnnProvisionedBy) != driver->provisioner) {
    return Status::Ok();
  }
  // Per node: only the volumes on this node (another node's instance deletes the others).
  if (!ctx_.ServesVolume(*driver, *pv)) return Status::Ok();
  const auto& spec = JField(*pv, "spec");
  const std::string phase = JStr(JField(*pv, "status"), "phase");
  const std::string reclaim = JStr(spec, "persistentVolumeReclaimPolicy");
  const bool finalizer = HasFinalizer(*pv, kProvisionerFinalizer);

  if (reclaim != "Delete") {
    if (BeingDeleted(*pv) && finalizer) return RemoveFinalizer(*pv);
    return Status::Ok();
  }
  if (phase != "Released" && !(BeingDeleted(*pv) && phase != "Bound")) return Status::Ok();
  // Storage already deleted by an earlier attempt that crashed before the object went away.
  if (!finalizer && BeingDeleted(*pv)) return Status::Ok();

  auto volume = CsiVolumeOfPV(*driver, *pv);
  if (!volume.ok()) return volume.status().WithContext("PV " + pv_name);
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(volume->volume_handle);
  const std::string secret_name = Annotation(*pv, kAnnDeletionSecretName);
  const std::string secret_ns = Annotation(*pv, kAnnDeletionSecretNamespace);
  if (!secret_name.empty() && !secret_ns.empty()) {
    auto data = ctx_.SecretData({secret_name, secret_ns});
    if (!data.ok()) return data.status();
    for (const auto& [k, v] : *data) (*del.mutable_secrets())[k] = v;
  }
  Status deleted = WithSecretsRedacted(
      ctx_.Csi(*driver).DeleteVolume(del, Deadline::In(ctx_.timeout)), del.secrets());
  // CSI: deleting a volume that is already gone succeeds; some drivers say NOT_FOUND anyway.
  if (!deleted.ok() && deleted.code() != Code::kNotFound) {
    spdlog::warn("DeleteVolume {} for PV {}: {}", volume->volume_handle, pv_name,
                 deleted.ToString());
    return deleted;
  }
  CrashPoint("delete-volume");
  spdlog::info("deleted volume {} of released PV {}", volume->volume_handle, pv_name);

  // Then the object: delete it (uid precondition: never a recreated namesake), then drop our
  // finalizer so it can go.
  kube::DeleteOptions opts;
  opts.precondition_uid = JStr(JField(*pv, "metadata"), "uid");
  auto gone = ctx_.client->Delete(PVs().Named(pv_name), opts);
  if (!gone.ok() && !kube::IsNotFound(gone.status())) return gone.status();
  CrashPoint("pv-delete");
  auto fresh = ctx_.client->Get(PVs().Named(pv_name));
  if (!fresh.ok()) return kube::IsNotFound(fresh.status()) ? Status::Ok() : fresh.status();
  if (HasFinalizer(*fresh, kProvisionerFinalizer)) return RemoveFinalizer(*fresh);
  return Status::Ok();
}

}  // namespace flexcsi::controller
