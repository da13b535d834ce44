#include "bridge/reconciler.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "bridge/staging_marker.h"
#include "bridge/volume_operations.h"
#include "common/mount_table.h"

namespace flexcsi {
namespace {

// Generous enough for one unpublish/unstage; short enough that start-up is not held hostage by
// a driver that is still starting (the periodic pass retries).
constexpr std::chrono::seconds kRepairBudget(20);

std::set<std::string> MountedTargets() {
  std::set<std::string> targets;
  auto table = ReadMountTable();
  if (!table.ok()) {
    spdlog::error("reconcile: cannot read the mount table: {}", table.status().ToString());
    return targets;
  }
  for (const auto& m : *table) targets.insert(m.target);
  return targets;
}

// Whether `path` is mounted. The snapshot answers "mounted" cheaply; a "not mounted" answer is
// confirmed against the live mount table, because it leads to an unpublish or unstage and the
// snapshot predates the volume lock: a call holding the lock may have mounted it since.
// REQUIRES: the volume's lock is held.
bool IsMounted(const std::string& path, const std::set<std::string>& snapshot) {
  return snapshot.count(path) > 0 || IsMountPoint(path);
}

// Whether a pass of `scope` may touch a record now in `phase`.
bool InScope(ReconcileScope scope, Phase phase) {
  return scope == ReconcileScope::kAllRecords || phase != Phase::kDone;
}

void Note(ReconcileReport* report, int* counter, const std::string& line) {
  ++*counter;
  report->details.push_back(line);
}

// Whether the record's repair may be tried now; counts it as deferred otherwise.
bool RepairDue(BridgeContext& ctx, const std::string& key, ReconcileReport* report) {
  if (ctx.repairs.Due(key, RepairBackoff::Clock::now())) return true;
  ++report->deferred;
  return false;
}

// Feeds the outcome of a repair into the backoff table and the report.
void NoteRepair(BridgeContext& ctx, const char* kind, const std::string& key, const Status& undone,
                const std::string& done_line, const std::string& failed_what,
                ReconcileReport* report) {
  if (undone.ok()) {
    ctx.repairs.RecordSuccess(key);
    Note(report, &report->rolled_back, done_line);
  } else {
    ctx.repairs.RecordFailure(kind, key, undone.ToString(), RepairBackoff::Clock::now());
    Note(report, &report->failed, "could not roll back " + failed_what + ": " + undone.ToString());
  }
}

void ReconcilePublication(BridgeContext& ctx, const PublicationRecord& stale,
                          const std::set<std::string>& mounted, ReconcileScope scope,
                          ReconcileReport* report) {
  if (!InScope(scope, stale.phase)) return;
  const std::string key = PublicationRepairKey(stale.target_path);
  if (!RepairDue(ctx, key, report)) return;
  auto guard = ctx.locks.Lock(VolumeLockKey(stale.csi_driver, stale.volume_id));
  // Re-read under the lock: the call that held it may have finished the record meanwhile.
  auto current = ctx.store.GetPublication(stale.target_path);
  if (!current.ok() || !current->has_value() || !InScope(scope, (*current)->phase)) return;
  PublicationRecord r = **current;
  if (IsMounted(r.target_path, mounted)) {
    if (r.phase == Phase::kDone) return;
    const bool was_publishing = r.phase == Phase::kInProgress;
    r.phase = Phase::kDone;
    if (ctx.store.PutPublication(r).ok()) {
      ctx.repairs.RecordSuccess(key);
      Note(report, &report->promoted,
           std::string(was_publishing ? "promoted" : "kept") + " publication " + r.target_path +
               " of " + r.volume_id + " (mounted)");
    }
    return;
  }
  Status undone = UnpublishVolume(ctx, r, Deadline::In(kRepairBudget));
  NoteRepair(ctx, "publication", key, undone,
             "rolled back publication " + r.target_path + " of " + r.volume_id + " (not mounted)",
             "publication " + r.target_path, report);
}

void ReconcileStaging(BridgeContext& ctx, const StagingRecord& stale,
                      const std::set<std::string>& mounted, ReconcileScope scope,
                      ReconcileReport* report) {
  // A no-stage record written before markers existed only carries a publish context; nothing to
  // compare. Every other shape is judged by what it should leave at its path (ExpectsMount).
  // The bridge's own stagings are looked at in every pass, whatever their phase: whether one is
  // still used is only known under its volume lock.
  auto bookkeeping_only = [](const StagingRecord& r) {
    return r.shape == StagingShape::kNoStage && !r.marker;
  };
  const bool own = stale.owner == StagingOwner::kBridge;
  if (!own && (!InScope(scope, stale.phase) || bookkeeping_only(stale))) return;
  const std::string key = StagingRepairKey(stale.staging_path);
  if (!RepairDue(ctx, key, report)) return;
  auto guard = ctx.locks.Lock(VolumeLockKey(stale.csi_driver, stale.volume_id));
  auto current = ctx.store.GetStaging(stale.staging_path);
  if (!current.ok() || !current->has_value()) return;
  StagingRecord r = **current;
  auto users = ctx.store.CountPublicationsOfStaging(r.staging_path);
  if (!users.ok()) return;
  // The bridge stages a volume itself only for its publications (mount_calls.cc) and unstages it
  // after the last one, all under the volume lock, which this pass now holds. So one of its own
  // stagings that no publication uses is left over: by a bridge that died between the last
  // unpublish and the unstage, or between staging and publishing, or by an unstage that failed
  // (the driver was down) and is retried here with backoff. kubelet will never call anything for
  // it. Mounted or not, it goes; it is never promoted back to staged (kubelet's next mount, if
  // any, stages again).
  const bool unused_own = r.owner == StagingOwner::kBridge && *users == 0;
  if (!unused_own && (!InScope(scope, r.phase) || bookkeeping_only(r))) return;
  // A record-only staging of the bridge's own (attach:false) has nothing at its path to look
  // at: it is fine while publications use it, whatever the mount table says.
  const bool judged_by_mount = r.ExpectsMount() || r.phase != Phase::kDone;
  if (!unused_own && judged_by_mount && IsMounted(r.staging_path, mounted)) {
    if (r.phase == Phase::kDone) return;
    r.phase = Phase::kDone;
    // A crash between mounting the marker and recording it leaves the marker to be found here.
    if (r.owner == StagingOwner::kKubelet && IsStagingMarker(r.staging_path)) {
      r.marker = true;
      if (r.shape == StagingShape::kDriverMount) r.shape = StagingShape::kRecordOnly;
    }
    if (ctx.store.PutStaging(r).ok()) {
      ctx.repairs.RecordSuccess(key);
      Note(report, &report->promoted,
           "promoted staging " + r.staging_path + " of " + r.volume_id + " (mounted)");
    }
    return;
  }
  if (*users > 0) return;  // publications are reconciled first; wait for them
  Status undone = UnstageVolume(ctx, r, Deadline::In(kRepairBudget));
  const std::string why = unused_own        ? "the bridge's own, used by no publication"
                          : judged_by_mount ? "not mounted"
                                            : "no publication uses it";
  NoteRepair(ctx, "staging", key, undone,
             "rolled back staging " + r.staging_path + " of " + r.volume_id + " (" + why + ")",
             "staging " + r.staging_path, report);
}

void ReconcileAttachment(BridgeContext& ctx, const AttachmentRecord& stale,
                         ReconcileReport* report) {
  if (stale.phase == Phase::kDone) return;
  const std::string key =
      AttachmentRepairKey(stale.flex_driver, stale.volume_name, stale.node_name);
  if (!RepairDue(ctx, key, report)) return;
  auto guard = ctx.locks.Lock(VolumeLockKey(stale.csi_driver, stale.volume_id));
  auto current = ctx.store.GetAttachment(stale.flex_driver, stale.volume_name, stale.node_name);
  if (!current.ok() || !current->has_value() || (*current)->phase == Phase::kDone) return;
  const AttachmentRecord& r = **current;
  if (ctx.config.FindDriver(r.flex_driver) == nullptr) return;
  Status undone = DetachVolume(ctx, r, Deadline::In(kRepairBudget));
  NoteRepair(ctx, "attachment", key, undone,
             "rolled back unfinished attachment of " + r.volume_id + " to " + r.node_name,
             "attachment of " + r.volume_id, report);
}

// Records finished by other means (kubelet's retry, an operator) leave the backoff table: only
// a record still unfinished has a repair to wait for (a failed repair leaves it removing).
void ForgetRepairsOfFinishedRecords(BridgeContext& ctx) {
  auto pubs = ctx.store.ListPublications();
  auto stagings = ctx.store.ListStagings();
  auto attachments = ctx.store.ListAttachments();
  if (!pubs.ok() || !stagings.ok() || !attachments.ok()) return;
  std::set<std::string> keys;
  for (const auto& r : *pubs) {
    if (r.phase != Phase::kDone) keys.insert(PublicationRepairKey(r.target_path));
  }
  for (const auto& r : *stagings) {
    if (r.phase != Phase::kDone) keys.insert(StagingRepairKey(r.staging_path));
  }
  for (const auto& r : *attachments) {
    if (r.phase != Phase::kDone) {
      keys.insert(AttachmentRepairKey(r.flex_driver, r.volume_name, r.node_name));
    }
  }
  ctx.repairs.Retain(keys);
}

}  // namespace

ReconcileReport ReconcileWithMountTable(BridgeContext& ctx, ReconcileScope scope) {
  ReconcileReport report;
  const std::set<std::string> mounted = MountedTargets();
  if (auto pubs = ctx.store.ListPublications(); pubs.ok()) {
    for (const auto& r : *pubs) ReconcilePublication(ctx, r, mounted, scope, &report);
  }
  if (auto stagings = ctx.store.ListStagings(); stagings.ok()) {
    for (const auto& r : *stagings) ReconcileStaging(ctx, r, mounted, scope, &report);
  }
  if (auto attachments = ctx.store.ListAttachments(); attachments.ok()) {
    for (const auto& r : *attachments) ReconcileAttachment(ctx, r, &report);
  }
  ctx.metrics.AddReconcileRepairs("promoted", report.promoted);
  ctx.metrics.AddReconcileRepairs("rolled_back", report.rolled_back);
  ctx.metrics.AddReconcileRepairs("failed", report.failed);
  ForgetRepairsOfFinishedRecords(ctx);
  if (auto counts = ctx.store.CountRecords(); counts.ok()) {
    ctx.metrics.SetRecords("attachments", counts->attachments);
    ctx.metrics.SetRecords("stagings", counts->stagings);
    ctx.metrics.SetRecords("publications", counts->publications);
  }
  return report;
}

void PeriodicReconciler::Start() {
  thread_ = std::thread([this] {
    using Clock = RepairBackoff::Clock;
    // How soon a failure recorded by a FlexVolume call (not by this thread) is noticed.
    constexpr std::chrono::seconds kTick(1);
    std::unique_lock<std::mutex> lock(mu_);
    auto next_pass = Clock::now() + interval_;
    for (;;) {
      if (wake_.wait_until(lock, std::min(next_pass, Clock::now() + kTick),
                           [this] { return stopping_; })) {
        return;
      }
      const auto now = Clock::now();
      const auto due = ctx_.repairs.NextDue();
      if (now < next_pass && !(due && *due <= now)) continue;
      if (now >= next_pass) next_pass = now + interval_;
      lock.unlock();
      ReconcileReport report = ReconcileWithMountTable(ctx_, ReconcileScope::kUnfinishedOnly);
      for (const auto& line : report.details) spdlog::warn("reconcile: {}", line);
      lock.lock();
    }
  });
}

void PeriodicReconciler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace flexcsi
