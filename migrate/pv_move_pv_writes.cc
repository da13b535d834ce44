// The PV writes, each re-entrant: read-modify-write with a re-read on 409, the delete guarded by
// a fresh Retain and a uid precondition, and the create of the PV under its old name.
#include "migrate/pv_move_run.h"

#include <set>

namespace flexcsi::migrate {

namespace {

constexpr const char* kPvProtection = "kubernetes.io/pv-protection";
constexpr const char* kProvisionerFinalizer = "external-provisioner.volume.kubernetes.io/finalizer";

bool HasFinalizer(const json& obj, const std::string& f) {
  const json::json_pointer p("/metadata/finalizers");
  if (!obj.contains(p) || !obj.at(p).is_array()) return false;
  for (const auto& x : obj.at(p)) {
    if (x.is_string() && x.get<std::string>() == f) return true;
  }
  return false;
}

// The finalizers of a PV being deleted by a move that nobody needs any more (DeletePvSafely).
std::set<std::string> RemovableFinalizers(const json& pv) {
  std::set<std::string> gone;
  if (Str(pv, kPhase) == "Bound") return gone;
  if (HasFinalizer(pv, kPvProtection)) gone.insert(kPvProtection);
  if (Str(pv, kReclaim) == "Retain" && HasFinalizer(pv, kProvisionerFinalizer)) {
    gone.insert(kProvisionerFinalizer);
  }
  return gone;
}

std::string Join(const std::set<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

bool Terminating(const json& obj) {
  return obj.contains("metadata") && obj["metadata"].contains("deletionTimestamp") &&
         !obj["metadata"]["deletionTimestamp"].is_null();
}

}  // namespace

Status PvMover::Run::EditPv(const std::function<StatusOr<bool>(json& pv)>& edit,
                            const std::string& what) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    // The watched copy first (the update carries its resourceVersion, so a copy the server has
    // moved past gets 409), the server's after a conflict.
    auto live = attempt == 0 ? ReadPv() : GetPv();
    if (!live.ok()) return live.status();
    if (!*live)
      return NotFound("PV " + pv_name_ + " does not exist (while trying to " + what + ")");
    json pv = std::move(**live);
    auto change = edit(pv);
    if (!change.ok()) return change.status();
    if (!*change) return Status::Ok();
    MaybeHoldForTest();
    auto updated = client_.Update(Pvs().Named(pv_name_), pv);
    if (updated.ok()) {
      SawPv(*updated);
      return Status::Ok();
    }
    if (!kube::IsConflict(updated.status())) {
      return updated.status().WithContext(what + " on PV " + pv_name_);
    }
    Progress("conflict while trying to " + what + "; re-reading");
  }
  return Aborted("PV " + pv_name_ + " kept changing under us (20 conflicts) while trying to " +
                 what);
}

Status PvMover::Run::DeletePvSafely(PvKind expected) {
  return Wait(
      [&]() -> StatusOr<bool> {
        auto live = ReadPv();
        if (!live.ok()) return live.status();
        if (!*live) return true;
        const PvKind kind = Classify(*live);
        if (kind != expected) {
          return FailedPrecondition(std::string("PV ") + pv_name_ + " is now " + KindName(kind) +
                                    ", not " + KindName(expected) + "; not deleting it");
        }
        const json& pv = **live;
        if (!Terminating(pv)) {
          // The safety rule of the whole tool: storage stays because Retain is seen right here,
          // in the version the DELETE is conditioned on.
          const std::string policy = Str(pv, kReclaim);
          if (policy != "Retain") {
            return FailedPrecondition("refusing to delete PV " + pv_name_ +
                                      ": its reclaim policy is " + policy + ", not Retain");
          }
          if (Str(pv, kPhase) == "Bound") return false;  // wait for the release to show
          kube::DeleteOptions opts;
          opts.precondition_uid = UidOf(pv);
          opts.precondition_resource_version = Str(pv, "/metadata/resourceVersion"_json_pointer);
          auto deleted = client_.Delete(Pvs().Named(pv_name_), opts);
          if (!deleted.ok() && !kube::IsNotFound(deleted.status()) &&
              !kube::IsConflict(deleted.status())) {
            return deleted.status().WithContext("delete PV " + pv_name_);
          }
          // Kept by finalizers: the answer is the PV, now Terminating.
          if (deleted.ok() && deleted->value("kind", "") == "PersistentVolume") SawPv(*deleted);
          return false;  // re-read: gone, terminating, or changed (409)
        }
        // Terminating. The finalizers left that guard nothing here go, as their controllers
        // would remove them: pv-protection holds a Bound PV only, and this one is not Bound;
        // external-provisioner's finalizer holds the PV until the provisioner has deleted the
        // volume, which it never does for a Retain PV (csi-provisioner v3.4.1 removes it from
        // one; v1.2.2, the 1.14 era's, does not know it, nor does a stopped flexcsi-controller
        // remove it, and the PV would stay Terminating for good).
        if (!RemovableFinalizers(pv).empty()) {
          const std::string uid = UidOf(pv);
          Status s = EditPv(
              [&](json& p) -> StatusOr<bool> {
                const std::set<std::string> gone = RemovableFinalizers(p);
                if (UidOf(p) != uid || gone.empty()) return false;
                json kept = json::array();
                for (const auto& f : p["metadata"]["finalizers"]) {
                  if (!f.is_string() || gone.count(f.get<std::string>()) == 0) kept.push_back(f);
                }
                p["metadata"]["finalizers"] = kept;
                return true;
              },
              "remove the " + Join(RemovableFinalizers(pv)) + " finalizer");
          if (!s.ok() && !kube::IsNotFound(s)) return s;
        }
        return false;
      },
      "PV " + pv_name_ + " to be deleted");
}

Status PvMover::Run::CreatePv(const json& object, PvKind expected) {
  bool from_server = false;  // after AlreadyExists: the watched copy may not show it yet
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto live = from_server ? GetPv() : ReadPv();
    if (!live.ok()) return live.status();
    const PvKind kind = Classify(*live);
    if (kind == expected) {
      if (expected == PvKind::kTarget && rec_.new_pv_uid != UidOf(**live)) {
        rec_.new_pv_uid = UidOf(**live);
        FLEXCSI_RETURN_IF_ERROR(m_->journal_->Put(rec_));
      }
      return Status::Ok();
    }
    if (kind != PvKind::kAbsent) {
      return FailedPrecondition(std::string("PV ") + pv_name_ + " exists and is " + KindName(kind) +
                                "; not creating");
    }
    auto claim = GetClaim();
    if (!claim.ok()) return claim.status();
    json pv = StripServerFields(object);
    pv["spec"]["persistentVolumeReclaimPolicy"] = "Retain";
    pv["spec"]["claimRef"]["uid"] = UidOf(*claim);
    pv["spec"]["claimRef"]["namespace"] = ClaimNs();
    pv["spec"]["claimRef"]["name"] = ClaimName();
    auto created = client_.Create(Pvs(), pv);
    if (created.ok()) {
      SawPv(*created);
      continue;  // re-read: records the uid
    }
    if (!kube::IsAlreadyExists(created.status())) {
      return created.status().WithContext("create PV " + pv_name_);
    }
    from_server = true;
  }
  return Aborted("PV " + pv_name_ + " kept appearing and disappearing while creating it");
}

}  // namespace flexcsi::migrate
