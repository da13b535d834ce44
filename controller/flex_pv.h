// The FlexVolume PV flexcsi-controller creates for a provisioned CSI volume, and the way back
// from such a PV to its CSI volume (for deletion, expansion and snapshots).
//
// The PV's flexVolume.options are computed by reversing the driver's mapping rule
// (translation.md §12.3), then checked by running the bridge's own forward mapping on exactly
// the options kubelet will pass: a PV is only created when the bridge will find this very volume
// id and volume context again.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "bridge/volume_mapping.h"  // KubeletOptionsJson, CsiVolumeOfPV
#include "common/status.h"
#include "controller/provision_plan.h"
#include "csi.pb.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi::controller {

// INVALID_ARGUMENT when the rule cannot be reversed (template handles) or the volume context
// would not survive the round trip (e.g. a key the rule excludes).
StatusOr<nlohmann::json> BuildFlexVolumePV(const DriverConfig& driver, const ProvisionPlan& plan,
                                           const csi::v1::Volume& volume,
                                           const nlohmann::json& claim,
                                           const std::string& provisioner);

// The driver config serving `pv` (spec.flexVolume.driver), or nullptr.
const DriverConfig* DriverOfPV(const BridgeConfig& config, const nlohmann::json& pv);

}  // namespace flexcsi::controller
