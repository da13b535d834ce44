// Binding without waiting for the PV controller's periodic claim sync: a harmless annotation on
// the claim, written once the new PV is Bound, makes kube-controller-manager sync the claim at
// once (docs/migration.md, "Binding at once").
//
// Why it is safe, from the PV controller's source (rancher/k3s tags v1.10.6-lite5 and
// v1.14.6-k3s.1, which carry upstream's pkg/controller/volume/persistentvolume, and upstream
// master 61d96f2; v1.24 lies between and reads the same):
// - Every claim update event enqueues the claim: the claim informer's UpdateFunc
//   (pv_controller_base.go:111 in 1.10 and 1.14) adds its key to claimQueue, and claimWorker
//   (:362 / :364) calls updateClaim, which syncs a version newer than its cache.
// - syncClaim (pv_controller.go:225 / :244) sends a claim with pv.kubernetes.io/bind-completed
//   to syncBoundClaim (:427 / :442). For a claim whose spec.volumeName names a PV in the
//   controller's volume cache with claimRef.uid equal to the claim's uid (:467 / :482), it calls
//   bind(), which writes only what differs: here the claim's status, Lost -> Bound. Nothing else
//   in syncBoundClaim or syncUnboundClaim reads an annotation outside the controller's own
//   (bind-completed, bound-by-controller, storage-provisioner, selected-node, migrated-to).
// - The controller reads the PV from its own cache, fed by a separate informer; a claim synced
//   before the new PV reached that cache would only be marked Lost again. So the annotation is
//   written once the new PV shows phase Bound: only the controller's syncVolume writes that
//   phase, after storing the PV in the cache syncBoundClaim reads.
// - The write is a merge patch of one annotation of our own, without resourceVersion: it never
//   fails on a conflict and replaces nothing the controller, csi-provisioner or csi-resizer
//   wrote. A controller write racing it fails with 409, which updateClaim logs at V(3) ("happens
//   quite often and the controller recovers"), and the event of our write queues the claim again.
//   The patch carries the claim's uid, so a claim deleted and re-created meanwhile is never
//   annotated (the API server refuses a changed uid).
// If the write fails (no RBAC for patch, an old server), nothing is lost: the periodic sync
// binds the claim as before.
#include <chrono>

#include "migrate/pv_move_run.h"

namespace flexcsi::migrate {

namespace {

// Written again at most this often while the claim stays unbound: a sync that ran before the
// controller's caches caught up is repeated, without a write per poll.
constexpr std::chrono::seconds kClaimSyncRepeat{5};

}  // namespace

void PvMover::Run::RequestClaimSync(const json& claim) {
  const auto now = std::chrono::steady_clock::now();
  if (claim_sync_requested_ && now - last_claim_sync_ < kClaimSyncRepeat) return;
  claim_sync_requested_ = true;
  last_claim_sync_ = now;
  // A new value every time: an unchanged object makes no watch event.
  const auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  const json patch = {{"metadata",
                       {{"uid", UidOf(claim)},
                        {"annotations",
                         {{kClaimSyncAnnotation, pv_name_ + " " + std::to_string(stamp)}}}}}};
  auto patched =
      client_.Patch(ResourcePath::Core("persistentvolumeclaims", ClaimNs()).Named(ClaimName()),
                    kube::PatchType::kMerge, patch);
  if (patched.ok()) SawClaim(*patched);
}

}  // namespace flexcsi::migrate
