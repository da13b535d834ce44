#include "controller/controller_context.h"

#include "common/base64.h"

namespace flexcsi::controller {
namespace {

// The cached copy when the cache has synced and holds it; otherwise the API server's answer.
// `key` is the cache's key: the name, or namespace/name for a namespaced object.
StatusOr<nlohmann::json> CachedOrRead(const kube::Informer* cache, kube::KubeClient* client,
                                      const kube::ResourcePath& path, const std::string& name,
                                      const std::string& key = "") {
  if (cache != nullptr && cache->HasSynced()) {
    if (auto cached = cache->Get(key.empty() ? name : key)) return std::move(*cached);
  }
  return client->Get(path.Named(name));
}

}  // namespace

std::string Annotation(const nlohmann::json& object, const std::string& key) {
  return JStr(JField(JField(object, "metadata"), "annotations"), key.c_str());
}

bool HasFinalizer(const nlohmann::json& object, const std::string& finalizer) {
  const auto& list = JField(JField(object, "metadata"), "finalizers");
  if (!list.is_array()) return false;
  for (const auto& f : list) {
    if (f == finalizer) return true;
  }
  return false;
}

bool BeingDeleted(const nlohmann::json& object) {
  const auto& ts = JField(JField(object, "metadata"), "deletionTimestamp");
  return !ts.is_null();
}

const DriverConfig* ControllerContext::DriverByProvisioner(const std::string& provisioner) const {
  for (const auto& d : bridge.drivers) {
    if (d.provisioner == provisioner) return &d;
  }
  return nullptr;
}

bool ControllerContext::ServesVolume(const DriverConfig& driver, const nlohmann::json& pv) const {
  if (!node_deployment) return true;
  auto it = node_topology.find(driver.flex_driver);
  return it != node_topology.end() && VolumeIsOnNode(pv, it->second);
}

StatusOr<std::map<std::string, std::string>> ControllerContext::SecretData(const SecretRef& ref) {
  auto secret = client->Get(kube::ResourcePath::Core("secrets", ref.namespace_).Named(ref.name));
  if (!secret.ok()) {
    return Status(secret.status().code(), "cannot read secret " + ref.namespace_ + "/" + ref.name +
                                              ": " + secret.status().message());
  }
  std::map<std::string, std::string> out;
  const auto& data = JField(*secret, "data");
  if (data.is_object()) {
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (!it.value().is_string()) continue;
      auto decoded = Base64Decode(it.value().get<std::string>());
      if (!decoded.ok()) {
        return InvalidArgument("secret " + ref.namespace_ + "/" + ref.name + " key " + it.key() +
                               " is not base64");
      }
      out[it.key()] = *decoded;
    }
  }
  return out;
}

std::vector<std::string> ControllerContext::TopologyKeys(const DriverConfig& driver,
                                                         const std::string& node) {
  if (!node.empty() && cluster.csinodes) {
    // A node registered a moment ago may not be in the cache yet: then the API server says.
    StatusOr<nlohmann::json> csinode = CachedOrRead(
        csinode_cache, client, kube::ResourcePath::Group("storage.k8s.io/v1", "csinodes"), node);
    if (csinode.ok()) {
      const auto& drivers = JField(JField(*csinode, "spec"), "drivers");
      if (drivers.is_array()) {
        for (const auto& d : drivers) {
          if (JStr(d, "name") != driver.CsiDriver()) continue;
          std::vector<std::string> keys;
          const auto& tk = JField(d, "topologyKeys");
          if (tk.is_array()) {
            for (const auto& k : tk) {
              if (k.is_string()) keys.push_back(k.get<std::string>());
            }
          }
          return keys;
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_info_keys_.find(driver.flex_driver);
  if (it != node_info_keys_.end()) return it->second;
  std::vector<std::string> keys;
  auto info = Csi(driver).NodeGetInfo(Deadline::In(std::chrono::seconds(10)));
  if (info.ok() && info->has_accessible_topology()) {
    for (const auto& [k, v] : info->accessible_topology().segments()) keys.push_back(k);
  }
  // A controller-only deployment has no node service: no keys, so no topology requirements.
  if (info.ok() || info.status().code() == Code::kUnimplemented) {
    node_info_keys_[driver.flex_driver] = keys;
  }
  return keys;
}

StatusOr<bool> ControllerContext::SupportsTopology(const DriverConfig& driver) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = supports_topology_.find(driver.flex_driver);
    if (it != supports_topology_.end()) return it->second;
  }
  auto caps = Csi(driver).GetPluginCapabilities(Deadline::In(timeout));
  if (!caps.ok()) return caps.status().WithContext("GetPluginCapabilities");
  bool supported = false;
  for (const auto& cap : caps->capabilities()) {
    supported |= cap.has_service() &&
                 cap.service().type() ==
                     csi::v1::PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS;
  }
  std::lock_guard<std::mutex> lock(mu_);
  supports_topology_[driver.flex_driver] = supported;
  return supported;
}

StatusOr<nlohmann::json> ControllerContext::Node(const std::string& name) {
  return CachedOrRead(node_cache, client, kube::ResourcePath::Core("nodes"), name);
}

StatusOr<nlohmann::json> ControllerContext::StorageClass(const std::string& name) {
  return CachedOrRead(class_cache, client,
                      kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses"), name);
}

StatusOr<nlohmann::json> ControllerContext::Claim(const std::string& namespace_,
                                                  const std::string& name) {
  return CachedOrRead(claim_cache, client,
                      kube::ResourcePath::Core("persistentvolumeclaims", namespace_), name,
                      namespace_ + "/" + name);
}

StatusOr<bool> ControllerContext::VolumeExists(const std::string& pv_name) {
  // The cache is believed when it holds the PV, never when it does not: a PV created a moment
  // ago whose event has not arrived would otherwise be made again (a second CreateVolume, seen
  // once in 1,000 claims at 1,000 nodes and load 54).
  auto pv = CachedOrRead(volume_cache, client, kube::ResourcePath::Core("persistentvolumes"),
                         pv_name);
  if (pv.ok()) return true;
  if (kube::IsNotFound(pv.status())) return false;
  return pv.status();
}

void ControllerContext::TopologyObjectChanged(const std::string& kind, const std::string& type,
                                              const nlohmann::json& view) {
  nlohmann::json without_version = view;
  if (without_version.contains("metadata")) without_version["metadata"].erase("resourceVersion");
  const std::string key = kind + "/" + JStr(JField(view, "metadata"), "name");
  const size_t hash = std::hash<std::string>{}(without_version.dump());
  std::lock_guard<std::mutex> lock(mu_);
  if (type == "DELETED") {
    topology_views_.erase(key);
  } else {
    auto [it, inserted] = topology_views_.emplace(key, hash);
    if (!inserted && it->second == hash) return;  // a heartbeat: nothing the topology reads
    it->second = hash;
  }
  ++topology_changes_;
}

bool ControllerContext::TopologyCachesSynced() const {
  return node_cache != nullptr && node_cache->HasSynced() &&
         (!cluster.csinodes || (csinode_cache != nullptr && csinode_cache->HasSynced()));
}

StatusOr<std::shared_ptr<const nlohmann::json>> ControllerContext::ListNodes() {
  if (TopologyCachesSynced()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (topology_memo_.at_change != topology_changes_ || !topology_memo_.nodes) {
      topology_memo_ = TopologyMemo{topology_changes_,
                                    std::make_shared<const nlohmann::json>(node_cache->List()),
                                    {}};
    }
    return topology_memo_.nodes;
  }
  auto nodes = client->List(kube::ResourcePath::Core("nodes"));
  if (!nodes.ok()) return nodes.status().WithContext("listing nodes");
  return std::make_shared<const nlohmann::json>(
      JField(*nodes, "items").is_array() ? (*nodes)["items"] : nlohmann::json::array());
}

StatusOr<std::shared_ptr<const RegisteredTopology>> ControllerContext::RegisteredTopologyOf(
    const DriverConfig& driver) {
  const bool memoized = TopologyCachesSynced();
  auto nodes = ListNodes();
  if (!nodes.ok()) return nodes.status();
  uint64_t at_change = 0;
  if (memoized) {
    std::lock_guard<std::mutex> lock(mu_);
    at_change = topology_changes_;
    if (topology_memo_.at_change == at_change) {
      auto it = topology_memo_.registered.find(driver.flex_driver);
      if (it != topology_memo_.registered.end()) return it->second;
    }
  }
  nlohmann::json csinodes = nlohmann::json::array();
  if (cluster.csinodes && csinode_cache != nullptr && csinode_cache->HasSynced()) {
    csinodes = nlohmann::json(csinode_cache->List());
  } else if (cluster.csinodes) {
    auto listed = client->List(kube::ResourcePath::Group("storage.k8s.io/v1", "csinodes"));
    // An error of a served API is real: guessing could pick the wrong nodes.
    if (!listed.ok()) return listed.status().WithContext("listing CSINodes");
    if (JField(*listed, "items").is_array()) csinodes = (*listed)["items"];
  }
  auto registered = std::make_shared<const RegisteredTopology>(
      AggregateTopology(driver.CsiDriver(), **nodes, csinodes, TopologyKeys(driver, "")));
  if (memoized) {
    std::lock_guard<std::mutex> lock(mu_);
    // Kept only if nothing changed meanwhile (the node list read belongs to this count too).
    if (topology_memo_.at_change == at_change && topology_changes_ == at_change) {
      topology_memo_.registered[driver.flex_driver] = registered;
    }
  }
  return registered;
}

}  // namespace flexcsi::controller
