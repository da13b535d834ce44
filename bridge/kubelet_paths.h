// Where things live under the kubelet root, and the rule that the bridge touches nothing else.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

// Returns `path` normalised (no "//", "/./" or trailing "/") when it is absolute and lies
// strictly below `kubelet_root`, also after resolving symlinks of whatever part of it exists.
// Else INVALID_ARGUMENT (relative, "..", the root itself, a symlink out: the bridge runs as root,
// never mounts elsewhere); FAILED_PRECONDITION for an empty root (kubeletRoot: none).
StatusOr<std::string> CheckUnderKubeletRoot(const std::string& path,
                                            const std::string& kubelet_root);

// kubelet's device mount path for a FlexVolume volume (flexvolume.md §5); the driver name keeps
// its "/" and so makes two directory levels:
//   <root>/plugins/kubernetes.io/flexvolume/<vendor>/<driver>/mounts/<volumeName>
std::string DeviceMountPathFor(const std::string& kubelet_root, const std::string& flex_driver,
                               const std::string& volume_name);

// Where the bridge stages a volume itself for attach:false drivers, which kubelet never asks to
// stage. Shaped like kubelet's CSI staging path (kubelet-csi.md §3) but in a directory of ours,
// so it cannot collide with kubelet's own CSI plugin serving the same driver during a migration:
//   <root>/plugins/flexcsi/<csiDriver>/<sha256(volumeId)>/globalmount
std::string BridgeStagingPathFor(const std::string& kubelet_root, const std::string& csi_driver,
                                 const std::string& volume_id);

// Lower-case hex SHA-256 of `text`.
std::string Sha256Hex(const std::string& text);

}  // namespace flexcsi
