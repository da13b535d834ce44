#include "migrate/served_provisioners.h"

#include <set>

#include "common/yaml_json.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

// flexcsi-controller's own default (bridge/bridge_config.h kDefaultBridgeConfigPath); migrate
// does not link the bridge.
constexpr const char* kDefaultConfigPath = "/etc/flexcsi/bridge.yaml";
constexpr const char* kBinary = "flexcsi-controller";

std::vector<std::string> Words(const json& container, const char* field) {
  std::vector<std::string> out;
  if (!container.contains(field) || !container[field].is_array()) return out;
  for (const auto& w : container[field]) {
    if (w.is_string()) out.push_back(w.get<std::string>());
  }
  return out;
}

bool RunsController(const std::string& word) {
  const size_t slash = word.rfind('/');
  return (slash == std::string::npos ? word : word.substr(slash + 1)) == kBinary;
}

// The --bridge-config the container passes, else the default; "" when it runs no controller.
std::string ControllerConfigPath(const json& container) {
  std::vector<std::string> words = Words(container, "command");
  const std::vector<std::string> args = Words(container, "args");
  // The binary is the command's first word, or (a command from the image) the args' first.
  const bool runs =
      words.empty() ? !args.empty() && RunsController(args.front()) : RunsController(words.front());
  if (!runs) return "";
  words.insert(words.end(), args.begin(), args.end());
  const std::string flag = "--bridge-config";
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind(flag + "=", 0) == 0) return words[i].substr(flag.size() + 1);
    if (words[i] == flag && i + 1 < words.size()) return words[i + 1];
  }
  return kDefaultConfigPath;
}

// Which ConfigMap (and key) the pod spec mounts at `path` for `container`.
void ResolveConfigMap(const json& pod_spec, const json& container, ControllerWorkload* w) {
  const std::string& path = w->config_path;
  for (const auto& m : container.value("volumeMounts", json::array())) {
    const std::string mount = m.value("mountPath", "");
    const std::string sub = m.value("subPath", "");
    std::string relative;
    if (!sub.empty() && mount == path) {
      relative = sub;
    } else if (sub.empty() && !mount.empty() &&
               path.rfind(mount + (mount.back() == '/' ? "" : "/"), 0) == 0) {
      relative = path.substr(mount.size() + (mount.back() == '/' ? 0 : 1));
    } else {
      continue;
    }
    for (const auto& v : pod_spec.value("volumes", json::array())) {
      if (v.value("name", "") != m.value("name", "")) continue;
      if (!v.contains("configMap") || !v["configMap"].is_object()) {
        w->config_error =
            path + " is not mounted from a ConfigMap (volume " + v.value("name", "") + ")";
        return;
      }
      const json& cm = v["configMap"];
      w->config_map = cm.value("name", "");
      w->config_key = relative;
      for (const auto& item : cm.value("items", json::array())) {
        if (item.value("path", "") == relative) w->config_key = item.value("key", "");
      }
      return;
    }
  }
  w->config_error = path + " is not mounted from a ConfigMap";
}

int64_t Int(const json& object, const char* pointer, int64_t otherwise) {
  const json::json_pointer p(pointer);
  return object.contains(p) && object.at(p).is_number_integer() ? object.at(p).get<int64_t>()
                                                                : otherwise;
}

void Collect(const std::string& kind, const json& object, const json& pod_spec, int64_t replicas,
             std::vector<ControllerWorkload>* out) {
  if (!pod_spec.is_object()) return;
  for (const char* list : {"containers", "initContainers"}) {
    for (const auto& c : pod_spec.value(list, json::array())) {
      const std::string path = ControllerConfigPath(c);
      if (path.empty()) continue;
      ControllerWorkload w;
      w.kind = kind;
      w.namespace_ = NamespaceOf(object);
      w.name = NameOf(object);
      w.replicas = replicas;
      w.config_path = path;
      ResolveConfigMap(pod_spec, c, &w);
      out->push_back(std::move(w));
      return;  // one controller per pod
    }
  }
}

bool HasController(const json& object) {
  for (const auto& ref :
       object.value("metadata", json::object()).value("ownerReferences", json::array())) {
    if (ref.value("controller", false)) return true;
  }
  return false;
}

}  // namespace

std::vector<ControllerWorkload> FindControllerWorkloads(const ClusterObjects& objects) {
  std::vector<ControllerWorkload> out;
  const json::json_pointer template_spec("/spec/template/spec");
  auto templates = [&](const std::vector<json>& list, const std::string& kind) {
    for (const auto& w : list) {
      if (!w.is_object() || !w.contains(template_spec)) continue;
      const int64_t replicas = kind == "DaemonSet" ? Int(w, "/status/desiredNumberScheduled", 1)
                                                   : Int(w, "/spec/replicas", 1);
      Collect(kind, w, w.at(template_spec), replicas, &out);
    }
  };
  templates(objects.deployments, "Deployment");
  templates(objects.statefulsets, "StatefulSet");
  templates(objects.daemonsets, "DaemonSet");
  for (const auto& pod : objects.pods) {
    if (!pod.is_object() || HasController(pod)) continue;  // their workload is listed above
    const std::string phase = Str(pod, "/status/phase"_json_pointer);
    Collect("Pod", pod, pod.value("spec", json::object()),
            phase == "Succeeded" || phase == "Failed" ? 0 : 1, &out);
  }
  return out;
}

Status AddServedDrivers(const std::string& config_text, ControllerWorkload* controller,
                        ServedProvisioners* out) {
  auto docs = ParseYamlDocuments(config_text);
  if (!docs.ok()) return docs.status();
  if (docs->empty() || !docs->front().is_object()) {
    return InvalidArgument("the configuration is not an object");
  }
  const json drivers = docs->front().value("drivers", json::array());
  if (!drivers.is_array()) return InvalidArgument("drivers is not a list");
  std::map<std::string, std::string> provisioners;
  std::vector<json> rules;
  for (const auto& d : drivers) {
    const std::string flex = d.is_object() ? d.value("flexDriver", "") : "";
    if (flex.empty() || !d.contains("rule") || !d["rule"].is_object()) {
      return InvalidArgument("a driver entry without flexDriver or rule");
    }
    json rule = d["rule"];
    rule["flexDriver"] = flex;
    // Validated as flexcsi-controller validates it, so the rule is one the translator takes.
    auto parsed = translator::ParseFlexVolumeRules(json::array({rule}));
    if (!parsed.ok()) return parsed.status().WithContext("driver " + flex);
    std::string provisioner = d.value("provisioner", "");
    if (provisioner.empty()) provisioner = parsed->rules().front().csi_driver;
    provisioners[provisioner] = flex;
    rules.push_back(std::move(rule));
  }
  std::set<std::string> known;
  for (const auto& r : out->rules) known.insert(r.value("flexDriver", ""));
  for (auto& r : rules) {
    if (known.insert(r.value("flexDriver", "")).second) out->rules.push_back(std::move(r));
  }
  for (const auto& [provisioner, flex] : provisioners) {
    out->flex_driver_of.emplace(provisioner, flex);
    controller->provisioners.push_back(provisioner);
  }
  out->read_any = true;
  return Status::Ok();
}

ServedProvisioners ReadServedProvisioners(kube::KubeClient& client, const ClusterObjects& objects) {
  ServedProvisioners out;
  out.controllers = FindControllerWorkloads(objects);
  std::map<std::string, StatusOr<json>> read;  // "ns/name" -> the ConfigMap
  for (auto& c : out.controllers) {
    if (c.config_map.empty()) continue;
    const std::string where = "ConfigMap " + c.namespace_ + "/" + c.config_map;
    const std::string key = c.namespace_ + "/" + c.config_map;
    auto it = read.find(key);
    if (it == read.end()) {
      it = read.emplace(
                   key,
                   client.Get(
                       kube::ResourcePath::Core("configmaps", c.namespace_).Named(c.config_map)))
               .first;
    }
    if (!it->second.ok()) {
      c.config_error = where + ": " + it->second.status().message();
      continue;
    }
    const json data = it->second->value("data", json::object());
    if (!data.is_object() || !data.contains(c.config_key) || !data[c.config_key].is_string()) {
      c.config_error = where + " has no key " + c.config_key;
      continue;
    }
    if (Status s = AddServedDrivers(data[c.config_key].get<std::string>(), &c, &out); !s.ok()) {
      c.config_error = where + ", key " + c.config_key + ": " + s.message();
    }
  }
  return out;
}

}  // namespace flexcsi::migrate
