// Rollback: its start (the in-use rule, turning an apply around) and each of its steps.
#include "migrate/pv_move_run.h"

namespace flexcsi::migrate {

Status PvMover::Run::RollbackStep(const std::string& step) {
  auto live = ReadPv();
  if (!live.ok()) return live.status();
  const PvKind kind = Classify(*live);
  if (kind == PvKind::kOther) {
    return FailedPrecondition("PV " + pv_name_ +
                              " is neither the original nor the CSI PV of this migration; "
                              "resolve by hand");
  }
  auto set_policy = [&](PvKind expected, const std::string& policy) -> Status {
    FLEXCSI_RETURN_IF_ERROR(EditPv(
        [&](json& pv) -> StatusOr<bool> {
          if (Classify(pv) != expected || Str(pv, kReclaim) == policy) return false;
          pv["spec"]["persistentVolumeReclaimPolicy"] = policy;
          return true;
        },
        "set reclaim policy " + policy));
    auto again = ReadPv();  // the watched copy once it shows the update, else a GET
    if (!again.ok()) return again.status();
    if (*again && Classify(*again) == expected && Str(**again, kReclaim) != policy) {
      return Internal("PV " + pv_name_ + " does not show reclaim policy " + policy);
    }
    return Status::Ok();
  };

  if (step == "rb-scaling-down") return ScaleDownAndQuiesce();
  if (step == "rb-retaining") {
    return kind == PvKind::kTarget ? set_policy(PvKind::kTarget, "Retain") : Status::Ok();
  }
  if (step == "rb-releasing") {
    if (kind != PvKind::kTarget) return Status::Ok();
    FLEXCSI_RETURN_IF_ERROR(WaitQuiesced());
    FLEXCSI_RETURN_IF_ERROR(EditPv(
        [&](json& pv) -> StatusOr<bool> {
          if (Classify(pv) != PvKind::kTarget) return false;
          if (Str(pv, kReclaim) != "Retain") {
            return FailedPrecondition("PV " + pv_name_ + " is not Retain; not releasing");
          }
          if (Str(pv, kClaimRefUid) == rec_.release_uid) return false;
          pv["spec"]["claimRef"]["uid"] = rec_.release_uid;
          return true;
        },
        "release the CSI PV from its claim"));
    return WaitNotBound();
  }
  if (step == "rb-deleting-new") {
    return kind == PvKind::kTarget ? DeletePvSafely(PvKind::kTarget) : Status::Ok();
  }
  if (step == "rb-creating-original") {
    if (kind == PvKind::kOriginal) return Status::Ok();
    return CreatePv(rec_.original_pv, PvKind::kOriginal);
  }
  if (step == "rb-binding") {
    if (kind != PvKind::kOriginal) {
      return FailedPrecondition(std::string("PV ") + pv_name_ + " is " + KindName(kind) +
                                ", expected the original");
    }
    FLEXCSI_RETURN_IF_ERROR(WaitQuiesced());
    auto claim = GetClaim();
    if (!claim.ok()) return claim.status();
    const std::string claim_uid = UidOf(*claim);
    FLEXCSI_RETURN_IF_ERROR(EditPv(
        [&](json& pv) -> StatusOr<bool> {
          if (Classify(pv) != PvKind::kOriginal || Str(pv, kClaimRefUid) == claim_uid) {
            return false;
          }
          pv["spec"]["claimRef"]["uid"] = claim_uid;
          return true;
        },
        "bind the original PV to its claim again"));
    return WaitBound(PvKind::kOriginal);
  }
  if (step == "rb-deleting-secret") return DeleteWrittenSecret();
  if (step == "rb-restoring-policy") {
    return kind == PvKind::kOriginal ? set_policy(PvKind::kOriginal, rec_.original_reclaim_policy)
                                     : Status::Ok();
  }
  if (step == "rb-restoring-replicas") return RestoreReplicas();
  if (step == "rolled-back") return Status::Ok();
  return Internal("unknown step " + step);
}

MoveResult PvMover::Run::Rollback(const WorkloadGroupRecord* group) {
  auto got = m_->journal_->Get(pv_name_);
  if (!got.ok()) return Fail(got.status());
  if (!*got) return Refuse("no migration of " + pv_name_ + " in journal " + m_->journal_->dir());
  rec_ = std::move(**got);
  result_.claim = rec_.ClaimKey();
  result_.csi_driver = Str(rec_.target_pv, "/spec/csi/driver"_json_pointer);
  result_.step = rec_.step;
  if (rec_.state == RecordState::kRolledBack) {
    result_.outcome = Outcome::kRolledBack;
    result_.message = "already rolled back";
    return result_;
  }
  resumed_ = rec_.direction == "rollback";
  const bool turning = rec_.direction != "rollback";
  // Apply got as far as restoring the replicas it recorded: its workloads are no longer ours.
  bool replicas_restored = turning && (rec_.state == RecordState::kMoved || rec_.step == "done");
  if (replicas_restored && !rec_.workload_group.empty()) {
    // A group member's own "done" is not its group's: the group restores once all are settled.
    auto group = m_->journal_->GetGroup(rec_.workload_group);
    if (!group.ok()) return Fail(group.status());
    replicas_restored = !*group || (*group)->step == "group-done";
  }
  if (turning && replicas_restored) {
    // Past apply's own restore (or its group's): the workloads are no longer ours; this rollback
    // records and restores afresh, alone or with its own group.
    rec_.workloads.clear();
    rec_.workloads_recorded = false;
    rec_.workload_group.clear();
  }
  if (group != nullptr) JoinGroup(*group);
  group_scales_ = group != nullptr;
  // The in-use rule of apply, before anything is written (the journal included). Pods of
  // workloads in rec_.workloads are ours: scaled down by this migration (apply not finished, or
  // this run's group).
  auto plan = FreshPlan(rec_.original_pv, false);
  if (!plan.ok()) return Fail(plan.status());
  const std::string refusal = InUseRefusal(PodsNotOurs(*plan), m_->options_.scale_down);
  if (!refusal.empty()) return Refuse(refusal);
  if (turning) {
    Progress("rolling back from step " + rec_.step);
    rec_.direction = "rollback";
    rec_.state = RecordState::kInProgress;
    Status s = Announce(RollbackSteps().front());
    if (!s.ok()) return Fail(s);
  }
  Status s = RunSteps(RollbackStepsFor(SecretToWrite().has_value()),
                      [this](const std::string& step) { return RollbackStep(step); });
  if (!s.ok()) return Fail(s);
  rec_.state = RecordState::kRolledBack;
  s = m_->journal_->Put(rec_);
  if (!s.ok()) return Fail(s);
  result_.outcome = Outcome::kRolledBack;
  for (const auto& n : notes_) result_.message += (result_.message.empty() ? "" : "; ") + n;
  return result_;
}

}  // namespace flexcsi::migrate
