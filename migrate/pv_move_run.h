// Internal to migrate/: PvMover::Run, one Apply or Rollback of one PV, whose members are split
// by job over the pv_move_*.cc files (pv_mover.h tells the steps):
//   pv_mover.cc             the public face: step lists, outcomes, test hooks, running the steps
//   pv_move_apply.cc        apply: its start (fresh check, journal row) and each apply step
//   pv_move_dry_run.cc      apply --dry-run: every write sent with dryRun=All, nothing journaled
//   pv_move_rollback.cc     rollback: its start (in-use rule, turning around) and each step
//   pv_move_conditions.cc   what steps read and wait for: fresh plan, pods, attachments, binding
//   pv_move_pv_writes.cc    the PV writes: read-modify-write, the guarded delete, create
//   pv_move_workloads.cc    recording, scaling down and restoring the claim's workloads
//   pv_move_claim_sync.cc   the annotation that has the PV controller sync the claim at once
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/pv_mover.h"
#include "migrate/watched_objects.h"
#include "migrate/workload_scaler.h"

namespace flexcsi::migrate {

// Internal header: the pv_move_*.cc files share these names.
using kube::ResourcePath;
using nlohmann::json;

inline const json::json_pointer kReclaim("/spec/persistentVolumeReclaimPolicy");
inline const json::json_pointer kClaimRefUid("/spec/claimRef/uid");
inline const json::json_pointer kPhase("/status/phase");

// The annotation RequestClaimSync writes on a claim: "<pv> <unix ms>" of its latest request.
inline constexpr const char* kClaimSyncAnnotation = "flexcsi.io/claim-sync-requested";

inline ResourcePath Pvs() { return ResourcePath::Core("persistentvolumes"); }

// A random RFC 4122 version-4 uid: the claimRef uid that releases a PV (pv_move_apply.cc).
std::string NewReleaseUid();

// The Secret apply writes for `original_pv` where its rule derives the secrets, at `to`, marked
// with `release_uid`; reads the rule's Secret (pv_move_secret.cc). Caller must not log it.
StatusOr<json> WrittenSecretFor(kube::KubeClient& client, const translator::Translator& translator,
                                const json& original_pv, const translator::SecretReference& to,
                                const std::string& release_uid);

// One Apply or Rollback of one PV: the live reads, the journal row and the steps.
class PvMover::Run {
 public:
  Run(PvMover* m, std::string pv_name) : m_(m), client_(*m->client_), pv_name_(std::move(pv_name)) {
    result_.pv_name = pv_name_;
  }

  MoveResult Apply(const WorkloadGroupRecord* group);
  MoveResult Rollback(const WorkloadGroupRecord* group);

 private:
  enum class PvKind { kAbsent, kOriginal, kTarget, kOther };

  // --- reads ---
  // Every read of the PV and the claim remembers the newest resourceVersion this run has seen of
  // it (its own writes' answers included); a watched copy older than that is never used, so a
  // run always sees its own writes (watched_objects.h).
  // The PV as the server has it now (a GET).
  StatusOr<std::optional<json>> GetPv();
  // The watched PV once the cache has caught up with what this run has seen; else GetPv(). For
  // decisions whose writes carry the copy's resourceVersion or that only wait.
  StatusOr<std::optional<json>> ReadPv();
  // The claim ns/name: from the server (`fresh`), else the watched copy as ReadPv; kNotFound
  // when it does not exist.
  StatusOr<json> ReadClaimAt(const std::string& ns, const std::string& name, bool fresh);
  void SawPv(const json& pv) { Saw(pv, &pv_seen_rv_); }
  void SawClaim(const json& claim) { Saw(claim, &claim_seen_rv_); }
  static void Saw(const json& object, std::string* seen);
  // Waits a moment for `cached` to answer (the cache catching up with this run's own writes)
  // while `watching`; false when it does not.
  bool AwaitCache(const std::function<bool()>& cached, const std::function<bool()>& watching);
  PvKind Classify(const std::optional<json>& live) const {
    if (!live) return PvKind::kAbsent;
    const json& spec = (*live).value("spec", json::object());
    const std::string source = MigratableSourceOf(rec_.original_pv["spec"]);
    if (!source.empty() && !spec.contains("csi") && spec.contains(source) &&
        spec[source] == rec_.original_pv["spec"][source]) {
      return PvKind::kOriginal;
    }
    if (spec.contains("csi") && rec_.target_pv.is_object() &&
        spec["csi"] == rec_.target_pv["spec"]["csi"]) {
      return PvKind::kTarget;
    }
    return PvKind::kOther;
  }
  static const char* KindName(PvKind k) {
    switch (k) {
      case PvKind::kAbsent:
        return "absent";
      case PvKind::kOriginal:
        return "the original PV";
      case PvKind::kTarget:
        return "the CSI PV";
      case PvKind::kOther:
        return "a PV this migration did not make";
    }
    return "";
  }
  std::string ClaimNs() const { return NamespaceOf(rec_.original_pvc); }
  std::string ClaimName() const { return NameOf(rec_.original_pvc); }
  // The journaled claim, checked to be the same claim (uid): from the server (GetClaim, before
  // its uid is written into a PV) or the watched copy (ReadClaim, while waiting).
  StatusOr<json> GetClaim() { return CheckedClaim(true); }
  StatusOr<json> ReadClaim() { return CheckedClaim(false); }
  StatusOr<json> CheckedClaim(bool fresh) {
    auto c = ReadClaimAt(ClaimNs(), ClaimName(), fresh);
    if (!c.ok()) return c.status().WithContext("read claim " + rec_.ClaimKey());
    if (UidOf(*c) != UidOf(rec_.original_pvc)) {
      return FailedPrecondition("claim " + rec_.ClaimKey() + " was deleted and re-created (uid " +
                                UidOf(*c) + ", journaled " + UidOf(rec_.original_pvc) +
                                "); refusing to bind a PV to a different claim");
    }
    return c;
  }
  // Fresh objects around one PV, planned with the same code as `migrate plan`: its claim from
  // the server (`fresh_claim`, put in `claim_read`) or as ReadClaimAt, the pods, ReplicaSets,
  // HPAs and driver registrations from the watched caches (else listed, as before).
  StatusOr<VolumePlan> FreshPlan(const json& pv, bool fresh_claim,
                                 std::optional<json>* claim_read = nullptr);
  StatusOr<std::vector<json>> PodsHoldingClaim();
  StatusOr<bool> VolumeStillAttached();
  StatusOr<bool> VolumeAttachmentRemains();
  // The pods holding the claim, less those of workloads this migration scaled down itself
  // (journaled), which are on their way out.
  std::vector<PodRef> PodsNotOurs(const VolumePlan& plan) const;
  bool Recorded(const WorkloadRef& owner) const;  // in rec_.workloads
  // The row becomes a member of `group`: the group read these replicas before its scale-down,
  // so they are the ones to restore.
  void JoinGroup(const WorkloadGroupRecord& group) {
    rec_.workload_group = group.id;
    rec_.workloads = group.workloads;
    rec_.workloads_recorded = true;
  }

  // --- writes ---
  // Read-modify-write of the PV: `edit` returns false when nothing needs writing, true after
  // changing the copy. A 409 Conflict re-reads and asks `edit` again.
  Status EditPv(const std::function<StatusOr<bool>(json& pv)>& edit, const std::string& what);
  Status DeletePvSafely(PvKind expected);
  Status CreatePv(const json& object, PvKind expected);
  Status RecordWorkloads();
  Status ScaleDownAndQuiesce();
  // The guard of every claimRef move, in both directions: waits until no pod holds the claim, no
  // node lists the volume (volumesAttached / volumesInUse) and no VolumeAttachment names the PV.
  Status WaitQuiesced();
  Status RestoreReplicas();
  Status WaitBound(PvKind expected);
  Status WaitNotBound();
  // Re-checks `done` until it is true: at each change of the watched caches when its last check
  // read no server, else polling (MoveOptions' intervals).
  Status Wait(const std::function<StatusOr<bool>()>& done, const std::string& what);
  // Has the PV controller sync `claim` now instead of at its next periodic sync, by writing
  // kClaimSyncAnnotation; at most every few seconds. Best effort (pv_move_claim_sync.cc says
  // why it is safe). REQUIRES: the PV is Bound to `claim` (phase Bound, claimRef.uid).
  void RequestClaimSync(const json& claim);

  // --- the Secret of a rule that derives secrets (pv_move_secret.cc) ---
  // The Secret the target PV names that migrate writes (translator WrittenSecretName), if any.
  std::optional<translator::SecretReference> SecretToWrite() const;
  bool SecretIsOurs(const json& secret) const;  // marked with this row's release uid
  Status WriteSecret();                         // writing-secret: create, or update ours
  Status DeleteWrittenSecret();                 // rb-deleting-secret: ours only

  // --- journal ---
  Status Announce(const std::string& step) {
    rec_.step = step;
    rec_.last_error.clear();
    FLEXCSI_RETURN_IF_ERROR(m_->journal_->Put(rec_));
    result_.step = step;
    Progress(step);
    MaybeCrashForTest(step, false);
    return Status::Ok();
  }
  void Progress(const std::string& what) {
    if (m_->options_.progress) m_->options_.progress(pv_name_, what);
  }
  Status RunSteps(const std::vector<std::string>& steps,
                  const std::function<Status(const std::string&)>& take);
  MoveResult Fail(const Status& s) {
    result_.outcome = Outcome::kFailed;
    result_.message = s.message();
    if (m_->journal_ != nullptr && !rec_.pv_name.empty()) {
      rec_.last_error = s.message();
      (void)m_->journal_->Put(rec_);  // best effort: the step itself is already journaled
    }
    return result_;
  }
  MoveResult Refuse(const std::string& why) {
    result_.outcome = Outcome::kRefused;
    result_.message = why;
    return result_;
  }
  MoveResult DryRun(const json& pv, const VolumePlan& plan);

  Status ApplyStep(const std::string& step);
  Status RollbackStep(const std::string& step);

  PvMover* m_;
  kube::KubeClient& client_;
  std::string pv_name_;
  MigrationRecord rec_;
  MoveResult result_;
  std::vector<std::string> notes_;
  bool resumed_ = false;  // the row came from an earlier run's journal
  // The workload group rec_.workload_group scales this PV's workloads down and restores them;
  // this run only checks and waits. Apply: whenever the row names a group (an apply member is
  // always resumed with its group). Rollback: when this run rolls back with its group.
  bool group_scales_ = false;
  std::string pv_seen_rv_, claim_seen_rv_;  // see "reads" above
  uint64_t server_reads_ = 0;  // GETs and LISTs this run sent: Wait polls while they happen
  bool claim_sync_requested_ = false;
  std::chrono::steady_clock::time_point last_claim_sync_;
};

}  // namespace flexcsi::migrate
