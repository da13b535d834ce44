// Which bridge driver entry flexcsi-controller provisions a StorageClass with: the one whose
// `provisioner` is the class's provisioner. Two entries of one CSI driver (rook's legacy PVs
// and the ones provisioned now, say) share its name by default; a class would then silently go
// to the first, whose rule may not even be reversible, so such a configuration is refused.
#pragma once

#include "bridge/bridge_config.h"
#include "common/status.h"

namespace flexcsi::controller {

// INVALID_ARGUMENT naming both entries when two share a provisioner name.
Status CheckOneEntryPerProvisioner(const BridgeConfig& config);

}  // namespace flexcsi::controller
