#include "bridge/volume_mapping.h"

namespace flexcsi {

StatusOr<CsiVolume> MapFlexVolume(const DriverConfig& driver, const FlexOptions& options) {
  // Secrets are left out: the rule copies options into volume attributes, which end up in logs,
  // in the state database and, after a migration, in a PV.
  auto volume =
      translator::MapFlexVolumeCallToCsi(driver.mapping, driver.flex_driver, options.WithoutSecrets());
  if (!volume.ok()) return volume.status().WithContext("mapping " + driver.flex_driver + " options");
  return volume;
}

}  // namespace flexcsi
