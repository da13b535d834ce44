// What the steps read and wait for: a fresh plan of the PV, the pods holding its claim, its
// attachments (the quiet guard of every claimRef move) and binding.
#include "migrate/pv_move_run.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace flexcsi::migrate {

namespace {

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
  FLEXCSI_RETURN_IF_ERROR(ListDriverRegistrations(client_, &o));
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
        const bool pv_bound = Str(**live, kPhase) == "Bound" &&
                              Str(**live, kClaimRefUid) == UidOf(*claim) &&
                              Str(*claim, "/spec/volumeName"_json_pointer) == pv_name_;
        if (pv_bound && Str(*claim, kPhase) == "Bound") return true;
        if (pv_bound) RequestClaimSync(*claim);
        return false;
      },
      "claim " + rec_.ClaimKey() + " to be Bound to PV " + pv_name_);
}

}  // namespace flexcsi::migrate
