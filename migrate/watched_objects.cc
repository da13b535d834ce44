#include "migrate/watched_objects.h"

#include <cctype>
#include <initializer_list>

#include "kube/discovery.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

constexpr const char* kNodeIdAnnotation = "csi.volume.kubernetes.io/nodeid";

// The named members of `from` (those present), moved into a new object.
json Members(json& from, std::initializer_list<const char*> names) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* name : names) {
    auto it = from.find(name);
    if (it != from.end()) out[name] = std::move(*it);
  }
  return out;
}

json Metadata(json& object, std::initializer_list<const char*> more = {}) {
  if (!object.is_object()) return json::object();
  json meta = Members(object["metadata"], {"name", "namespace", "resourceVersion"});
  for (const char* name : more) {
    auto it = object["metadata"].find(name);
    if (it != object["metadata"].end()) meta[name] = std::move(*it);
  }
  return meta;
}

std::string KeyOf(const json& view) {
  const json& meta = view.is_object() ? view.value("metadata", json::object()) : json::object();
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

std::vector<std::string> ClaimsOfPodView(const json& pod) {
  std::vector<std::string> out;
  const json::json_pointer volumes("/spec/volumes");
  if (!pod.contains(volumes) || !pod.at(volumes).is_array()) return out;
  const std::string ns = pod["metadata"].value("namespace", "");
  for (const auto& v : pod.at(volumes)) {
    const json::json_pointer claim("/persistentVolumeClaim/claimName");
    if (v.is_object() && v.contains(claim) && v.at(claim).is_string()) {
      out.push_back(ns + "/" + v.at(claim).get<std::string>());
    }
  }
  return out;
}

std::set<std::string> DriversOfCsiNodeView(const json& csinode) {
  std::set<std::string> out;
  const json::json_pointer drivers("/spec/drivers");
  if (!csinode.contains(drivers) || !csinode.at(drivers).is_array()) return out;
  for (const auto& d : csinode.at(drivers)) {
    if (d.is_object() && d.contains("name") && d["name"].is_string()) {
      out.insert(d["name"].get<std::string>());
    }
  }
  return out;
}

std::set<std::string> DriversOfNodeView(const json& node) {
  std::set<std::string> out;
  const json::json_pointer ptr("/metadata/annotations/csi.volume.kubernetes.io~1nodeid");
  if (!node.contains(ptr) || !node.at(ptr).is_string()) return out;
  const json by_driver = json::parse(node.at(ptr).get<std::string>(), nullptr, false);
  if (!by_driver.is_object()) return out;
  for (const auto& entry : by_driver.items()) out.insert(entry.key());
  return out;
}

std::vector<std::string> VolumesOfNodeView(const json& node) {
  std::vector<std::string> out;
  const json& status = node.value("status", json::object());
  if (status.contains("volumesAttached") && status["volumesAttached"].is_array()) {
    for (const auto& a : status["volumesAttached"]) {
      if (a.is_object() && a.contains("name") && a["name"].is_string()) {
        out.push_back(a["name"].get<std::string>());
      }
    }
  }
  if (status.contains("volumesInUse") && status["volumesInUse"].is_array()) {
    for (const auto& u : status["volumesInUse"]) {
      if (u.is_string()) out.push_back(u.get<std::string>());
    }
  }
  return out;
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

json PvOrClaimView(json object) {
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    object["metadata"].erase("managedFields");
  }
  return object;
}

json PodView(json pod) {
  if (!pod.is_object()) return {{"metadata", json::object()}};
  json view = {{"metadata", Metadata(pod, {"ownerReferences"})}};
  json spec = json::object();
  json& from = pod["spec"];
  if (from.is_object()) {
    if (from.contains("nodeName")) spec["nodeName"] = std::move(from["nodeName"]);
    json volumes = json::array();
    if (from.contains("volumes") && from["volumes"].is_array()) {
      for (auto& v : from["volumes"]) {
        if (v.is_object() && v.contains("persistentVolumeClaim")) {
          volumes.push_back(Members(v, {"name", "persistentVolumeClaim"}));
        }
      }
    }
    spec["volumes"] = std::move(volumes);
  }
  view["spec"] = std::move(spec);
  view["status"] = Members(pod["status"], {"phase"});
  return view;
}

json ReplicaSetView(json replicaset) {
  return {{"metadata", Metadata(replicaset, {"ownerReferences"})}};
}

json HpaView(json hpa) {
  if (!hpa.is_object()) return {{"metadata", json::object()}};
  json view = {{"metadata", Metadata(hpa)}};
  view["spec"] = Members(hpa["spec"], {"scaleTargetRef", "minReplicas"});
  return view;
}

json CsiDriverView(json csidriver) { return {{"metadata", Metadata(csidriver)}}; }

json CsiNodeView(json csinode) {
  json drivers = json::array();
  for (const auto& name : DriversOfCsiNodeView(csinode)) drivers.push_back({{"name", name}});
  return {{"metadata", Metadata(csinode)}, {"spec", {{"drivers", std::move(drivers)}}}};
}

json NodeView(json node) {
  json meta = Metadata(node);
  const json::json_pointer ptr("/metadata/annotations/csi.volume.kubernetes.io~1nodeid");
  if (node.is_object() && node.contains(ptr)) {
    meta["annotations"] = {{kNodeIdAnnotation, node.at(ptr)}};
  }
  json attached = json::array();
  for (const auto& name : VolumesOfNodeView(node)) attached.push_back({{"name", name}});
  return {{"metadata", std::move(meta)}, {"status", {{"volumesAttached", std::move(attached)}}}};
}

json VolumeAttachmentView(json attachment) {
  json view = {{"metadata", Metadata(attachment)}};
  const json::json_pointer pv("/spec/source/persistentVolumeName");
  if (attachment.is_object() && attachment.contains(pv)) {
    view["spec"] = {{"source", {{"persistentVolumeName", attachment.at(pv)}}}};
  }
  return view;
}

bool ResourceVersionAtLeast(const std::string& rv, const std::string& than) {
  if (than.empty()) return true;
  if (!AllDigits(rv) || !AllDigits(than)) return false;
  return std::stoull(rv) >= std::stoull(than);
}

struct WatchedObjects::Kind {
  std::string label;
  std::unique_ptr<kube::Informer> informer;
};

WatchedObjects::WatchedObjects(kube::KubeClient* client, std::string namespace_)
    : client_(client), namespace_(std::move(namespace_)) {}

WatchedObjects::~WatchedObjects() {
  stop_ = true;
  { std::lock_guard<std::mutex> lock(change_mutex_); }
  change_.notify_all();
  for (auto& t : threads_) t.join();
}

WatchedObjects::Kind* WatchedObjects::Add(const std::string& label, kube::ResourcePath path,
                                          kube::Informer::Transform view) {
  auto kind = std::make_unique<Kind>();
  kind->label = label;
  kind->informer = std::make_unique<kube::Informer>(client_, std::move(path));
  kind->informer->SetTransform(std::move(view));
  kinds_.push_back(std::move(kind));
  return kinds_.back().get();
}

void WatchedObjects::Changed() {
  {
    std::lock_guard<std::mutex> lock(change_mutex_);
    ++changes_;
  }
  change_.notify_all();
}

void WatchedObjects::Start(std::chrono::milliseconds timeout) {
  using kube::ResourcePath;
  // Which versions are served, as the list readers find out by their 404s. A discovery that
  // fails leaves the kind unwatched (its reads go to the server as before).
  auto served = [&](const std::string& gv, const std::string& resource) {
    auto s = kube::ServesResource(*client_, gv, resource);
    return s.ok() ? std::optional<bool>(*s) : std::nullopt;
  };
  pvs_ = Add("persistentvolumes", ResourcePath::Core("persistentvolumes"), PvOrClaimView);
  claims_ = Add("persistentvolumeclaims", ResourcePath::Core("persistentvolumeclaims", namespace_),
                PvOrClaimView);
  pods_ = Add("pods", ResourcePath::Core("pods", namespace_), PodView);
  replicasets_ =
      Add("replicasets", ResourcePath::Group("apps/v1", "replicasets", namespace_), ReplicaSetView);
  nodes_ = Add("nodes", ResourcePath::Core("nodes"), NodeView);
  if (auto v2 = served("autoscaling/v2", "horizontalpodautoscalers"); v2) {
    const std::string gv = *v2 ? "autoscaling/v2" : "autoscaling/v1";
    auto v1 = *v2 ? std::optional<bool>(true) : served(gv, "horizontalpodautoscalers");
    if (v1 && *v1) {
      hpas_ = Add("horizontalpodautoscalers",
                  ResourcePath::Group(gv, "horizontalpodautoscalers", namespace_), HpaView);
    }
    hpas_known_ = v1.has_value();
  }
  if (auto v1 = served("storage.k8s.io/v1", "csidrivers"); v1) {
    const std::string gv = *v1 ? "storage.k8s.io/v1" : "storage.k8s.io/v1beta1";
    auto any = *v1 ? std::optional<bool>(true) : served(gv, "csidrivers");
    if (any && *any) {
      csidrivers_ = Add("csidrivers", ResourcePath::Group(gv, "csidrivers"), CsiDriverView);
    }
    csidrivers_known_ = any.has_value();
  }
  if (auto v1 = served("storage.k8s.io/v1", "csinodes"); v1) {
    if (*v1) {
      csinodes_ =
          Add("csinodes", ResourcePath::Group("storage.k8s.io/v1", "csinodes"), CsiNodeView);
    } else {
      drivers_from_nodes_ = true;
    }
    node_drivers_known_ = true;
  }
  if (auto v1 = served("storage.k8s.io/v1", "volumeattachments"); v1) {
    if (*v1) {
      attachments_ =
          Add("volumeattachments", ResourcePath::Group("storage.k8s.io/v1", "volumeattachments"),
              VolumeAttachmentView);
    }
    attachments_known_ = true;
  }

  // The indexes, kept beside the caches from the same events.
  pods_->informer->OnEvent([this](const std::string& type, const json& pod) {
    const std::string key = KeyOf(pod);
    std::lock_guard<std::mutex> lock(index_mutex_);
    for (const auto& claim : claims_of_pod_[key]) pods_by_claim_[claim].erase(key);
    claims_of_pod_.erase(key);
    if (type != "DELETED") {
      for (const auto& claim : ClaimsOfPodView(pod)) {
        pods_by_claim_[claim].insert(key);
        claims_of_pod_[key].push_back(claim);
      }
    }
  });
  nodes_->informer->OnEvent([this](const std::string& type, const json& node) {
    const std::string key = KeyOf(node);
    std::lock_guard<std::mutex> lock(index_mutex_);
    if (type == "DELETED") {
      volumes_of_node_.erase(key);
      if (drivers_from_nodes_) drivers_of_node_.erase(key);
      return;
    }
    volumes_of_node_[key] = VolumesOfNodeView(node);
    if (drivers_from_nodes_) drivers_of_node_[key] = DriversOfNodeView(node);
  });
  if (csinodes_ != nullptr) {
    csinodes_->informer->OnEvent([this](const std::string& type, const json& csinode) {
      std::lock_guard<std::mutex> lock(index_mutex_);
      if (type == "DELETED") {
        drivers_of_node_.erase(KeyOf(csinode));
      } else {
        drivers_of_node_[KeyOf(csinode)] = DriversOfCsiNodeView(csinode);
      }
    });
  }
  if (attachments_ != nullptr) {
    attachments_->informer->OnEvent([this](const std::string& type, const json& va) {
      std::lock_guard<std::mutex> lock(index_mutex_);
      if (type == "DELETED") {
        pv_of_attachment_.erase(KeyOf(va));
      } else {
        pv_of_attachment_[KeyOf(va)] = va.value("spec", json::object())
                                           .value("source", json::object())
                                           .value("persistentVolumeName", "");
      }
    });
  }
  for (auto& kind : kinds_) {
    kind->informer->OnEvent([this](const std::string&, const json&) { Changed(); });
    kube::Informer* informer = kind->informer.get();
    threads_.emplace_back([this, informer] { informer->Run(stop_); });
  }

  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    // Settled: watching, or failed (a refused watch or list is not waited for; a kind that
    // recovers later is served from its cache from then on).
    bool all = true;
    for (const auto& kind : kinds_) {
      all = all && (kind->informer->Watching() || !kind->informer->LastError().ok());
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string WatchedObjects::Summary() const {
  std::string unwatched;
  size_t watching = 0;
  for (const auto& kind : kinds_) {
    if (kind->informer->Watching()) {
      ++watching;
      continue;
    }
    const Status why = kind->informer->LastError();
    unwatched += (unwatched.empty() ? "" : ", ") + kind->label +
                 (why.ok() ? std::string(" (not yet)") : " (" + why.message() + ")");
  }
  std::string out = "watching " + std::to_string(watching) + " kind" + (watching == 1 ? "" : "s");
  if (!unwatched.empty()) out += "; read per PV instead: " + unwatched;
  return out;
}

bool WatchedObjects::Watched(const Kind* kind) const {
  return kind != nullptr && kind->informer->Watching();
}

std::optional<std::optional<json>> WatchedObjects::Pv(const std::string& name,
                                                      const std::string& seen) const {
  if (!Watched(pvs_) || !ResourceVersionAtLeast(pvs_->informer->ResourceVersion(), seen)) {
    return std::nullopt;
  }
  return pvs_->informer->Get(name);
}

std::optional<std::optional<json>> WatchedObjects::Claim(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& seen) const {
  if (!InNamespace(ns) || !Watched(claims_) ||
      !ResourceVersionAtLeast(claims_->informer->ResourceVersion(), seen)) {
    return std::nullopt;
  }
  return claims_->informer->Get(ns + "/" + name);
}

std::optional<std::vector<json>> WatchedObjects::PodsOfClaim(const std::string& ns,
                                                             const std::string& claim) const {
  if (!InNamespace(ns) || !Watched(pods_)) return std::nullopt;
  std::set<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(index_mutex_);
    auto it = pods_by_claim_.find(ns + "/" + claim);
    if (it != pods_by_claim_.end()) keys = it->second;
  }
  std::vector<json> out;
  for (const auto& key : keys) {
    if (auto pod = pods_->informer->Get(key)) out.push_back(std::move(*pod));
  }
  return out;
}

std::optional<std::optional<json>> WatchedObjects::ReplicaSet(const std::string& ns,
                                                              const std::string& name) const {
  if (!InNamespace(ns) || !Watched(replicasets_)) return std::nullopt;
  return replicasets_->informer->Get(ns + "/" + name);
}

std::optional<std::vector<json>> WatchedObjects::Hpas(const std::string& ns) const {
  if (!InNamespace(ns) || !hpas_known_) return std::nullopt;
  if (hpas_ == nullptr) return std::vector<json>{};  // neither version served
  if (!Watched(hpas_)) return std::nullopt;
  std::vector<json> out;
  for (auto& h : hpas_->informer->List()) {
    if (h["metadata"].value("namespace", "") == ns) out.push_back(std::move(h));
  }
  return out;
}

std::optional<std::vector<json>> WatchedObjects::CsiDrivers() const {
  if (!csidrivers_known_) return std::nullopt;
  if (csidrivers_ == nullptr) return std::vector<json>{};
  if (!Watched(csidrivers_)) return std::nullopt;
  return csidrivers_->informer->List();
}

std::optional<std::set<std::string>> WatchedObjects::NodeDrivers() const {
  if (!node_drivers_known_ || !Watched(drivers_from_nodes_ ? nodes_ : csinodes_)) {
    return std::nullopt;
  }
  std::set<std::string> out;
  std::lock_guard<std::mutex> lock(index_mutex_);
  for (const auto& [node, drivers] : drivers_of_node_) out.insert(drivers.begin(), drivers.end());
  return out;
}

std::optional<bool> WatchedObjects::AnyNodeListsVolume(
    const std::function<bool(const std::string&)>& matches) const {
  if (!Watched(nodes_)) return std::nullopt;
  std::lock_guard<std::mutex> lock(index_mutex_);
  for (const auto& [node, names] : volumes_of_node_) {
    for (const auto& name : names) {
      if (matches(name)) return true;
    }
  }
  return false;
}

std::optional<bool> WatchedObjects::VolumeAttachmentNames(const std::string& pv) const {
  if (!attachments_known_) return std::nullopt;
  if (attachments_ == nullptr) return false;  // not served: nothing is attached through it
  if (!Watched(attachments_)) return std::nullopt;
  std::lock_guard<std::mutex> lock(index_mutex_);
  for (const auto& [name, named] : pv_of_attachment_) {
    if (named == pv) return true;
  }
  return false;
}

void WatchedObjects::AwaitChange(uint64_t seen, std::chrono::steady_clock::time_point until) const {
  std::unique_lock<std::mutex> lock(change_mutex_);
  change_.wait_until(lock, until, [&] { return changes_.load() != seen || stop_.load(); });
}

}  // namespace flexcsi::migrate
