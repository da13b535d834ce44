// Filesystems on volume devices: detect (blkid), create (mkfs), grow online (resize2fs,
// xfs_growfs). Only ext4 and xfs are supported.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {
namespace loopback {

// The filesystem type blkid finds on `device` ("ext4", "xfs", ...), or "" when the device
// carries no signature at all. Probes the device itself, not blkid's cache.
StatusOr<std::string> ProbeFilesystem(const std::string& device);

// Creates `fs_type` ("ext4" or "xfs") on `device`. REQUIRES: the device is blank; callers check
// with ProbeFilesystem first, because mkfs on a used device destroys data.
Status MakeFilesystem(const std::string& device, const std::string& fs_type);

// Grows an unmounted ext2/3/4 filesystem to fill its device when it is smaller (a volume
// restored or cloned into a larger size). Checks it first, as resize2fs demands. xfs can only
// grow while mounted, so it is left to GrowFilesystem. REQUIRES: `device` is mounted nowhere.
// Offline growth needs no CAP_SYS_RESOURCE, unlike online ext4 growth.
Status GrowUnmountedFilesystem(const std::string& fs_type, const std::string& device);

// Grows the mounted filesystem on `device` (mounted at `mount_path`) to the device's size.
// A no-op when it already fills the device. `mount_path` must be a writable mount of it: the
// kernel refuses to resize through a read-only mount point.
Status GrowFilesystem(const std::string& fs_type, const std::string& device,
                      const std::string& mount_path);

}  // namespace loopback
}  // namespace flexcsi
