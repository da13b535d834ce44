// Where things live under the kubelet root, and the rule that the bridge touches nothing else.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

// The two shapes of path kubelet gives a FlexVolume driver (flexvolume.md §2.8-§2.13, §5):
//   kPodVolumeDir     <root>/pods/<podUID>/volumes/<vendor>~<driver>/<volumeName>
//   kDeviceMountPath  <root>/plugins/kubernetes.io/flexvolume/<vendor>/<driver>/mounts/<volumeName>
// mount/unmount get the first, mountdevice/unmountdevice the second, expandfs either. The plugin
// directory of a pod volume dir is the bare driver name with "/" escaped to "~" in every release
// (the "flexvolume-" plugin name prefix of 1.8-1.15 never reached disk, flexvolume.md §1.2).
enum class KubeletPathKind { kPodVolumeDir, kDeviceMountPath };

struct KubeletPath {
  std::string path;         // normalised and symlink-resolved
  KubeletPathKind kind;
  std::string pod_uid;      // kPodVolumeDir only
  std::string flex_driver;  // "vendor/driver" as the path names it ("~" and "flexvolume-" undone)
  std::string volume_name;  // last component: kubernetes.io/pvOrVolumeName
  // The path as kubelet gave it, normalised but not resolved: the key of the records that
  // bridges before 0.2.0 wrote, which differs from `path` only below a symlinked kubelet root.
  std::string given_path;
};

// Parses `path` as one of the shapes above below `kubelet_root`. The path is normalised (no "//",
// "/./" or trailing "/"), then the symlinks of whatever part of it exists are resolved, and the
// resolved path must still lie below the (resolved) root with the same shape and the same parts.
// Else INVALID_ARGUMENT naming the path and the shapes accepted (relative, "..", outside the
// root, another shape, a symlink out or to another place: the bridge runs as root and mounts
// nowhere else); FAILED_PRECONDITION for an empty root (kubeletRoot: none).
StatusOr<KubeletPath> ParseKubeletPath(const std::string& path, const std::string& kubelet_root);

// The keys a record at `path` may have, in the order to look: the resolved path, then the path
// as kubelet gave it when that differs (a record from before 0.2.0 below a symlinked root).
std::vector<std::string> RecordKeysOf(const KubeletPath& path);

// ParseKubeletPath(path, kubelet_root)->path: the normalised, symlink-resolved path when it has
// one of kubelet's shapes; the same errors.
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
