#include "bridge/volume_mapping.h"

#include "common/flex_call_limits.h"

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

}  // namespace flexcsi
