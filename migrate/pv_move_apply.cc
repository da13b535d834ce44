// Apply: its start (a fresh check, then the journal row) and each of its steps.
#include "migrate/pv_move_run.h"

#include <cstdint>
#include <cstdio>
#include <random>

namespace flexcsi::migrate {

// No claim will ever have this uid, which is exactly what makes the PV controller treat the
// PV's claim as gone.
std::string NewReleaseUid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t hi = gen(), lo = gen();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

Status PvMover::Run::ApplyStep(const std::string& step) {
  auto set_policy = [&](PvKind expected, const std::string& policy) {
    FLEXCSI_RETURN_IF_ERROR(EditPv(
        [&](json& pv) -> StatusOr<bool> {
          if (Classify(pv) != expected) {
            return FailedPrecondition(std::string("PV ") + pv_name_ + " is " +
                                      KindName(Classify(pv)));
          }
          if (Str(pv, kReclaim) == policy) return false;
          pv["spec"]["persistentVolumeReclaimPolicy"] = policy;
          return true;
        },
        "set reclaim policy " + policy));
    // Confirmed by a re-read, not by the update's answer: the watched copy once it shows the
    // update (ReadPv waits for it), else a GET.
    auto live = ReadPv();
    if (!live.ok()) return live.status();
    if (!*live || Str(**live, kReclaim) != policy) {
      return Internal("PV " + pv_name_ + " does not show reclaim policy " + policy +
                      " after it was set");
    }
    return Status::Ok();
  };

  if (step == "checked") return Status::Ok();
  if (step == "writing-secret") return WriteSecret();
  if (step == "scaling-down") return ScaleDownAndQuiesce();
  if (step == "retaining") return set_policy(PvKind::kOriginal, "Retain");
  if (step == "releasing") {
    FLEXCSI_RETURN_IF_ERROR(WaitQuiesced());
    FLEXCSI_RETURN_IF_ERROR(EditPv(
        [&](json& pv) -> StatusOr<bool> {
          if (Classify(pv) != PvKind::kOriginal) {
            return FailedPrecondition("PV " + pv_name_ + " changed before its release");
          }
          if (Str(pv, kReclaim) != "Retain") {
            return FailedPrecondition("PV " + pv_name_ + " is no longer Retain; not releasing");
          }
          if (Str(pv, kClaimRefUid) == rec_.release_uid) return false;
          pv["spec"]["claimRef"]["uid"] = rec_.release_uid;
          return true;
        },
        "release the PV from its claim"));
    return WaitNotBound();
  }
  if (step == "deleting-old") {
    auto live = ReadPv();
    if (!live.ok()) return live.status();
    if (Classify(*live) == PvKind::kTarget) return Status::Ok();  // already further
    return DeletePvSafely(PvKind::kOriginal);
  }
  if (step == "creating-new") return CreatePv(rec_.target_pv, PvKind::kTarget);
  if (step == "binding") return WaitBound(PvKind::kTarget);
  if (step == "restoring-policy") return set_policy(PvKind::kTarget, rec_.original_reclaim_policy);
  if (step == "restoring-replicas") return RestoreReplicas();
  if (step == "done") return Status::Ok();
  return Internal("unknown step " + step);
}

MoveResult PvMover::Run::Apply(const WorkloadGroupRecord* group) {
  const bool dry_run = m_->options_.dry_run;
  std::optional<MigrationRecord> existing;
  if (!dry_run) {
    auto got = m_->journal_->Get(pv_name_);
    if (!got.ok()) return Fail(got.status());
    existing = std::move(*got);
  }
  if (existing && existing->state != RecordState::kRolledBack) {
    rec_ = std::move(*existing);
    result_.claim = rec_.ClaimKey();
    result_.csi_driver = Str(rec_.target_pv, "/spec/csi/driver"_json_pointer);
    result_.step = rec_.step;
    if (rec_.state == RecordState::kMoved) {
      result_.outcome = Outcome::kMoved;
      result_.message = "already moved";
      return result_;
    }
    if (rec_.direction == "rollback") {
      return Refuse("a rollback of " + pv_name_ + " is in progress (step " + rec_.step +
                    "); finish it with `flexcsi migrate rollback --pv " + pv_name_ + "`");
    }
    Progress("resuming at step " + rec_.step);
    resumed_ = true;
  } else {
    auto live = GetPv();
    if (!live.ok()) return Fail(live.status());
    if (!*live) return Refuse("PV " + pv_name_ + " does not exist");
    const json& pv = **live;
    if (MigratableSourceOf(pv.value("spec", json::object())).empty()) {
      return Refuse("PV " + pv_name_ + " has no in-tree or FlexVolume source" +
                    (pv.value("spec", json::object()).contains("csi") ? " (already CSI)" : ""));
    }
    // The claim read fresh for the plan is the one journaled.
    std::optional<json> claim;
    auto plan = FreshPlan(pv, true, &claim);
    if (!plan.ok()) return Fail(plan.status());
    result_.claim = plan->ClaimKey();
    result_.csi_driver = plan->csi_driver;
    if (plan->verdict != Verdict::kInUse && plan->verdict != Verdict::kCanMove) {
      return Refuse(std::string(VerdictName(plan->verdict)) + ": " + plan->reason);
    }
    const std::string refusal = InUseRefusal(plan->pods, m_->options_.scale_down);
    if (!refusal.empty()) return Refuse(refusal);
    if (dry_run) return DryRun(pv, *plan);

    rec_ = MigrationRecord{};
    rec_.pv_name = pv_name_;
    rec_.direction = "apply";
    rec_.original_pv = pv;
    if (!claim) return Refuse("claim " + plan->ClaimKey() + " does not exist");
    rec_.original_pvc = std::move(*claim);
    rec_.target_pv = plan->target_pv;
    rec_.original_reclaim_policy = plan->reclaim_policy.empty() ? "Retain" : plan->reclaim_policy;
    rec_.release_uid = NewReleaseUid();
    if (group != nullptr) JoinGroup(*group);
    Status s = Announce("checked");
    if (!s.ok()) return Fail(s);
  }
  group_scales_ = !rec_.workload_group.empty();
  Status s = RunSteps(ApplyStepsFor(SecretToWrite().has_value()),
                      [this](const std::string& step) { return ApplyStep(step); });
  if (!s.ok()) return Fail(s);
  rec_.state = RecordState::kMoved;
  s = m_->journal_->Put(rec_);
  if (!s.ok()) return Fail(s);
  result_.outcome = Outcome::kMoved;
  for (const auto& n : notes_) result_.message += (result_.message.empty() ? "" : "; ") + n;
  return result_;
}

}  // namespace flexcsi::migrate
