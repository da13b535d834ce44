#include "bridge/staging_marker.h"

#include "common/mount_table.h"

namespace flexcsi {

Status MountStagingMarker(const std::string& path) {
  if (IsStagingMarker(path)) return Status::Ok();
  // Read-only and tiny: nothing is ever written there; kubelet only stats it.
  return Mount(kStagingMarkerSource, path, "tmpfs", "ro,nosuid,nodev,noexec,size=4k,mode=0750")
      .WithContext("mounting the staging marker at " + path);
}

bool IsStagingMarker(const std::string& path) {
  auto mounted = FindByTarget(path);
  return mounted.ok() && mounted->fstype == "tmpfs" && mounted->source == kStagingMarkerSource;
}

Status UnmountStagingMarker(const std::string& path) {
  if (!IsStagingMarker(path)) return Status::Ok();
  return Unmount(path).WithContext("unmounting the staging marker at " + path);
}

}  // namespace flexcsi
