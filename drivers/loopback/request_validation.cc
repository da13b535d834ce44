#include "drivers/loopback/request_validation.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace flexcsi {
namespace loopback {

using csi::v1::VolumeCapability;
using Mode = csi::v1::VolumeCapability::AccessMode::Mode;

Status RequireField(const std::string& value, const char* field) {
  if (value.empty()) return InvalidArgument(std::string(field) + " is required");
  return Status::Ok();
}

bool IsSupportedFsType(const std::string& fs_type) {
  return fs_type.empty() || fs_type == "ext4" || fs_type == "xfs";
}

bool IsSupportedAccessMode(Mode mode) {
  // A loop device lives on one machine, so only single-node modes make sense.
  switch (mode) {
    case VolumeCapability::AccessMode::SINGLE_NODE_WRITER:
    case VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY:
    case VolumeCapability::AccessMode::SINGLE_NODE_SINGLE_WRITER:
    case VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER:
      return true;
    default:
      return false;
  }
}

bool IsReadOnlyMode(Mode mode) {
  return mode == VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY ||
         mode == VolumeCapability::AccessMode::MULTI_NODE_READER_ONLY;
}

bool IsMultiNodeMode(Mode mode) {
  return mode == VolumeCapability::AccessMode::MULTI_NODE_READER_ONLY ||
         mode == VolumeCapability::AccessMode::MULTI_NODE_SINGLE_WRITER ||
         mode == VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER;
}

Status ValidateCapability(const VolumeCapability& capability, const char* field, bool multi_node) {
  const std::string name(field);
  if (capability.access_type_case() == VolumeCapability::ACCESS_TYPE_NOT_SET) {
    return InvalidArgument(name + ": access type (block or mount) is required");
  }
  if (!capability.has_access_mode()) return InvalidArgument(name + ": access_mode is required");
  Mode mode = capability.access_mode().mode();
  if (mode == VolumeCapability::AccessMode::UNKNOWN) {
    return InvalidArgument(name + ": access_mode.mode is required");
  }
  if (!IsSupportedAccessMode(mode) && !(multi_node && IsMultiNodeMode(mode))) {
    return InvalidArgument(
        name + ": access mode " + VolumeCapability::AccessMode::Mode_Name(mode) +
        " is not supported (loop devices are single-node without --shared-store)");
  }
  if (capability.has_mount() && !IsSupportedFsType(capability.mount().fs_type())) {
    return InvalidArgument(name + ": fs_type '" + capability.mount().fs_type() +
                           "' is not supported (ext4, xfs)");
  }
  if (capability.has_mount()) {
    Status flags = ValidateMountFlags(capability.mount().mount_flags());
    if (!flags.ok()) return InvalidArgument(name + ": " + flags.message());
  }
  return Status::Ok();
}

Status ValidateMountFlags(const google::protobuf::RepeatedPtrField<std::string>& flags) {
  static const char* const kForbidden[] = {"bind",       "rbind",          "move",
                                           "remount",    "make-shared",    "make-private",
                                           "make-slave", "make-unbindable"};
  for (const std::string& flag : flags) {
    size_t start = 0;
    while (start <= flag.size()) {
      size_t end = flag.find(',', start);
      if (end == std::string::npos) end = flag.size();
      std::string option = flag.substr(start, end - start);
      std::string lower = option;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      for (const char* forbidden : kForbidden) {
        if (lower == forbidden) {
          return InvalidArgument("mount flag '" + option + "' is not allowed");
        }
      }
      if (lower.rfind("x-mount.", 0) == 0) {
        return InvalidArgument("mount flag '" + option + "' is not allowed");
      }
      start = end + 1;
    }
  }
  return Status::Ok();
}

Status ValidateCapabilities(
    const google::protobuf::RepeatedPtrField<VolumeCapability>& capabilities, bool multi_node) {
  if (capabilities.empty()) return InvalidArgument("volume_capabilities is required");
  for (const VolumeCapability& capability : capabilities) {
    FLEXCSI_RETURN_IF_ERROR(ValidateCapability(capability, "volume_capabilities", multi_node));
  }
  return Status::Ok();
}

Status CheckAccessTypeMatches(const VolumeRecord& volume, const VolumeCapability& capability) {
  if (volume.block && capability.has_mount()) {
    return FailedPrecondition("volume " + volume.id + " is a block volume, not a filesystem");
  }
  if (!volume.block && capability.has_block()) {
    return FailedPrecondition("volume " + volume.id + " is a filesystem volume, not block");
  }
  return Status::Ok();
}

StatusOr<int64_t> ParseMountGroup(const std::string& group) {
  if (group.empty()) return int64_t{-1};
  if (group.size() > 10 || group.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("volume_mount_group '" + group + "' is not a numeric gid");
  }
  int64_t gid = std::stoll(group);
  if (gid > 0xFFFFFFFELL) return InvalidArgument("volume_mount_group " + group + " is too large");
  return gid;
}

std::string CapabilityKey(const VolumeCapability& capability) {
  std::string key = VolumeCapability::AccessMode::Mode_Name(capability.access_mode().mode());
  if (capability.has_block()) return key + "|block";
  std::vector<std::string> flags(capability.mount().mount_flags().begin(),
                                 capability.mount().mount_flags().end());
  std::sort(flags.begin(), flags.end());
  key += "|mount|fs=" + capability.mount().fs_type() +
         "|group=" + capability.mount().volume_mount_group() + "|flags=";
  for (const std::string& flag : flags) key += flag + ",";
  return key;
}

std::map<std::string, std::string> ParametersAsMap(
    const google::protobuf::Map<std::string, std::string>& parameters) {
  return std::map<std::string, std::string>(parameters.begin(), parameters.end());
}

StatusOr<std::string> FsTypeFromParameters(const std::map<std::string, std::string>& parameters) {
  std::string fs_type = kDefaultFsType;
  for (const auto& [key, value] : parameters) {
    if (key == kFsTypeParameter) {
      if (value.empty() || !IsSupportedFsType(value)) {
        return InvalidArgument("parameter fsType='" + value + "' is not supported (ext4, xfs)");
      }
      fs_type = value;
    } else if (key.rfind("csi.storage.k8s.io/", 0) != 0) {
      return InvalidArgument("unknown parameter '" + key + "' (supported: fsType)");
    }
  }
  return fs_type;
}

namespace {
int64_t RoundUp(int64_t bytes) {
  return (bytes + kAllocationUnit - 1) / kAllocationUnit * kAllocationUnit;
}
int64_t RoundDown(int64_t bytes) { return bytes / kAllocationUnit * kAllocationUnit; }
}  // namespace

StatusOr<int64_t> ChooseCapacity(const csi::v1::CapacityRange* range, int64_t minimum_bytes) {
  int64_t required = range ? range->required_bytes() : 0;
  int64_t limit = range ? range->limit_bytes() : 0;
  if (required < 0 || limit < 0) {
    return InvalidArgument("capacity_range must not be negative");
  }
  if (limit > 0 && required > limit) {
    return OutOfRange("capacity_range.required_bytes " + std::to_string(required) +
                      " exceeds limit_bytes " + std::to_string(limit));
  }
  int64_t size = required > 0 ? RoundUp(required) : kDefaultVolumeBytes;
  size = std::max(size, RoundUp(minimum_bytes));
  if (limit > 0 && size > limit) {
    // Rounding up overshot the limit; the largest whole unit under the limit may still do.
    int64_t fitting = RoundDown(limit);
    if (fitting >= std::max(required, minimum_bytes) && fitting > 0) {
      size = fitting;
    } else {
      return OutOfRange("no size in whole MiB of at least " +
                        std::to_string(std::max(required, minimum_bytes)) +
                        " bytes fits limit_bytes " + std::to_string(limit));
    }
  }
  if (size > kMaxVolumeBytes) {
    return OutOfRange("capacity " + std::to_string(size) + " exceeds the maximum volume size " +
                      std::to_string(kMaxVolumeBytes));
  }
  return size;
}

bool CapacityFits(const csi::v1::CapacityRange* range, int64_t capacity_bytes) {
  if (range == nullptr) return true;
  if (capacity_bytes < range->required_bytes()) return false;
  if (range->limit_bytes() > 0 && capacity_bytes > range->limit_bytes()) return false;
  return true;
}

StatusOr<uint64_t> ParseStartingToken(const std::string& token) {
  if (token.empty()) return uint64_t{0};
  if (token.size() > 19 || token.find_first_not_of("0123456789") != std::string::npos) {
    return Aborted("starting_token '" + token + "' is not a token this driver issued");
  }
  return static_cast<uint64_t>(std::stoull(token));
}

Status ValidateMaxEntries(int32_t max_entries) {
  if (max_entries < 0) return InvalidArgument("max_entries must not be negative");
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
