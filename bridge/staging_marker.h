// The bridge's staging marker: a tiny read-only tmpfs the bridge mounts at a FlexVolume device
// mount path when the CSI driver left nothing mounted there after mountdevice (a driver whose
// NodeStageVolume only records the staging, or one without STAGE_UNSTAGE_VOLUME).
//
// Why: kubelet calls unmountdevice only when the device mount path is a mount point by its own
// test, a device number that differs from the parent directory's (flexvolume.md §2.8-2.9). An
// empty directory fails that test, so without a mount there kubelet would never unstage the
// volume. A bind mount of anything on the same filesystem would fail the test too, and a bind of
// the volume would show up in kubelet's GetDeviceMountRefs check and block unmountdevice, so the
// marker is a filesystem of its own with nothing else referring to it.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

// The source name the marker shows in the mount table.
inline constexpr const char* kStagingMarkerSource = "flexcsi-staging-marker";

// Mounts the marker at `path` (an existing directory) unless it is already there.
Status MountStagingMarker(const std::string& path);

// True when the topmost mount at `path` is the bridge's marker.
bool IsStagingMarker(const std::string& path);

// Unmounts the marker at `path` if it is there; OK when it is not.
Status UnmountStagingMarker(const std::string& path);

}  // namespace flexcsi
