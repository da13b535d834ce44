// VolumeMapping: which CSI volume a FlexVolume call is about. The driver's mapping rule
// (translation.md §12) is evaluated by the translator library, the same code `flexcsi translate`
// uses for FlexVolume PVs, so that a migrated PV and the bridge always agree on the volume.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "bridge/flex_options.h"
#include "common/status.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi {

using CsiVolume = translator::CsiVolume;

// INVALID_ARGUMENT naming the missing option when the rule cannot build a handle.
StatusOr<CsiVolume> MapFlexVolume(const DriverConfig& driver, const FlexOptions& options);

// A FlexVolume call's options, parsed, and the CSI volume they name.
struct ResolvedVolume {
  FlexOptions options;
  CsiVolume volume;
};

// FlexOptions::Parse then MapFlexVolume, for options an admin wrote (a PV's, through
// KubeletOptionsJson). The bridge's FlexVolume calls go through ResolveCall (call_identity.h),
// which first establishes who is calling.
StatusOr<ResolvedVolume> ResolveFlexVolume(const DriverConfig& driver,
                                           const std::string& options_json);

// The options kubelet passes to the FlexVolume driver for `pv` (flexVolume.options plus the
// kubernetes.io/* keys kubelet adds to every call), as the JSON text flexexec forwards.
std::string KubeletOptionsJson(const nlohmann::json& pv);

// The CSI volume a FlexVolume PV of `driver` names, computed by the bridge's mapping.
StatusOr<CsiVolume> CsiVolumeOfPV(const DriverConfig& driver, const nlohmann::json& pv);

}  // namespace flexcsi
