// Resizer: the cluster-side half of expanding a FlexVolume PV of one of our drivers, whoever
// provisioned it. kube-controller-manager treats FlexVolume PVs as kubelet-expandable: its no-op
// expander raises pv.spec.capacity and sets FileSystemResizePending, and nothing grows the
// storage. We do, like external-resizer: ControllerExpandVolume to the claim's request (CSI
// makes it idempotent on size), then
//   - node expansion required: PV capacity = new size, PVC condition FileSystemResizePending
//     (kubelet's `expandfs` then grows the filesystem and sets status.capacity);
//   - not required: PV capacity and PVC status.capacity = new size, conditions cleared.
// The size we grew the volume to is remembered on the PV (annotation flexcsi.io/expanded-bytes)
// because the no-op expander has already moved pv.spec.capacity, so capacity alone cannot say
// whether the storage grew. Events as external-resizer: Resizing, FileSystemResizeRequired,
// VolumeResizeSuccessful, VolumeResizeFailed.
#pragma once

#include <string>

#include "controller/controller_context.h"

namespace flexcsi::controller {

inline constexpr const char* kAnnExpandedBytes = "flexcsi.io/expanded-bytes";

class Resizer {
 public:
  explicit Resizer(ControllerContext& ctx) : ctx_(ctx) {}
  // `claim` is a Bound claim; OK and nothing done when no expansion is due.
  Status SyncClaim(const nlohmann::json& claim);
  // True for a Bound claim asking for more than its status records: the only state in which
  // SyncClaim does anything.
  static bool ExpansionRequested(const nlohmann::json& claim);

 private:
  Status PatchClaimStatus(const nlohmann::json& claim, const nlohmann::json& status_patch);
  ControllerContext& ctx_;
};

}  // namespace flexcsi::controller
