// The claim's workloads: their replicas recorded once, scaled to 0 before the claim moves, and
// restored after (or left to the workload group that scaled them).
#include "migrate/pv_move_run.h"

namespace flexcsi::migrate {

// Records the replicas of every owner of a pod holding the claim, once: an owner already in the
// journal keeps the replicas read first (it may be at 0 by now, scaled down by this migration).
Status PvMover::Run::RecordWorkloads() {
  if (rec_.direction == "apply") {
    auto live = ReadPv();
    if (!live.ok()) return live.status();
    if (Classify(*live) != PvKind::kOriginal) {
      return FailedPrecondition("PV " + pv_name_ + " changed before scale-down");
    }
  }
  auto plan = FreshPlan(rec_.original_pv, false);
  if (!plan.ok()) return plan.status();
  const std::vector<PodRef> others = PodsNotOurs(*plan);
  if (group_scales_ && !others.empty()) {
    return FailedPrecondition("claim " + rec_.ClaimKey() + " is held by pods outside its " +
                              "workload group " + rec_.workload_group + ": " + InUseReason(others) +
                              "; stop them and run " + rec_.direction + " again");
  }
  const std::string refusal = InUseRefusal(others, m_->options_.scale_down);
  if (!refusal.empty()) return FailedPrecondition("claim " + rec_.ClaimKey() + ": " + refusal);
  bool added = false;
  for (const auto& pod : others) {
    const WorkloadRef& w = pod.owner;
    if (Recorded(w)) continue;  // another pod of the same owner
    ScaledWorkload s{w.group_version, w.resource, w.kind, w.namespace_, w.name, 0};
    auto scale = client_.Get(ScaleOf(s));
    if (!scale.ok()) return scale.status().WithContext("read scale of " + w.ToString());
    s.replicas = scale->value("spec", json::object()).value("replicas", int64_t{0});
    rec_.workloads.push_back(s);
    added = true;
  }
  if (rec_.workloads_recorded && !added) return Status::Ok();
  rec_.workloads_recorded = true;
  return m_->journal_->Put(rec_);
}

Status PvMover::Run::ScaleDownAndQuiesce() {
  FLEXCSI_RETURN_IF_ERROR(RecordWorkloads());
  // A group member: the group has scaled its workloads.
  for (const auto& w : group_scales_ ? std::vector<ScaledWorkload>{} : rec_.workloads) {
    Progress("scaling " + w.kind + "/" + w.name + " from " + std::to_string(w.replicas) + " to 0");
    FLEXCSI_RETURN_IF_ERROR(ScaleWorkloadTo(client_, w, 0, false, nullptr));
  }
  return WaitQuiesced();
}

Status PvMover::Run::RestoreReplicas() {
  if (group_scales_) return Status::Ok();  // the group restores, once
  if (!rec_.workload_group.empty()) {
    // Rollback of a group member on its own (not with its group): the workloads come back only
    // when no other member of the group is half-way (its claim may be Lost right now; pods must
    // not start on it).
    auto records = m_->journal_->List();
    if (!records.ok()) return records.status();
    for (const auto& r : *records) {
      if (r.workload_group == rec_.workload_group && r.pv_name != pv_name_ &&
          r.state == RecordState::kInProgress) {
        notes_.push_back("replicas left at 0 while PV " + r.pv_name + " of workload group " +
                         rec_.workload_group + " is at step " + r.step +
                         "; finish it with apply or rollback");
        return Status::Ok();
      }
    }
  }
  for (const auto& w : rec_.workloads) {
    std::string note;
    FLEXCSI_RETURN_IF_ERROR(ScaleWorkloadTo(client_, w, w.replicas, true, &note));
    if (!note.empty()) notes_.push_back(note);
  }
  return Status::Ok();
}

}  // namespace flexcsi::migrate
