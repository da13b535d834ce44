#include "controller/flex_pv.h"

#include "bridge/volume_mapping.h"
#include "common/json_access.h"
#include "controller/quantity.h"

namespace flexcsi::controller {
namespace {

// PV nodeAffinity: one required term per accessible topology segment (ORed), each segment's
// keys ANDed, as external-provisioner's GenerateVolumeNodeAffinity does.
nlohmann::json NodeAffinity(const csi::v1::Volume& volume) {
  nlohmann::json terms = nlohmann::json::array();
  for (const auto& topology : volume.accessible_topology()) {
    nlohmann::json exprs = nlohmann::json::array();
    std::map<std::string, std::string> sorted(topology.segments().begin(),
                                              topology.segments().end());
    for (const auto& [k, v] : sorted) {
      exprs.push_back({{"key", k}, {"operator", "In"}, {"values", {v}}});
    }
    if (!exprs.empty()) terms.push_back({{"matchExpressions", exprs}});
  }
  if (terms.empty()) return nullptr;
  return {{"required", {{"nodeSelectorTerms", terms}}}};
}

}  // namespace

const DriverConfig* DriverOfPV(const BridgeConfig& config, const nlohmann::json& pv) {
  const std::string driver = JStr(JField(JField(pv, "spec"), "flexVolume"), "driver");
  return driver.empty() ? nullptr : config.FindDriver(driver);
}

StatusOr<nlohmann::json> BuildFlexVolumePV(const DriverConfig& driver, const ProvisionPlan& plan,
                                           const csi::v1::Volume& volume,
                                           const nlohmann::json& claim,
                                           const std::string& provisioner) {
  const translator::FlexVolumeRule& rule = driver.mapping.rules().front();
  translator::CsiVolume csi;
  csi.driver = rule.csi_driver;
  csi.volume_handle = volume.volume_id();
  csi.volume_attributes = {volume.volume_context().begin(), volume.volume_context().end()};
  csi.fs_type = plan.fs_type;
  if (plan.node_secret) {
    csi.secret = translator::SecretReference{plan.node_secret->name, plan.node_secret->namespace_};
  }
  // The rule decides where the node Secret goes: a secretRef, which kubelet passes on only for
  // a Secret typed with the FlexVolume driver's name, or options the bridge reads it by.
  auto source = translator::MapCsiToFlexVolume(rule, csi);
  if (!source.ok()) return source.status();
  for (const auto& [key, value] : source->options) {
    if (key.rfind("kubernetes.io/", 0) == 0) {
      return InvalidArgument("volume context key " + key +
                             " collides with kubelet's own FlexVolume options");
    }
  }

  const auto& claim_meta = JField(claim, "metadata");
  const int64_t capacity =
      volume.capacity_bytes() > 0 ? volume.capacity_bytes() : plan.requested_bytes;
  nlohmann::json flex = {{"driver", driver.flex_driver}, {"options", source->options}};
  if (!plan.fs_type.empty()) flex["fsType"] = plan.fs_type;
  if (source->secret_ref) {
    flex["secretRef"] = {{"name", source->secret_ref->name},
                         {"namespace", source->secret_ref->namespace_name}};
  }
  nlohmann::json annotations = {{kAnnProvisionedBy, provisioner}};
  if (plan.provisioner_secret) {
    annotations[kAnnDeletionSecretName] = plan.provisioner_secret->name;
    annotations[kAnnDeletionSecretNamespace] = plan.provisioner_secret->namespace_;
  }
  nlohmann::json pv = {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolume"},
      {"metadata",
       {{"name", plan.pv_name},
        {"annotations", annotations},
        {"finalizers", {kProvisionerFinalizer}}}},
      {"spec",
       {{"accessModes", plan.access_modes},
        {"capacity", {{"storage", FormatStorageQuantity(capacity)}}},
        {"persistentVolumeReclaimPolicy", plan.reclaim_policy},
        {"storageClassName", plan.storage_class},
        {"volumeMode", "Filesystem"},
        {"claimRef",
         {{"kind", "PersistentVolumeClaim"},
          {"apiVersion", "v1"},
          {"namespace", JStr(claim_meta, "namespace")},
          {"name", JStr(claim_meta, "name")},
          {"uid", JStr(claim_meta, "uid")},
          {"resourceVersion", JStr(claim_meta, "resourceVersion")}}},
        {"flexVolume", flex}}}};
  nlohmann::json affinity = NodeAffinity(volume);
  if (!affinity.is_null()) pv["spec"]["nodeAffinity"] = affinity;

  // The round trip: what the bridge will compute from the options kubelet passes.
  auto back = CsiVolumeOfPV(driver, pv);
  if (!back.ok()) {
    return InvalidArgument("the bridge could not map the new PV back to its volume: " +
                           back.status().message());
  }
  if (back->volume_handle != csi.volume_handle) {
    return InvalidArgument("the bridge would map the new PV to volume " + back->volume_handle +
                           " instead of " + csi.volume_handle);
  }
  if (back->volume_attributes != csi.volume_attributes) {
    return InvalidArgument("the driver's volume context of " + csi.volume_handle +
                           " does not survive the bridge's mapping rule (excluded, renamed or "
                           "static keys collide with it)");
  }
  return pv;
}

}  // namespace flexcsi::controller
