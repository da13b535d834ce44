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

// Grows the mounted filesystem on `device` (mounted at `mount_path`) to the device's size.
// A no-op when it already fills the device.
Status GrowFilesystem(const std::string& fs_type, const std::string& device,
                      const std::string& mount_path);

}  // namespace loopback
}  // namespace flexcsi
