// PvMover: moves one PV from its in-tree or FlexVolume source to its CSI twin on a live cluster
// (Apply), or back (Rollback), one journaled step at a time.
//
// Apply, for PV `P` bound to claim `C`:
//   checked            fresh re-read: translatable, C Bound to P, driver registered, not in use
//                      (or --scale-down and every pod has a scalable owner); the row is written
//                      with the original P and C, the target PV and a release uid
//   writing-secret     only where the rule derives P's secrets (ApplyStepsFor): the Secret the
//                      CSI PV names, in C's namespace, with the derived keys (read from the rule's
//                      Secret now, never journaled), marked with the release uid; created, or
//                      updated when ours and different; a Secret under the name not ours stops
//   scaling-down       owners' replicas recorded, then /scale to 0; wait until P is quiet: no
//                      pod holds C, no node lists the volume in status.volumesAttached /
//                      volumesInUse, and no VolumeAttachment names P
//   retaining          P.reclaimPolicy = Retain (update with resourceVersion), confirmed by a
//                      re-read
//   releasing          P.claimRef.uid = the release uid. The PV controller now sees P's claim as
//                      gone: P goes Released (Retain: nothing is reclaimed) and C goes Lost
//                      ("bound to a volume bound to another claim"). P is no longer Bound, which
//                      is the one condition pv-protection guards, so the finalizer may go.
//   deleting-old       fresh re-read must show Retain; DELETE with uid+resourceVersion
//                      preconditions; the pv-protection finalizer is removed once P is seen not
//                      Bound (the controller does the same), external-provisioner's finalizer
//                      from the Retain P (csi-provisioner v3 does the same; v1.x never, nor a
//                      stopped flexcsi-controller); wait until P is gone
//   creating-new       C's uid re-checked; the translator's output is created under the same name
//                      with claimRef {C's namespace, name, uid} and reclaim Retain
//   binding            wait for the PV controller: C Lost -> Bound to the new P, P Bound
//   restoring-policy   the original reclaim policy on the new P
//   restoring-replicas the recorded replicas (only where the workload is still at 0)
//   done
// A PV moving with its workload group (ParallelMover, apply or rollback --scale-down, or a group
// left in flight) leaves scale-down and restore to the group: its scaling-down (rb-scaling-down)
// step checks and waits, its restoring-replicas (rb-restoring-replicas) step writes nothing.
// Rollback walks back from any step with rb-scaling-down, rb-retaining, rb-releasing,
// rb-deleting-new, rb-creating-original, rb-binding, (rb-deleting-secret: the written Secret, if it
// carries this row's release uid), rb-restoring-policy, rb-restoring-replicas
// and ends rolled-back: the original PV (same name, original source, claimRef to C's uid,
// original policy), C Bound to it, replicas as recorded.
//
// One in-use rule for both directions: before its first write, each run plans C's pods afresh
// and refuses when pods (not Succeeded/Failed) hold C, unless --scale-down and every one has an
// owner that scales to zero (pods of workloads this migration already scaled down are its own).
// Rollback records and scales owners in rb-scaling-down as apply does in scaling-down (a rollback
// after a finished apply records afresh; after an unfinished one it keeps apply's replicas).
// No step moves a claimRef (releasing, rb-releasing, rb-binding) before P is quiet; in
// particular a CSI PV keeps csi-attacher's external-attacher/<driver> finalizer until it is
// being deleted with no VolumeAttachment left, so detach must come before release, never after.
//
// Every step is journaled before it is taken and is re-entrant: it re-reads the live objects and
// decides (PVs are recognised by their volume source, not by a remembered state), so a resume
// after kill -9 never repeats a write blindly. Writes of PVs are read-modify-write updates that
// carry resourceVersion; a 409 Conflict is answered by re-reading and deciding again. No PV is
// deleted unless a fresh read shows reclaim Retain, and never without a uid precondition. A
// claim's spec and status are never written; its one write is the annotation that has the PV
// controller sync it once the new PV is Bound to it (pv_move_claim_sync.cc).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"
#include "migrate/journal.h"
#include "migrate/planner.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

struct MoveOptions {
  bool scale_down = false;
  bool dry_run = false;  // every write with dryRun=All; nothing journaled
  std::chrono::milliseconds wait_timeout{std::chrono::minutes(5)};  // per wait
  std::chrono::milliseconds poll_interval{200};                     // the first wait between reads
  std::chrono::milliseconds max_poll_interval{1000};                // what it grows to (see Wait)
  // What a run is doing: each step as it is announced (`what` is the step's name, as in
  // ApplySteps / RollbackSteps) and notes ("scaling Deployment/web from 2 to 0"). Called from
  // the thread moving `pv`; may be empty.
  std::function<void(const std::string& pv, const std::string& what)> progress;
};

enum class Outcome {
  kMoved,       // apply: the claim is bound to the CSI PV (also "was already")
  kRolledBack,  // rollback: the claim is bound to the original PV again
  kWouldMove,   // dry run: every write was accepted by the server
  kRefused,     // nothing was written; see message
  kFailed,      // a step failed; the journal holds where it stands
};
const char* OutcomeName(Outcome o);

struct MoveResult {
  std::string pv_name;
  std::string claim;  // namespace/name
  std::string csi_driver;
  Outcome outcome = Outcome::kFailed;
  std::string step;                  // the last step journaled
  std::string message;               // the reason for kRefused / kFailed, notes otherwise
  std::vector<std::string> actions;  // dry run: the writes the server accepted
};

// The apply steps in order, and the rollback steps in order (names as journaled).
const std::vector<std::string>& ApplySteps();
const std::vector<std::string>& RollbackSteps();
// The steps of a PV whose CSI PV names a Secret migrate writes (its rule derives the secrets):
// apply writes it in "writing-secret", after "checked" and before anything else is written;
// rollback deletes it (only if it carries this migration's mark) in "rb-deleting-secret", once
// the original PV is bound again. Without `writes_secret`, ApplySteps() / RollbackSteps().
std::vector<std::string> ApplyStepsFor(bool writes_secret);
std::vector<std::string> RollbackStepsFor(bool writes_secret);

class WatchedObjects;

class PvMover {
 public:
  // `journal` may be null only with dry_run. `watched`: the caches the run's reads are served
  // from (watched_objects.h), or null to read everything from the server. All pointers must
  // outlive the mover.
  PvMover(kube::KubeClient* client, MigrationJournal* journal,
          const translator::Translator* translator, MoveOptions options,
          const WatchedObjects* watched = nullptr);

  // `group`: the PV moves as a member of that workload group, which has scaled its workloads to
  // 0 and restores them once every member is settled (see WorkloadGroupRecord): this PV's
  // scaling-down step only checks that no pod outside the group holds the claim and waits for
  // quiet, and its restoring-replicas step leaves the replicas to the group. Null for a PV on
  // its own (or resumed: a journaled row keeps the group it started with).
  MoveResult Apply(const std::string& pv_name, const WorkloadGroupRecord* group = nullptr);
  // `group`: as for Apply; the group of this run, which replaces any the row names (a rollback
  // after a finished apply group belongs to the rollback's group, not the apply's). Null: the
  // PV rolls back on its own and scales its workloads itself.
  MoveResult Rollback(const std::string& pv_name, const WorkloadGroupRecord* group = nullptr);

 private:
  class Run;
  kube::KubeClient* client_;
  MigrationJournal* journal_;
  const translator::Translator* translator_;
  MoveOptions options_;
  const WatchedObjects* watched_;
};

// FLEXCSI_MIGRATE_CRASH_AFTER=<step> SIGKILLs the process right after <step> is journaled (before
// its write); <step>+ right after the step's writes, before the next step is journaled. For the
// crash tests; unset in normal use.
void MaybeCrashForTest(const std::string& step, bool after_action);
// FLEXCSI_MIGRATE_HOLD_DIR=<dir>: the first read-modify-write of a PV, after its read and before
// its write, creates <dir>/held and waits (up to 60 s) for <dir>/go, so a test can change the
// object in between (the 409 path) or take the API server away. Unset in normal use.
void MaybeHoldForTest();

}  // namespace flexcsi::migrate
