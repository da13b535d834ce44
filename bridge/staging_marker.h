// The bridge's staging marker: a tiny read-only tmpfs the bridge mounts at a FlexVolume device
// mount path when the CSI driver left nothing mounted there after mountdevice (a driver whose
// NodeStageVolume only records the staging, or one without STAGE_UNSTAGE_VOLUME).
//
// Why: kubelet calls unmountdevice only when the device mount path is a mount point by its own
// test, a device number that differs from the parent directory's (flexvolume.md §2.8-2.9). An
// empty directory fails that test, so without a mount there kubelet would never unstage the
// volume. A bind mount of anything on the same filesystem would fail the test too, and a bind of
// the volume would show up in kubelet's GetDeviceMountRefs check and block unmountdevice, so the
// marker is a filesystem of its own with nothing else referring to it. Each marker also has a
// source name of its own: kubelet before 1.11 (1.10's GetMountRefs) counts every mount with the
// same source name as another reference, so two markers with one name would each block the
// other's unmountdevice forever.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

// The source name every marker's name starts with in the mount table (alone: a marker an
// older bridge mounted).
inline constexpr const char* kStagingMarkerSource = "flexcsi-staging-marker";

// The marker's source name for `path`: kStagingMarkerSource, '-', a hash of the path.
std::string StagingMarkerSource(const std::string& path);
// Whether a mount's source name is a marker's (this bridge's or an older one's).
bool IsStagingMarkerSource(const std::string& source);

// Mounts the marker at `path` (an existing directory) unless it is already there.
Status MountStagingMarker(const std::string& path);

// True when the topmost mount at `path` is the bridge's marker.
bool IsStagingMarker(const std::string& path);

// Unmounts the marker at `path` if it is there; OK when it is not.
Status UnmountStagingMarker(const std::string& path);

}  // namespace flexcsi
