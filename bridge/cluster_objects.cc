#include "bridge/cluster_objects.h"

#include "common/json_access.h"

namespace flexcsi {
namespace {

// What identifying a call reads of a pod: who it is and its volumes. The rest (status, managed
// fields, containers) would only cost memory in the cache.
nlohmann::json PodIdentity(const nlohmann::json& pod) {
  const nlohmann::json& metadata = JField(pod, "metadata");
  return {{"metadata",
           {{"namespace", JStr(metadata, "namespace")},
            {"name", JStr(metadata, "name")},
            {"uid", JStr(metadata, "uid")}}},
          {"spec", {{"volumes", JField(JField(pod, "spec"), "volumes")}}}};
}

// What the inline check reads of a PV: its name and volume source.
nlohmann::json PvSource(const nlohmann::json& pv) {
  nlohmann::json out = {{"metadata", {{"name", JStr(JField(pv, "metadata"), "name")}}},
                        {"spec", nlohmann::json::object()}};
  const nlohmann::json& spec = JField(pv, "spec");
  for (const char* source : {"flexVolume", "csi"}) {
    if (spec.contains(source)) out["spec"][source] = spec[source];
  }
  return out;
}

}  // namespace

KubeClusterObjects::KubeClusterObjects(std::unique_ptr<kube::KubeClient> client)
    : client_(std::move(client)) {}

StatusOr<std::optional<nlohmann::json>> KubeClusterObjects::GetOrNone(
    const kube::ResourcePath& path) {
  auto got = client_->Get(path);
  if (got.ok()) return std::optional<nlohmann::json>(std::move(*got));
  if (got.status().code() == Code::kNotFound) return std::optional<nlohmann::json>();
  return got.status();
}

StatusOr<std::optional<nlohmann::json>> KubeClusterObjects::PersistentVolume(
    const std::string& name) {
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (CachedPv* cached = pvs_.Find(name); cached && now - cached->read_at < kPvFreshness) {
      return cached->pv;
    }
  }
  StatusOr<std::optional<nlohmann::json>> pv = Unavailable("");
  {
    std::lock_guard<std::mutex> lock(client_mu_);
    pv = GetOrNone(kube::ResourcePath::Core("persistentvolumes").Named(name));
  }
  if (!pv.ok()) return pv.status().WithContext("reading PV " + name);
  std::lock_guard<std::mutex> lock(cache_mu_);
  pvs_.Put(name, CachedPv{now, *pv});
  return *pv;
}

StatusOr<std::optional<nlohmann::json>> KubeClusterObjects::Pod(const std::string& namespace_name,
                                                                const std::string& name,
                                                                const std::string& uid) {
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (nlohmann::json* cached = pods_.Find(uid)) return std::optional<nlohmann::json>(*cached);
  }
  StatusOr<std::optional<nlohmann::json>> pod = Unavailable("");
  {
    std::lock_guard<std::mutex> lock(client_mu_);
    pod = GetOrNone(kube::ResourcePath::Core("pods", namespace_name).Named(name));
  }
  if (!pod.ok()) return pod.status().WithContext("reading pod " + namespace_name + "/" + name);
  if (!pod->has_value() || JStr(JField(**pod, "metadata"), "uid") != uid) {
    return std::optional<nlohmann::json>();
  }
  nlohmann::json kept = PodIdentity(**pod);
  std::lock_guard<std::mutex> lock(cache_mu_);
  pods_.Put(uid, kept);
  return std::optional<nlohmann::json>(std::move(kept));
}

StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>>
KubeClusterObjects::PersistentVolumes() {
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (list_ && now - list_read_at_ < kListFreshness) return list_;
  }
  StatusOr<nlohmann::json> listed = Unavailable("");
  {
    std::lock_guard<std::mutex> lock(client_mu_);
    listed = client_->List(kube::ResourcePath::Core("persistentvolumes"));
  }
  if (!listed.ok()) return listed.status().WithContext("listing PVs");
  auto pvs = std::make_shared<std::vector<nlohmann::json>>();
  const nlohmann::json& items = JField(*listed, "items");
  if (items.is_array()) {
    for (const auto& pv : items) pvs->push_back(PvSource(pv));
  }
  std::lock_guard<std::mutex> lock(cache_mu_);
  list_ = pvs;
  list_read_at_ = now;
  return list_;
}

StatusOr<std::shared_ptr<const std::vector<nlohmann::json>>> KubeClusterObjects::PodsOnNode(
    const std::string& node_name, bool fresh) {
  const Clock::duration max_age = fresh ? Clock::duration(kFreshList) : kListFreshness;
  auto cached = [&]() -> std::shared_ptr<const std::vector<nlohmann::json>> {
    std::lock_guard<std::mutex> lock(cache_mu_);
    CachedList* entry = node_pods_.Find(node_name);
    if (entry && Clock::now() - entry->read_at < max_age) return entry->items;
    return nullptr;
  };
  if (auto items = cached()) return items;
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=" + node_name;
  StatusOr<nlohmann::json> listed = Unavailable("");
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(client_mu_);
    // Mounts that missed together queue here: the first one's list serves the others.
    if (auto items = cached()) return items;
    listed = client_->List(kube::ResourcePath::Core("pods"), options);
  }
  if (!listed.ok()) return listed.status().WithContext("listing the pods of node " + node_name);
  auto pods = std::make_shared<std::vector<nlohmann::json>>();
  const nlohmann::json& items = JField(*listed, "items");
  if (items.is_array()) {
    for (const auto& pod : items) pods->push_back(PodIdentity(pod));
  }
  std::lock_guard<std::mutex> lock(cache_mu_);
  node_pods_.Put(node_name, CachedList{now, pods});
  return std::shared_ptr<const std::vector<nlohmann::json>>(pods);
}

}  // namespace flexcsi
