#include "bridge/volume_mapping.h"

#include "common/flex_call_limits.h"
#include "common/json_access.h"

namespace flexcsi {

StatusOr<CsiVolume> MapFlexVolume(const DriverConfig& driver, const FlexOptions& options) {
  // Secrets are left out: the rule copies options into volume attributes, which end up in logs,
  // in the state database and, after a migration, in a PV.
  auto volume = translator::MapFlexVolumeCallToCsi(driver.mapping, driver.flex_driver,
                                                   options.WithoutSecrets());
  if (!volume.ok())
    return volume.status().WithContext("mapping " + driver.flex_driver + " options");
  // What the rule made is sent to the driver and stored: the same bounds as the options.
  Status bounded = CheckCsiVolumeLimits(volume->volume_handle, volume->volume_attributes);
  if (!bounded.ok()) return bounded.WithContext("mapping " + driver.flex_driver + " options");
  return volume;
}

StatusOr<ResolvedVolume> ResolveFlexVolume(const DriverConfig& driver,
                                           const std::string& options_json) {
  auto options = FlexOptions::Parse(options_json);
  if (!options.ok()) return options.status();
  auto volume = MapFlexVolume(driver, *options);
  if (!volume.ok()) return volume.status();
  return ResolvedVolume{std::move(*options), std::move(*volume)};
}

std::string KubeletOptionsJson(const nlohmann::json& pv) {
  const auto& flex = JField(JField(pv, "spec"), "flexVolume");
  nlohmann::json options = nlohmann::json::object();
  const auto& user = JField(flex, "options");
  if (user.is_object()) options = user;
  // What kubelet's flexvolume plugin adds to every call (pkg/volume/flexvolume/util.go).
  options["kubernetes.io/fsType"] = JStr(flex, "fsType");
  options["kubernetes.io/readwrite"] = flex.value("readOnly", false) ? "ro" : "rw";
  options["kubernetes.io/pvOrVolumeName"] = JStr(JField(pv, "metadata"), "name");
  return options.dump();
}

StatusOr<CsiVolume> CsiVolumeOfPV(const DriverConfig& driver, const nlohmann::json& pv) {
  auto resolved = ResolveFlexVolume(driver, KubeletOptionsJson(pv));
  if (!resolved.ok()) return resolved.status();
  return resolved->volume;
}

}  // namespace flexcsi
