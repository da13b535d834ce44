// apply --dry-run: each write apply would make, sent with dryRun=All; nothing is journaled.
#include "migrate/pv_move_run.h"

namespace flexcsi::migrate {

MoveResult PvMover::Run::DryRun(const json& pv, const VolumePlan& plan) {
  kube::WriteOptions dry;
  dry.dry_run = true;
  auto act = [&](const std::string& what, const StatusOr<json>& r) -> bool {
    if (!r.ok()) {
      result_.outcome = Outcome::kFailed;
      result_.message = what + ": " + r.status().message();
      return false;
    }
    result_.actions.push_back(what);
    return true;
  };
  if (plan.written_secret) {
    // Read and derived as apply would, never shown: the action names the keys only.
    const translator::SecretReference to{plan.written_secret->name,
                                         plan.written_secret->namespace_};
    auto secret = WrittenSecretFor(client_, *m_->translator_, pv, to, NewReleaseUid());
    if (!secret.ok()) {
      result_.outcome = Outcome::kFailed;
      result_.message = secret.status().message();
      return result_;
    }
    std::string keys;
    for (auto it = (*secret)["data"].begin(); it != (*secret)["data"].end(); ++it) {
      keys += (keys.empty() ? "" : ",") + it.key();
    }
    if (!act("write secret " + to.namespace_name + "/" + to.name + " (keys " + keys + ")",
             client_.Create(ResourcePath::Core("secrets", to.namespace_name), *secret, dry))) {
      return result_;
    }
  }
  for (const auto& w : plan.workloads) {
    ScaledWorkload s{w.group_version, w.resource, w.kind, w.namespace_, w.name, 0};
    auto scale = client_.Get(ScaleOf(s));
    if (!scale.ok()) {
      result_.outcome = Outcome::kFailed;
      result_.message = "read scale of " + w.ToString() + ": " + scale.status().message();
      return result_;
    }
    json zero = *scale;
    zero["spec"]["replicas"] = 0;
    if (!act("scale " + w.ToString() + " to 0", client_.Update(ScaleOf(s), zero, dry))) {
      return result_;
    }
  }
  json retain = pv;
  retain["spec"]["persistentVolumeReclaimPolicy"] = "Retain";
  if (!act("set reclaim policy Retain", client_.Update(Pvs().Named(pv_name_), retain, dry))) {
    return result_;
  }
  json released = pv;
  released["spec"]["claimRef"]["uid"] = NewReleaseUid();
  if (!act("release the PV from claim " + plan.ClaimKey(),
           client_.Update(Pvs().Named(pv_name_), released, dry))) {
    return result_;
  }
  if (Str(pv, kReclaim) == "Retain") {
    kube::DeleteOptions del;
    del.dry_run = true;
    del.precondition_uid = UidOf(pv);
    if (!act("delete PV " + pv_name_ + " (uid precondition)",
             client_.Delete(Pvs().Named(pv_name_), del))) {
      return result_;
    }
  } else {
    result_.actions.push_back("delete PV " + pv_name_ +
                              " with a uid precondition (not sent: "
                              "its policy is " +
                              Str(pv, kReclaim) +
                              ", and a delete is only ever sent once Retain is confirmed)");
  }
  // The name is taken until the real delete, so the new PV is validated under a temporary name.
  json target = StripServerFields(plan.target_pv);
  target["spec"]["persistentVolumeReclaimPolicy"] = "Retain";
  target["metadata"]["name"] = pv_name_.substr(0, 200) + "-flexcsi-dry-run";
  if (!act("create CSI PV " + pv_name_ + " (driver " + plan.csi_driver +
               ", validated under a temporary name)",
           client_.Create(Pvs(), target, dry))) {
    return result_;
  }
  result_.outcome = Outcome::kWouldMove;
  return result_;
}

}  // namespace flexcsi::migrate
