// FlexCallLimits: how much a FlexVolume caller can make flexcsi store or send. One set of numbers,
// checked twice: by flexexec before anything is sent to the bridge, and by the bridge for every
// request (it does not trust flexexec), so a hostile or broken volume spec is refused with a
// message that names the field and the limit instead of failing deep in gRPC or SQLite.
//
// The limits and why (docs/operations.md, "Limits"):
//   kMaxCsiStringBytes   4 KiB  every non-secret option key and value (each becomes the CSI
//                               volume_id or a volume_context entry) and the mapped volume ID.
//                               CSI asks plugins to keep IDs within 128 bytes and a whole map
//                               within 4 KiB, and COs to accept more; real IDs run to a few
//                               hundred bytes (cloud resource paths, NFS server#share#subdir).
//   kMaxNameBytes        253    node and PV/volume names: a Kubernetes DNS subdomain at most.
//   kMaxPathBytes        4095   paths: PATH_MAX (4096) counts the terminating NUL.
//   kMaxDeviceBytes      64 KiB the device argument (our publish-context token, a CSI map of
//                               up to 4 KiB in base64url, or a device path).
//   kMaxSizeArgBytes     32     the decimal byte counts of expandvolume/expandfs.
//   kMaxSecretBytes      1 MiB  decoded secret values together: a Kubernetes Secret's own limit.
//   kMaxOptionsJsonBytes 1.5 MiB the options argument: a largest Secret in base64 plus options.
// The bridge protocol's frame (kMaxFrameBytes) holds the largest request these allow even after
// JSON escaping doubles it. The gRPC message to the driver stays below its default 4 MiB.
//
// Depends only on nlohmann_json and Status, so flexexec can link it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

inline constexpr size_t kMaxCsiStringBytes = 4096;
inline constexpr size_t kMaxNameBytes = 253;
inline constexpr size_t kMaxPathBytes = 4095;
inline constexpr size_t kMaxDeviceBytes = 64 * 1024;
inline constexpr size_t kMaxSizeArgBytes = 32;
inline constexpr size_t kMaxSecretBytes = 1024 * 1024;
inline constexpr size_t kMaxOptionsJsonBytes = 1536 * 1024;

// INVALID_ARGUMENT naming the first argument (or option within the options JSON) over its limit;
// OK otherwise, also for calls it does not know and for options that are not a JSON object
// (their parser says what is wrong). `args` are argv[2..] of the FlexVolume call.
Status CheckFlexCallLimits(const std::string& call, const std::vector<std::string>& args);

// The CSI volume a call resolved to: a volume ID that is not empty and within
// kMaxCsiStringBytes, and volume attributes within it too.
Status CheckCsiVolumeLimits(const std::string& volume_id,
                            const std::map<std::string, std::string>& volume_attributes);

}  // namespace flexcsi
