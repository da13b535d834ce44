// `flexcsi volume create|delete`: provisions a volume on any CSI driver's controller endpoint.
// FlexVolume PVs are provisioned statically, so an operator wrapping a CSI driver needs a way to
// create the volume a FlexVolume PV's options will name (e.g. `volumeID`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

// "64Mi", "1Gi", "500M", "1048576" -> bytes, with Kubernetes quantity suffixes.
StatusOr<int64_t> ParseByteQuantity(const std::string& text);

// create: prints the new volume id on stdout. delete: prints nothing. Exit 0, or 1 with the
// reason on stderr.
int RunVolumeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace flexcsi
