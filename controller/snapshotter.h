// Snapshotter: external-snapshotter's two halves for our drivers, on clusters that serve
// snapshot.storage.k8s.io/v1.
//   - common controller (snapshot-controller): a VolumeSnapshot with
//     source.persistentVolumeClaimName of one of our FlexVolume PVs gets a VolumeSnapshotContent
//     "snapcontent-<snapshot uid>" bound to it, and its status mirrors the content's
//     (boundVolumeSnapshotContentName, creationTime, readyToUse, restoreSize).
//   - sidecar (csi-snapshotter): a content of our CSI driver without a snapshotHandle gets
//     CreateSnapshot(name "snapshot-<snapshot uid>", source volume); status snapshotHandle,
//     creationTime (ns), readyToUse, restoreSize. A content whose snapshot is gone (or that is
//     deleted) with deletionPolicy Delete gets DeleteSnapshot, then loses its finalizer.
// Next to the community snapshot-controller (which handles every VolumeSnapshot): it finds our
// content under the name it would have used and only binds the snapshot to it, writing the same
// status values; it cannot create a content itself for a FlexVolume PV. Only contents carrying
// kAnnManagedBy are ours: pre-provisioned contents (spec.source.snapshotHandle) and contents
// snapshot-controller made for CSI PVs of the same driver are never touched, so no content is
// worked on by two controllers. See docs/controller.md "Snapshots" for the one warning that
// remains possible.
#pragma once

#include <string>

#include "controller/controller_context.h"

namespace flexcsi::controller {

inline constexpr const char* kContentFinalizer =
    "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection";
inline constexpr const char* kSnapshotBoundFinalizer =
    "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection";
// On the VolumeSnapshotContents flexcsi-controller created (and so deletes and snapshots).
inline constexpr const char* kAnnManagedBy = "flexcsi.io/managed-by";

class Snapshotter {
 public:
  explicit Snapshotter(ControllerContext& ctx) : ctx_(ctx) {}
  Status SyncSnapshot(const std::string& namespace_, const std::string& name);
  Status SyncContent(const std::string& name);

 private:
  Status Fail(const nlohmann::json& snapshot, const Status& why);
  ControllerContext& ctx_;
};

}  // namespace flexcsi::controller
