#include "migrate/pv_mover.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "migrate/workload_scaler.h"

namespace flexcsi::migrate {

using kube::ResourcePath;
using nlohmann::json;

namespace {

constexpr const char* kPvProtection = "kubernetes.io/pv-protection";
const json::json_pointer kReclaim("/spec/persistentVolumeReclaimPolicy");
const json::json_pointer kClaimRefUid("/spec/claimRef/uid");
const json::json_pointer kPhase("/status/phase");

ResourcePath Pvs() { return ResourcePath::Core("persistentvolumes"); }

// A random RFC 4122 version-4 uid: the claimRef uid that releases a PV. No claim will ever have
// it, which is exactly what makes the PV controller treat the PV's claim as gone.
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

bool HasFinalizer(const json& obj, const std::string& f) {
  const json::json_pointer p("/metadata/finalizers");
  if (!obj.contains(p) || !obj.at(p).is_array()) return false;
  for (const auto& x : obj.at(p)) {
    if (x.is_string() && x.get<std::string>() == f) return true;
  }
  return false;
}

bool Terminating(const json& obj) {
  return obj.contains("metadata") && obj["metadata"].contains("deletionTimestamp") &&
         !obj["metadata"]["deletionTimestamp"].is_null();
}

// Identifiers under which nodes may list the volume in volumesAttached / volumesInUse: unique
// volume names are "<plugin>/<volume name>" (kubernetes.io/csi/<driver>^<handle> for CSI),
// where the volume name is the source's own id, or the PV name for FlexVolume drivers without
// getvolumename.
std::vector<std::string> VolumeIds(const json& pv, const json& target) {
  std::vector<std::string> ids = {NameOf(pv)};
  const std::string source = MigratableSourceOf(pv.value("spec", json::object()));
  if (!source.empty()) {
    const json& s = pv["spec"][source];
    for (const char* f :
         {"volumeID", "pdName", "diskName", "diskURI", "shareName", "volumePath", "image"}) {
      if (s.contains(f) && s[f].is_string() && !s[f].get<std::string>().empty()) {
        ids.push_back(s[f].get<std::string>());
      }
    }
    if (source == "rbd" && s.contains("pool") && s.contains("image") && s["pool"].is_string() &&
        s["image"].is_string()) {
      ids.push_back(s["pool"].get<std::string>() + ":" + s["image"].get<std::string>());
    }
  }
  const std::string handle = Str(target, "/spec/csi/volumeHandle"_json_pointer);
  if (!handle.empty()) ids.push_back(handle);
  return ids;
}

bool NameMatches(const std::string& unique_name, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (unique_name.size() <= id.size()) continue;
    if (unique_name.compare(unique_name.size() - id.size(), id.size(), id) != 0) continue;
    const char sep = unique_name[unique_name.size() - id.size() - 1];
    if (sep == '/' || sep == '^') return true;
  }
  return false;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kMoved:
      return "moved";
    case Outcome::kRolledBack:
      return "rolled-back";
    case Outcome::kWouldMove:
      return "would-move";
    case Outcome::kRefused:
      return "refused";
    case Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

const std::vector<std::string>& ApplySteps() {
  static const std::vector<std::string> kSteps = {
      "checked",      "scaling-down", "retaining",        "releasing",          "deleting-old",
      "creating-new", "binding",      "restoring-policy", "restoring-replicas", "done"};
  return kSteps;
}

const std::vector<std::string>& RollbackSteps() {
  static const std::vector<std::string> kSteps = {
      "rb-scaling-down",     "rb-retaining",          "rb-releasing",
      "rb-deleting-new",     "rb-creating-original",  "rb-binding",
      "rb-restoring-policy", "rb-restoring-replicas", "rolled-back"};
  return kSteps;
}

void MaybeCrashForTest(const std::string& step, bool after_action) {
  const char* env = std::getenv("FLEXCSI_MIGRATE_CRASH_AFTER");
  if (env == nullptr) return;
  if (std::string(env) == (after_action ? step + "+" : step)) ::kill(::getpid(), SIGKILL);
}

void MaybeHoldForTest() {
  static std::atomic<bool> held{false};  // the first of any worker thread holds
  const char* dir = std::getenv("FLEXCSI_MIGRATE_HOLD_DIR");
  if (dir == nullptr || held.exchange(true)) return;
  const std::string base(dir);
  std::ofstream(base + "/held").put('\n');
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::access((base + "/go").c_str(), F_OK) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

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
  StatusOr<std::optional<json>> GetPv() {
    auto pv = client_.Get(Pvs().Named(pv_name_));
    if (!pv.ok()) {
      if (kube::IsNotFound(pv.status())) return std::optional<json>();
      return pv.status().WithContext("read PV " + pv_name_);
    }
    return std::optional<json>(std::move(*pv));
  }
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
  StatusOr<json> GetClaim() {
    auto c =
        client_.Get(ResourcePath::Core("persistentvolumeclaims", ClaimNs()).Named(ClaimName()));
    if (!c.ok()) return c.status().WithContext("read claim " + rec_.ClaimKey());
    if (UidOf(*c) != UidOf(rec_.original_pvc)) {
      return FailedPrecondition("claim " + rec_.ClaimKey() + " was deleted and re-created (uid " +
                                UidOf(*c) + ", journaled " + UidOf(rec_.original_pvc) +
                                "); refusing to bind a PV to a different claim");
    }
    return c;
  }
  // Fresh objects around one PV, planned with the same code as `migrate plan`.
  StatusOr<VolumePlan> FreshPlan(const json& pv);
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
  Status Wait(const std::function<StatusOr<bool>()>& done, const std::string& what);

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
};

StatusOr<VolumePlan> PvMover::Run::FreshPlan(const json& pv) {
  ClusterObjects o;
  o.pvs.push_back(pv);
  const std::string ns = Str(pv, "/spec/claimRef/namespace"_json_pointer);
  const std::string name = Str(pv, "/spec/claimRef/name"_json_pointer);
  if (!name.empty()) {
    auto claim = client_.Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(name));
    if (claim.ok()) {
      o.pvcs.push_back(std::move(*claim));
    } else if (!kube::IsNotFound(claim.status())) {
      return claim.status().WithContext("read claim " + ns + "/" + name);
    }
    for (auto [path, out] :
         {std::pair{ResourcePath::Core("pods", ns), &o.pods},
          std::pair{ResourcePath::Group("apps/v1", "replicasets", ns), &o.replicasets}}) {
      auto list = client_.List(path);
      if (!list.ok()) return list.status().WithContext("list " + path.resource + " in " + ns);
      for (auto& item : (*list)["items"]) out->push_back(std::move(item));
    }
    FLEXCSI_RETURN_IF_ERROR(ListHorizontalPodAutoscalers(client_, ns, &o.hpas));
  }
  for (auto [path, out] :
       {std::pair{ResourcePath::Group("storage.k8s.io/v1", "csidrivers"), &o.csidrivers},
        std::pair{ResourcePath::Group("storage.k8s.io/v1", "csinodes"), &o.csinodes}}) {
    auto list = client_.List(path);
    if (!list.ok()) return list.status().WithContext("list " + path.resource);
    for (auto& item : (*list)["items"]) out->push_back(std::move(item));
  }
  ClusterIndex index(o);
  return PlanVolume(o.pvs.front(), index, *m_->translator_);
}

StatusOr<std::vector<json>> PvMover::Run::PodsHoldingClaim() {
  auto list = client_.List(ResourcePath::Core("pods", ClaimNs()));
  if (!list.ok()) return list.status().WithContext("list pods in " + ClaimNs());
  std::vector<json> out;
  for (auto& pod : (*list)["items"]) {
    if (PodIsTerminated(pod)) continue;
    const json::json_pointer vp("/spec/volumes");
    if (!pod.contains(vp) || !pod.at(vp).is_array()) continue;
    for (const auto& v : pod.at(vp)) {
      if (Str(v, "/persistentVolumeClaim/claimName"_json_pointer) == ClaimName()) {
        out.push_back(pod);
        break;
      }
    }
  }
  return out;
}

StatusOr<bool> PvMover::Run::VolumeStillAttached() {
  auto nodes = client_.List(ResourcePath::Core("nodes"));
  if (!nodes.ok()) return nodes.status().WithContext("list nodes");
  const auto ids = VolumeIds(rec_.original_pv, rec_.target_pv);
  for (const auto& node : (*nodes)["items"]) {
    const json& status = node.value("status", json::object());
    if (status.contains("volumesAttached") && status["volumesAttached"].is_array()) {
      for (const auto& a : status["volumesAttached"]) {
        if (a.is_object() && NameMatches(a.value("name", ""), ids)) return true;
      }
    }
    if (status.contains("volumesInUse") && status["volumesInUse"].is_array()) {
      for (const auto& u : status["volumesInUse"]) {
        if (u.is_string() && NameMatches(u.get<std::string>(), ids)) return true;
      }
    }
  }
  return false;
}

// csi-attacher's record of an attachment. Its external-attacher/<driver> finalizer on a CSI PV
// is removed by csi-attacher only once the PV is being deleted and no VolumeAttachment names it,
// so "no VolumeAttachment" is the condition to wait for, not "no finalizer".
StatusOr<bool> PvMover::Run::VolumeAttachmentRemains() {
  auto list = client_.List(ResourcePath::Group("storage.k8s.io/v1", "volumeattachments"));
  if (!list.ok()) {
    if (kube::IsNotFound(list.status())) return false;  // not served: nothing is attached by it
    return list.status().WithContext("list volumeattachments");
  }
  for (const auto& va : (*list)["items"]) {
    if (Str(va, "/spec/source/persistentVolumeName"_json_pointer) == pv_name_) return true;
  }
  return false;
}

bool PvMover::Run::Recorded(const WorkloadRef& owner) const {
  for (const auto& w : rec_.workloads) {
    if (w.kind == owner.kind && w.namespace_ == owner.namespace_ && w.name == owner.name) {
      return true;
    }
  }
  return false;
}

std::vector<PodRef> PvMover::Run::PodsNotOurs(const VolumePlan& plan) const {
  std::vector<PodRef> out;
  for (const auto& pod : plan.pods) {
    if (pod.owner.kind.empty() || !Recorded(pod.owner)) out.push_back(pod);
  }
  return out;
}

// Polls `done` from poll_interval, growing by half each round up to max_poll_interval: what
// settles in a moment (a release, a delete) is seen at once, and what waits on the PV
// controller's periodic claim sync (binding: up to --pvclaimbinder-sync-period, 15 s) costs a
// few reads a second instead of five, which matters with many PVs moving at once.
Status PvMover::Run::Wait(const std::function<StatusOr<bool>()>& done, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + m_->options_.wait_timeout;
  auto interval = m_->options_.poll_interval;
  while (true) {
    auto d = done();
    if (!d.ok()) return d.status();
    if (*d) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceeded(
          "timed out after " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(m_->options_.wait_timeout).count()) +
          "s waiting for " + what);
    }
    std::this_thread::sleep_for(interval);
    interval = std::min(m_->options_.max_poll_interval, interval + interval / 2);
  }
}

Status PvMover::Run::EditPv(const std::function<StatusOr<bool>(json& pv)>& edit,
                            const std::string& what) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto live = GetPv();
    if (!live.ok()) return live.status();
    if (!*live)
      return NotFound("PV " + pv_name_ + " does not exist (while trying to " + what + ")");
    json pv = std::move(**live);
    auto change = edit(pv);
    if (!change.ok()) return change.status();
    if (!*change) return Status::Ok();
    MaybeHoldForTest();
    auto updated = client_.Update(Pvs().Named(pv_name_), pv);
    if (updated.ok()) return Status::Ok();
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
        auto live = GetPv();
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
          return false;  // re-read: gone, terminating, or changed (409)
        }
        // Terminating. pv-protection holds a Bound PV only; this one is not Bound, so the
        // condition is false and the finalizer may go (the controller would remove it too).
        if (HasFinalizer(pv, kPvProtection) && Str(pv, kPhase) != "Bound") {
          const std::string uid = UidOf(pv);
          Status s = EditPv(
              [&](json& p) -> StatusOr<bool> {
                if (UidOf(p) != uid || !HasFinalizer(p, kPvProtection) ||
                    Str(p, kPhase) == "Bound") {
                  return false;
                }
                json kept = json::array();
                for (const auto& f : p["metadata"]["finalizers"]) {
                  if (f != kPvProtection) kept.push_back(f);
                }
                p["metadata"]["finalizers"] = kept;
                return true;
              },
              "remove the pv-protection finalizer");
          if (!s.ok() && !kube::IsNotFound(s)) return s;
        }
        return false;
      },
      "PV " + pv_name_ + " to be deleted");
}

Status PvMover::Run::CreatePv(const json& object, PvKind expected) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto live = GetPv();
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
    if (created.ok()) continue;  // re-read: records the uid
    if (!kube::IsAlreadyExists(created.status())) {
      return created.status().WithContext("create PV " + pv_name_);
    }
  }
  return Aborted("PV " + pv_name_ + " kept appearing and disappearing while creating it");
}

// Records the replicas of every owner of a pod holding the claim, once: an owner already in the
// journal keeps the replicas read first (it may be at 0 by now, scaled down by this migration).
Status PvMover::Run::RecordWorkloads() {
  if (rec_.direction == "apply") {
    auto live = GetPv();
    if (!live.ok()) return live.status();
    if (Classify(*live) != PvKind::kOriginal) {
      return FailedPrecondition("PV " + pv_name_ + " changed before scale-down");
    }
  }
  auto plan = FreshPlan(rec_.original_pv);
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

Status PvMover::Run::WaitQuiesced() {
  FLEXCSI_RETURN_IF_ERROR(Wait(
      [&]() -> StatusOr<bool> {
        auto pods = PodsHoldingClaim();
        if (!pods.ok()) return pods.status();
        return pods->empty();
      },
      "the pods using claim " + rec_.ClaimKey() + " to be gone"));
  FLEXCSI_RETURN_IF_ERROR(Wait(
      [&]() -> StatusOr<bool> {
        auto attached = VolumeStillAttached();
        if (!attached.ok()) return attached.status();
        return !*attached;
      },
      "volume " + pv_name_ + " to be detached from every node (node status.volumesAttached)"));
  return Wait(
      [&]() -> StatusOr<bool> {
        auto remains = VolumeAttachmentRemains();
        if (!remains.ok()) return remains.status();
        return !*remains;
      },
      "the VolumeAttachments of PV " + pv_name_ + " to be gone (csi-attacher detaching it)");
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

Status PvMover::Run::WaitNotBound() {
  return Wait(
      [&]() -> StatusOr<bool> {
        auto live = GetPv();
        if (!live.ok()) return live.status();
        return !*live || Str(**live, kPhase) != "Bound";
      },
      "PV " + pv_name_ + " to be released by the PV controller");
}

Status PvMover::Run::WaitBound(PvKind expected) {
  return Wait(
      [&]() -> StatusOr<bool> {
        auto claim = GetClaim();
        if (!claim.ok()) return claim.status();
        auto live = GetPv();
        if (!live.ok()) return live.status();
        if (Classify(*live) != expected) {
          return FailedPrecondition(std::string("PV ") + pv_name_ + " is " +
                                    KindName(Classify(*live)) + " while waiting for binding");
        }
        return Str(*claim, kPhase) == "Bound" &&
               Str(*claim, "/spec/volumeName"_json_pointer) == pv_name_ &&
               Str(**live, kPhase) == "Bound" && Str(**live, kClaimRefUid) == UidOf(*claim);
      },
      "claim " + rec_.ClaimKey() + " to be Bound to PV " + pv_name_);
}

Status PvMover::Run::RunSteps(const std::vector<std::string>& steps,
                              const std::function<Status(const std::string&)>& take) {
  size_t start = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == rec_.step) start = i;
  }
  for (size_t i = start; i < steps.size(); ++i) {
    if (rec_.step != steps[i]) {
      FLEXCSI_RETURN_IF_ERROR(Announce(steps[i]));
    } else {
      // Announced already: by this run just before (checked, rollback's first step) or by the
      // run that died in it.
      if (resumed_) Progress(steps[i] + " (resumed)");
      result_.step = steps[i];
    }
    Status s = take(steps[i]);
    if (!s.ok()) return s.WithContext(steps[i]);
    MaybeCrashForTest(steps[i], true);
  }
  return Status::Ok();
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
    // Confirmed by a re-read, not by the update's answer.
    auto live = GetPv();
    if (!live.ok()) return live.status();
    if (!*live || Str(**live, kReclaim) != policy) {
      return Internal("PV " + pv_name_ + " does not show reclaim policy " + policy +
                      " after it was set");
    }
    return Status::Ok();
  };

  if (step == "checked") return Status::Ok();
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
    auto live = GetPv();
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

Status PvMover::Run::RollbackStep(const std::string& step) {
  auto live = GetPv();
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
    auto again = GetPv();
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
  if (step == "rb-restoring-policy") {
    return kind == PvKind::kOriginal ? set_policy(PvKind::kOriginal, rec_.original_reclaim_policy)
                                     : Status::Ok();
  }
  if (step == "rb-restoring-replicas") return RestoreReplicas();
  if (step == "rolled-back") return Status::Ok();
  return Internal("unknown step " + step);
}

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
    auto plan = FreshPlan(pv);
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
    auto claim = client_.Get(ResourcePath::Core("persistentvolumeclaims", plan->claim_namespace)
                                 .Named(plan->claim_name));
    if (!claim.ok()) return Fail(claim.status());
    rec_.original_pvc = *claim;
    rec_.target_pv = plan->target_pv;
    rec_.original_reclaim_policy = plan->reclaim_policy.empty() ? "Retain" : plan->reclaim_policy;
    rec_.release_uid = NewReleaseUid();
    if (group != nullptr) JoinGroup(*group);
    Status s = Announce("checked");
    if (!s.ok()) return Fail(s);
  }
  group_scales_ = !rec_.workload_group.empty();
  Status s = RunSteps(ApplySteps(), [this](const std::string& step) { return ApplyStep(step); });
  if (!s.ok()) return Fail(s);
  rec_.state = RecordState::kMoved;
  s = m_->journal_->Put(rec_);
  if (!s.ok()) return Fail(s);
  result_.outcome = Outcome::kMoved;
  for (const auto& n : notes_) result_.message += (result_.message.empty() ? "" : "; ") + n;
  return result_;
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
  auto plan = FreshPlan(rec_.original_pv);
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
  Status s =
      RunSteps(RollbackSteps(), [this](const std::string& step) { return RollbackStep(step); });
  if (!s.ok()) return Fail(s);
  rec_.state = RecordState::kRolledBack;
  s = m_->journal_->Put(rec_);
  if (!s.ok()) return Fail(s);
  result_.outcome = Outcome::kRolledBack;
  for (const auto& n : notes_) result_.message += (result_.message.empty() ? "" : "; ") + n;
  return result_;
}

PvMover::PvMover(kube::KubeClient* client, MigrationJournal* journal,
                 const translator::Translator* translator, MoveOptions options)
    : client_(client), journal_(journal), translator_(translator), options_(std::move(options)) {}

MoveResult PvMover::Apply(const std::string& pv_name, const WorkloadGroupRecord* group) {
  return Run(this, pv_name).Apply(group);
}
MoveResult PvMover::Rollback(const std::string& pv_name, const WorkloadGroupRecord* group) {
  return Run(this, pv_name).Rollback(group);
}

}  // namespace flexcsi::migrate
