// ReconcileWithMountTable: makes the records agree with the kernel's mount table, at start and
// then periodically (to finish rollbacks that failed while a CSI driver was down).
//
// The rules (the kernel is the truth for node-side records, the CSI driver for the rest):
//   publication or CSI staging whose path IS mounted  -> record becomes done ("promoted" when it
//       was in-progress: the RPC completed but the bridge died before recording it; kubelet's
//       retry will find the path mounted and not call again).
//   publication whose target is NOT mounted           -> NodeUnpublishVolume, record deleted
//       ("rolled_back"): a half-done publish, or a mount that vanished (node reboot).
//   CSI staging NOT mounted and used by no publication -> NodeUnstageVolume, record deleted.
//   the bridge's own staging (attach:false) used by no publication, in any pass and phase,
//       mounted or not -> NodeUnstageVolume, record deleted: a bridge killed between the last
//       unpublish and the unstage, or an unstage that failed, left it, and no call will ever come
//       for it (a failed unstage of unmount's is retried with the backoff below, from 1 s).
//   attachment left attaching/detaching               -> ControllerUnpublishVolume, record
//       deleted; kube-controller-manager retries attach or detach and converges.
// A repair whose RPC fails leaves the record as it was, to be retried ("failed"): 1 s later, then
// 2 s, 4 s, ... up to 5 minutes (repair_backoff.h); a pass skips a record whose next attempt is
// not due yet ("deferred"). NOT_FOUND from the driver on an undo counts as done when nothing is
// mounted at the path (volume_operations.h), so a volume the driver never had leaves no record.
// Each record is handled under its volume lock, so no call is in flight on it meanwhile.
//
// Stagings are judged by their shape (state_store.h StagingShape): a driver mount or the
// bridge's marker must be mounted at the staging path; a record-only staging of the bridge's own
// is kept while publications use it, since nothing is ever mounted at its path.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bridge/bridge_context.h"

namespace flexcsi {

struct ReconcileReport {
  int promoted = 0;     // in-progress records whose RPC had completed
  int rolled_back = 0;  // records whose path was not mounted, undone through CSI and deleted
  int failed = 0;       // repairs that could not be done now (driver unreachable, ...)
  int deferred = 0;     // records skipped because their last repair failed too recently
  std::vector<std::string> details;  // one line per repair, for the log

  int repaired() const { return promoted + rolled_back; }
};

// Which records a pass may repair. The start-up pass repairs every record; the periodic pass only
// finishes records left in-progress or removing, because a done record that looks unmounted while
// the daemon runs more likely means the bridge lost sight of the host's mounts (a propagation
// mistake) than that a pod's volume vanished, and unpublishing it would cut a running pod off.
// Both unstage the bridge's own stagings that no publication uses, whatever their phase: no pod
// can be cut off by that, and no call will come for them.
enum class ReconcileScope { kAllRecords, kUnfinishedOnly };

ReconcileReport ReconcileWithMountTable(BridgeContext& ctx, ReconcileScope scope);

// Runs ReconcileWithMountTable every `interval` on its own thread until Stop(), and sooner when
// a failed repair's backoff (ctx.repairs) comes due.
class PeriodicReconciler {
 public:
  PeriodicReconciler(BridgeContext& ctx, std::chrono::seconds interval)
      : ctx_(ctx), interval_(interval) {}
  ~PeriodicReconciler() { Stop(); }
  void Start();
  void Stop();

 private:
  BridgeContext& ctx_;
  std::chrono::seconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace flexcsi
