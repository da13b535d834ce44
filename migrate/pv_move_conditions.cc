// What the steps read and wait for: the PV and the claim (from the server or the watched caches),
// a fresh plan of the PV, the pods holding its claim, its attachments (the quiet guard of every
// claimRef move) and binding.
#include "migrate/pv_move_run.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "migrate/watched_objects.h"

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

// How long a read waits for the watched cache to show what this run has seen (its own write's
// event is usually there within milliseconds) before it reads the server instead.
constexpr std::chrono::seconds kCacheCatchUp{2};

void PvMover::Run::Saw(const json& object, std::string* seen) {
  const std::string rv = Str(object, "/metadata/resourceVersion"_json_pointer);
  if (!rv.empty() && (seen->empty() || ResourceVersionAtLeast(rv, *seen))) *seen = rv;
}

bool PvMover::Run::AwaitCache(const std::function<bool()>& cached,
                              const std::function<bool()>& watching) {
  const WatchedObjects* watched = m_->watched_;
  if (watched == nullptr) return false;
  const auto until = std::chrono::steady_clock::now() + kCacheCatchUp;
  while (watching()) {
    const uint64_t changes = watched->Changes();
    if (cached()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return false;
    // Bookmarks move the cache's version without an event: look again every 100 ms.
    watched->AwaitChange(changes, std::min(until, now + std::chrono::milliseconds(100)));
  }
  return false;
}

StatusOr<std::optional<json>> PvMover::Run::GetPv() {
  ++server_reads_;
  auto pv = client_.Get(Pvs().Named(pv_name_));
  if (!pv.ok()) {
    if (kube::IsNotFound(pv.status())) return std::optional<json>();
    return pv.status().WithContext("read PV " + pv_name_);
  }
  SawPv(*pv);
  return std::optional<json>(std::move(*pv));
}

StatusOr<std::optional<json>> PvMover::Run::ReadPv() {
  const WatchedObjects* watched = m_->watched_;
  std::optional<std::optional<json>> cached;
  if (AwaitCache([&] { return (cached = watched->Pv(pv_name_, pv_seen_rv_)).has_value(); },
                 [&] { return watched->PvsWatched(); })) {
    return std::move(*cached);
  }
  return GetPv();
}

StatusOr<json> PvMover::Run::ReadClaimAt(const std::string& ns, const std::string& name,
                                         bool fresh) {
  const WatchedObjects* watched = m_->watched_;
  std::optional<std::optional<json>> cached;
  if (!fresh &&
      AwaitCache([&] { return (cached = watched->Claim(ns, name, claim_seen_rv_)).has_value(); },
                 [&] { return watched->ClaimsWatched(ns); })) {
    if (!*cached) {
      return NotFound("NotFound: persistentvolumeclaims \"" + name + "\" not found");
    }
    return std::move(**cached);
  }
  ++server_reads_;
  auto claim = client_.Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(name));
  if (claim.ok()) SawClaim(*claim);
  return claim;
}

StatusOr<VolumePlan> PvMover::Run::FreshPlan(const json& pv, bool fresh_claim,
                                             std::optional<json>* claim_read) {
  const WatchedObjects* watched = m_->watched_;
  ClusterObjects o;
  o.pvs.push_back(pv);
  const std::string ns = Str(pv, "/spec/claimRef/namespace"_json_pointer);
  const std::string name = Str(pv, "/spec/claimRef/name"_json_pointer);
  auto list_into = [&](const ResourcePath& path, std::vector<json>* out) -> Status {
    ++server_reads_;
    auto list = client_.List(path);
    if (!list.ok()) return list.status().WithContext("list " + path.resource + " in " + ns);
    for (auto& item : (*list)["items"]) out->push_back(std::move(item));
    return Status::Ok();
  };
  if (!name.empty()) {
    auto claim = ReadClaimAt(ns, name, fresh_claim);
    if (claim.ok()) {
      if (claim_read != nullptr) *claim_read = *claim;
      o.pvcs.push_back(std::move(*claim));
    } else if (!kube::IsNotFound(claim.status())) {
      return claim.status().WithContext("read claim " + ns + "/" + name);
    }
    auto pods = watched != nullptr ? watched->PodsOfClaim(ns, name) : std::nullopt;
    if (pods) {
      o.pods = std::move(*pods);
      // The ReplicaSets their owners name: a Deployment's pods belong to it through one.
      bool listed = false;
      for (const auto& pod : o.pods) {
        for (const auto& ref : pod["metadata"].value("ownerReferences", json::array())) {
          if (!ref.is_object() || !ref.value("controller", false) ||
              ref.value("kind", "") != "ReplicaSet" || listed) {
            continue;
          }
          auto rs = watched->ReplicaSet(ns, ref.value("name", ""));
          if (!rs) {
            o.replicasets.clear();
            FLEXCSI_RETURN_IF_ERROR(
                list_into(ResourcePath::Group("apps/v1", "replicasets", ns), &o.replicasets));
            listed = true;
          } else if (*rs) {
            o.replicasets.push_back(std::move(**rs));
          }
        }
      }
    } else {
      FLEXCSI_RETURN_IF_ERROR(list_into(ResourcePath::Core("pods", ns), &o.pods));
      FLEXCSI_RETURN_IF_ERROR(
          list_into(ResourcePath::Group("apps/v1", "replicasets", ns), &o.replicasets));
    }
    if (auto hpas = watched != nullptr ? watched->Hpas(ns) : std::nullopt) {
      o.hpas = std::move(*hpas);
    } else {
      ++server_reads_;
      FLEXCSI_RETURN_IF_ERROR(ListHorizontalPodAutoscalers(client_, ns, &o.hpas));
    }
  }
  auto csidrivers = watched != nullptr ? watched->CsiDrivers() : std::nullopt;
  auto node_drivers = watched != nullptr ? watched->NodeDrivers() : std::nullopt;
  if (csidrivers && node_drivers) {
    o.csidrivers = std::move(*csidrivers);
    o.node_drivers = std::move(*node_drivers);
  } else {
    ++server_reads_;
    FLEXCSI_RETURN_IF_ERROR(ListDriverRegistrations(client_, &o));
  }
  ClusterIndex index(o);
  return PlanVolume(o.pvs.front(), index, *m_->translator_);
}

StatusOr<std::vector<json>> PvMover::Run::PodsHoldingClaim() {
  std::vector<json> pods;
  if (auto cached = m_->watched_ != nullptr ? m_->watched_->PodsOfClaim(ClaimNs(), ClaimName())
                                            : std::nullopt) {
    pods = std::move(*cached);
  } else {
    ++server_reads_;
    auto list = client_.List(ResourcePath::Core("pods", ClaimNs()));
    if (!list.ok()) return list.status().WithContext("list pods in " + ClaimNs());
    for (auto& pod : (*list)["items"]) pods.push_back(std::move(pod));
  }
  std::vector<json> out;
  for (auto& pod : pods) {
    if (PodIsTerminated(pod)) continue;
    const json::json_pointer vp("/spec/volumes");
    if (!pod.contains(vp) || !pod.at(vp).is_array()) continue;
    for (const auto& v : pod.at(vp)) {
      if (Str(v, "/persistentVolumeClaim/claimName"_json_pointer) == ClaimName()) {
        out.push_back(std::move(pod));
        break;
      }
    }
  }
  return out;
}

StatusOr<bool> PvMover::Run::VolumeStillAttached() {
  const auto ids = VolumeIds(rec_.original_pv, rec_.target_pv);
  if (m_->watched_ != nullptr) {
    auto listed = m_->watched_->AnyNodeListsVolume(
        [&](const std::string& unique_name) { return NameMatches(unique_name, ids); });
    if (listed) return *listed;
  }
  ++server_reads_;
  auto nodes = client_.List(ResourcePath::Core("nodes"));
  if (!nodes.ok()) return nodes.status().WithContext("list nodes");
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
  if (m_->watched_ != nullptr) {
    if (auto named = m_->watched_->VolumeAttachmentNames(pv_name_)) return *named;
  }
  ++server_reads_;
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

// Checks `done` again at each change of the watched caches when its last check read them only
// (the change it waits for arrives as an event: a release, a delete, a binding is seen at once,
// without a request). When it read the server (a kind not watched), polls from poll_interval,
// growing by half each round up to max_poll_interval, so many PVs waiting at once cost a few
// reads a second each, not five.
Status PvMover::Run::Wait(const std::function<StatusOr<bool>()>& done, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + m_->options_.wait_timeout;
  auto interval = m_->options_.poll_interval;
  const WatchedObjects* watched = m_->watched_;
  while (true) {
    const uint64_t reads = server_reads_;
    const uint64_t changes = watched != nullptr ? watched->Changes() : 0;
    auto d = done();
    if (!d.ok()) return d.status();
    if (*d) return Status::Ok();
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return DeadlineExceeded(
          "timed out after " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(m_->options_.wait_timeout).count()) +
          "s waiting for " + what);
    }
    if (watched != nullptr && server_reads_ == reads) {
      // Also looked at again after a while without an event: a safety net, not the mechanism.
      watched->AwaitChange(changes, std::min(deadline, now + m_->options_.max_poll_interval));
      interval = m_->options_.poll_interval;
      continue;
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
        auto live = ReadPv();
        if (!live.ok()) return live.status();
        return !*live || Str(**live, kPhase) != "Bound";
      },
      "PV " + pv_name_ + " to be released by the PV controller");
}

Status PvMover::Run::WaitBound(PvKind expected) {
  return Wait(
      [&]() -> StatusOr<bool> {
        auto claim = ReadClaim();
        if (!claim.ok()) return claim.status();
        auto live = ReadPv();
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
