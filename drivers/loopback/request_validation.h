// Checks every CSI request makes before doing any work, each answering with the code the CSI
// spec names for that mistake. Pure functions over protobuf messages: no state, no I/O, so they
// are tested in isolation (request_validation_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "csi.pb.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;
// Volumes are allocated in whole MiB: the loop driver and both filesystems like that.
constexpr int64_t kAllocationUnit = kMiB;
constexpr int64_t kDefaultVolumeBytes = kGiB;
constexpr int64_t kMinVolumeBytes = kMiB;
// Sparse files make huge volumes cheap to create but not to fill; 1 TiB keeps mistakes bounded.
constexpr int64_t kMaxVolumeBytes = 1024 * kGiB;
// mkfs.xfs (xfsprogs >= 5.19) refuses filesystems below 300 MiB.
constexpr int64_t kMinXfsBytes = 300 * kMiB;

constexpr char kDefaultFsType[] = "ext4";
// CreateVolume parameter selecting the filesystem NodeStage makes on a blank volume.
constexpr char kFsTypeParameter[] = "fsType";

// INVALID_ARGUMENT "<field> is required" when value is empty.
Status RequireField(const std::string& value, const char* field);

// "ext4" and "xfs"; "" means "the volume's default".
bool IsSupportedFsType(const std::string& fs_type);

bool IsSupportedAccessMode(csi::v1::VolumeCapability::AccessMode::Mode mode);
bool IsReadOnlyMode(csi::v1::VolumeCapability::AccessMode::Mode mode);
bool IsMultiNodeMode(csi::v1::VolumeCapability::AccessMode::Mode mode);

// One capability: exactly one access type, a supported access mode, a supported fs_type.
// INVALID_ARGUMENT otherwise; `field` names it in the message ("volume_capability").
// Multi-node access modes only with `multi_node` (a shared store that every node reaches).
Status ValidateCapability(const csi::v1::VolumeCapability& capability, const char* field,
                          bool multi_node = false);

// Mount flags are handed to libmount as options; those that would turn a filesystem mount into
// something else (a bind, a move, a remount) or make libmount act on its own (X-mount.*) are
// INVALID_ARGUMENT. A flag may itself hold several comma-separated options.
Status ValidateMountFlags(const google::protobuf::RepeatedPtrField<std::string>& flags);

// At least one capability, each valid.
Status ValidateCapabilities(
    const google::protobuf::RepeatedPtrField<csi::v1::VolumeCapability>& capabilities,
    bool multi_node = false);

// A volume made for raw block use cannot serve a mount capability and vice versa: the former has
// no filesystem NodeStage would trust, the latter's filesystem would be clobbered by a raw
// writer. FAILED_PRECONDITION when they disagree.
Status CheckAccessTypeMatches(const VolumeRecord& volume,
                              const csi::v1::VolumeCapability& capability);

// volume_mount_group as a numeric gid; INVALID_ARGUMENT when it is not one. -1 when empty.
StatusOr<int64_t> ParseMountGroup(const std::string& group);

// A canonical text for comparing capabilities across calls and restarts ("same capability"
// in the idempotency rules). Mount flags are order-insensitive.
std::string CapabilityKey(const csi::v1::VolumeCapability& capability);

// A request's parameters as the ordered map FsTypeFromParameters reads and a VolumeRecord keeps.
std::map<std::string, std::string> ParametersAsMap(
    const google::protobuf::Map<std::string, std::string>& parameters);

// Validates CreateVolume parameters and returns the filesystem they select (default ext4).
// Unknown keys are INVALID_ARGUMENT, except the csi.storage.k8s.io/ ones a CO may add.
StatusOr<std::string> FsTypeFromParameters(const std::map<std::string, std::string>& parameters);

// The size to allocate for a capacity range: required_bytes rounded up to kAllocationUnit (or
// kDefaultVolumeBytes when unset, shrunk to fit limit_bytes), at least `minimum_bytes`.
// OUT_OF_RANGE when no such size fits in [required, limit] or exceeds kMaxVolumeBytes;
// INVALID_ARGUMENT for negative numbers.
StatusOr<int64_t> ChooseCapacity(const csi::v1::CapacityRange* range, int64_t minimum_bytes);

// True when a volume of `capacity_bytes` satisfies `range` (for idempotent CreateVolume).
bool CapacityFits(const csi::v1::CapacityRange* range, int64_t capacity_bytes);

// List pagination. Tokens are the creation sequence number of the last entry returned, so a
// page boundary survives deletions and insertions. Empty token = start. A token that is not
// one of ours is ABORTED, as the spec asks.
StatusOr<uint64_t> ParseStartingToken(const std::string& token);
Status ValidateMaxEntries(int32_t max_entries);

}  // namespace loopback
}  // namespace flexcsi
