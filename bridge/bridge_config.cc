#include "bridge/bridge_config.h"

#include <limits>
#include <set>

#include "common/yaml_json.h"

namespace flexcsi {
namespace {

const std::set<std::string> kAccessModes = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                             "ReadWriteOncePod"};

Status ReadString(const nlohmann::json& j, const char* key, std::string* out,
                  const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return InvalidArgument(where + key + " must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadBool(const nlohmann::json& j, const char* key, bool* out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return InvalidArgument(where + key + " must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status ReadInt(const nlohmann::json& j, const char* key, int* out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  // Unsigned values beyond int64 read as negative here, so one check covers both ends.
  if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > std::numeric_limits<int>::max()) {
    return InvalidArgument(where + key + " must be a non-negative integer of at most " +
                           std::to_string(std::numeric_limits<int>::max()));
  }
  *out = static_cast<int>(it->get<int64_t>());
  return Status::Ok();
}

bool IsVendorSlashName(const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return false;
  return name.find_first_of(" \t\n~") == std::string::npos;
}

StatusOr<DriverConfig> ParseDriver(const nlohmann::json& j, size_t index) {
  const std::string where = "drivers[" + std::to_string(index) + "].";
  if (!j.is_object()) return InvalidArgument(where.substr(0, where.size() - 1) + " is not a map");
  DriverConfig d;
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "flexDriver", &d.flex_driver, where));
  if (!IsVendorSlashName(d.flex_driver)) {
    return InvalidArgument(where + "flexDriver \"" + d.flex_driver +
                           "\" must be \"vendor/name\" without spaces or \"~\"");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "csiEndpoint", &d.csi_endpoint, where));
  if (d.csi_endpoint.rfind("unix:///", 0) != 0) {
    return InvalidArgument(where + "csiEndpoint must be a unix:///absolute/path.sock address");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "controllerEndpoint", &d.controller_endpoint, where));
  if (d.controller_endpoint.empty()) d.controller_endpoint = d.csi_endpoint;
  if (d.controller_endpoint != "none" && d.controller_endpoint.rfind("unix:///", 0) != 0) {
    return InvalidArgument(where + "controllerEndpoint must be a unix:///absolute/path.sock "
                           "address, or none for a node-only deployment");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadBool(j, "attach", &d.attach, where));
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "accessMode", &d.access_mode, where));
  if (!kAccessModes.count(d.access_mode)) {
    return InvalidArgument(where + "accessMode \"" + d.access_mode +
                           "\" is not one of ReadWriteOnce, ReadOnlyMany, ReadWriteMany, "
                           "ReadWriteOncePod");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadBool(j, "podInfoOnMount", &d.pod_info_on_mount, where));
  FLEXCSI_RETURN_IF_ERROR(ReadBool(j, "inlineVolumes", &d.inline_volumes, where));
  if (auto it = j.find("mountFlags"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return InvalidArgument(where + "mountFlags must be a list of strings");
    for (const auto& f : *it) {
      if (!f.is_string()) return InvalidArgument(where + "mountFlags must be a list of strings");
      d.mount_flags.push_back(f.get<std::string>());
    }
  }
  if (auto it = j.find("nodeIdMap"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return InvalidArgument(where + "nodeIdMap must be a map");
    for (auto n = it->begin(); n != it->end(); ++n) {
      if (!n.value().is_string()) return InvalidArgument(where + "nodeIdMap values must be strings");
      d.node_id_map[n.key()] = n.value().get<std::string>();
    }
  }
  auto rule = j.find("rule");
  if (rule == j.end() || !rule->is_object()) {
    return InvalidArgument(where + "rule is missing: it says how FlexVolume options become a "
                           "CSI volume (translation.md section 12)");
  }
  nlohmann::json rule_json = *rule;
  if (rule_json.contains("flexDriver") && rule_json["flexDriver"] != d.flex_driver) {
    return InvalidArgument(where + "rule.flexDriver differs from flexDriver; leave it out");
  }
  rule_json["flexDriver"] = d.flex_driver;
  auto mapping = translator::ParseFlexVolumeRules(nlohmann::json::array({rule_json}));
  if (!mapping.ok()) return mapping.status().WithContext(where + "rule");
  d.mapping = std::move(*mapping);
  // A pod author names an inline volume: a handle made from that name could be any PV's.
  if (d.inline_volumes &&
      d.mapping.rules().front().handle_template.find("${kubernetes.io/pvOrVolumeName}") !=
          std::string::npos) {
    return InvalidArgument(where + "inlineVolumes: true needs a rule whose volumeHandle is not "
                           "made from ${kubernetes.io/pvOrVolumeName}: a pod author names an "
                           "inline volume, and so could name any PV's volume (docs/security.md)");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "provisioner", &d.provisioner, where));
  if (d.provisioner.empty()) d.provisioner = d.CsiDriver();
  return d;
}

}  // namespace

std::string DriverConfig::NodeIdFor(const std::string& node_name) const {
  auto it = node_id_map.find(node_name);
  return it == node_id_map.end() ? node_name : it->second;
}

const DriverConfig* BridgeConfig::FindDriver(const std::string& flex_driver) const {
  for (const auto& d : drivers) {
    if (d.flex_driver == flex_driver) return &d;
  }
  return nullptr;
}

StatusOr<BridgeConfig> BridgeConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("the bridge configuration is not a map");
  BridgeConfig c;
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "kubeletRoot", &c.kubelet_root, ""));
  while (c.kubelet_root.size() > 1 && c.kubelet_root.back() == '/') c.kubelet_root.pop_back();
  if (c.kubelet_root == "none") {
    c.kubelet_root.clear();
  } else if (c.kubelet_root.empty() || c.kubelet_root[0] != '/' || c.kubelet_root == "/") {
    return InvalidArgument("kubeletRoot must be an absolute path other than /, or none");
  }
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "socket", &c.socket, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "stateDatabase", &c.state_database, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "metricsAddress", &c.metrics_address, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadInt(j, "reconcileIntervalSeconds", &c.reconcile_interval_seconds, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadInt(j, "unavailableRetrySeconds", &c.unavailable_retry_seconds, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "nodeName", &c.node_name, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadString(j, "kubeconfig", &c.kubeconfig, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadBool(j, "registerDrivers", &c.register_drivers, ""));
  FLEXCSI_RETURN_IF_ERROR(ReadBool(j, "trustPodAuthors", &c.trust_pod_authors, ""));
  auto drivers = j.find("drivers");
  if (drivers == j.end() || !drivers->is_array() || drivers->empty()) {
    return InvalidArgument("drivers must list at least one FlexVolume driver to serve");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < drivers->size(); ++i) {
    auto d = ParseDriver((*drivers)[i], i);
    if (!d.ok()) return d.status();
    if (!seen.insert(d->flex_driver).second) {
      return InvalidArgument("driver " + d->flex_driver + " is configured twice");
    }
    c.drivers.push_back(std::move(*d));
  }
  return c;
}

StatusOr<BridgeConfig> BridgeConfig::LoadFile(const std::string& path) {
  auto doc = LoadYamlFile(path);
  if (!doc.ok()) return doc.status();
  auto config = FromJson(*doc);
  if (!config.ok()) return config.status().WithContext(path);
  return config;
}

}  // namespace flexcsi
