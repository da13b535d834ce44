#include "bridge/staging_marker.h"

#include <cstdint>
#include <cstdio>

#include "common/mount_table.h"

namespace flexcsi {

std::string StagingMarkerSource(const std::string& path) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a: stable across runs and builds
  for (unsigned char c : path) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(kStagingMarkerSource) + "-" + hex;
}

bool IsStagingMarkerSource(const std::string& source) {
  const std::string base = kStagingMarkerSource;
  return source == base || (source.size() == base.size() + 17 &&
                            source.compare(0, base.size() + 1, base + "-") == 0);
}

Status MountStagingMarker(const std::string& path) {
  if (IsStagingMarker(path)) return Status::Ok();
  // Read-only and tiny: nothing is ever written there; kubelet only stats it.
  return Mount(StagingMarkerSource(path), path, "tmpfs", "ro,nosuid,nodev,noexec,size=4k,mode=0750")
      .WithContext("mounting the staging marker at " + path);
}

bool IsStagingMarker(const std::string& path) {
  auto mounted = FindByTarget(path);
  return mounted.ok() && mounted->fstype == "tmpfs" && IsStagingMarkerSource(mounted->source);
}

Status UnmountStagingMarker(const std::string& path) {
  if (!IsStagingMarker(path)) return Status::Ok();
  return Unmount(path).WithContext("unmounting the staging marker at " + path);
}

}  // namespace flexcsi
