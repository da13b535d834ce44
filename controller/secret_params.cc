#include "controller/secret_params.h"

#include <cctype>
#include <regex>

namespace flexcsi::controller {
namespace {

constexpr const char* kPrefix = "csi.storage.k8s.io/";

struct SecretKeys {
  const char* name;
  const char* prefixed;    // "provisioner" -> csi.storage.k8s.io/provisioner-secret-name
  const char* deprecated;  // "csiProvisionerSecret" -> csiProvisionerSecretName, or nullptr
  bool annotations_allowed;
};

SecretKeys KeysFor(SecretKind kind) {
  switch (kind) {
    case SecretKind::kProvisioner:
      return {"Provisioner", "provisioner", "csiProvisionerSecret", false};
    case SecretKind::kControllerPublish:
      return {"ControllerPublish", "controller-publish", "csiControllerPublishSecret", true};
    case SecretKind::kNodeStage:
      return {"NodeStage", "node-stage", "csiNodeStageSecret", true};
    case SecretKind::kNodePublish:
      return {"NodePublish", "node-publish", "csiNodePublishSecret", true};
    case SecretKind::kControllerExpand:
      return {"ControllerExpand", "controller-expand", nullptr, false};
    case SecretKind::kNodeExpand:
      return {"NodeExpand", "node-expand", nullptr, true};
    case SecretKind::kSnapshotter:
      return {"Snapshotter", "snapshotter", nullptr, false};
  }
  return {"?", "?", nullptr, false};
}

bool IsDns1123Label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}

bool IsDns1123Subdomain(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, re);
}

// Replaces every ${token}; a token not in `values` fails, naming it.
StatusOr<std::string> Resolve(const std::string& tmpl,
                              const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    const size_t start = tmpl.find("${", pos);
    if (start == std::string::npos) {
      out += tmpl.substr(pos);
      break;
    }
    out += tmpl.substr(pos, start - pos);
    const size_t end = tmpl.find('}', start);
    if (end == std::string::npos) {
      return InvalidArgument("unterminated ${ in \"" + tmpl + "\"");
    }
    const std::string token = tmpl.substr(start + 2, end - start - 2);
    auto it = values.find(token);
    if (it == values.end()) {
      return InvalidArgument("\"" + tmpl + "\" uses ${" + token + "}, which is not available here");
    }
    out += it->second;
    pos = end + 1;
  }
  return out;
}

struct Templates {
  std::string name, namespace_;
};

StatusOr<std::optional<Templates>> FindTemplates(const std::map<std::string, std::string>& params,
                                                 const std::string& label,
                                                 const std::string& name_key,
                                                 const std::string& namespace_key,
                                                 const char* deprecated) {
  int names = 0, namespaces = 0;
  Templates t;
  if (deprecated != nullptr) {
    if (auto it = params.find(std::string(deprecated) + "Name"); it != params.end()) {
      t.name = it->second;
      ++names;
    }
    if (auto it = params.find(std::string(deprecated) + "Namespace"); it != params.end()) {
      t.namespace_ = it->second;
      ++namespaces;
    }
  }
  if (auto it = params.find(name_key); it != params.end()) {
    t.name = it->second;
    ++names;
  }
  if (auto it = params.find(namespace_key); it != params.end()) {
    t.namespace_ = it->second;
    ++namespaces;
  }
  if (names > 1 || namespaces > 1) {
    return InvalidArgument(label + " secret is given both as " + name_key +
                           " and in its deprecated csi*SecretName form");
  }
  if (names != namespaces) {
    return InvalidArgument(label + " secret: " + name_key + " and " + namespace_key +
                           " must be given together");
  }
  if (names == 0) return std::optional<Templates>();
  if (t.name.empty() || t.namespace_.empty()) {
    return InvalidArgument(label + " secret: " + name_key + " and " + namespace_key +
                           " must not be empty");
  }
  return std::optional<Templates>(t);
}

}  // namespace

const char* SecretKindName(SecretKind kind) { return KeysFor(kind).name; }

bool IsProvisionerOnlyParameter(const std::string& key) {
  return key.rfind(kPrefix, 0) == 0;
}

StatusOr<std::optional<SecretRef>> ResolveSecretRef(SecretKind kind,
                                                    const std::map<std::string, std::string>& params,
                                                    const std::string& pv_name,
                                                    const nlohmann::json* claim) {
  const SecretKeys keys = KeysFor(kind);
  const std::string base = std::string(kPrefix) + keys.prefixed + "-secret-";
  auto found = FindTemplates(params, keys.name, base + "name", base + "namespace", keys.deprecated);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    found = FindTemplates(params, "Default", std::string(kPrefix) + "secret-name",
                          std::string(kPrefix) + "secret-namespace", nullptr);
    if (!found.ok()) return found.status();
  }
  if (!found->has_value()) return std::optional<SecretRef>();
  const Templates& t = **found;

  std::map<std::string, std::string> namespace_values = {{"pv.name", pv_name}};
  std::map<std::string, std::string> name_values = namespace_values;
  if (claim != nullptr) {
    const auto& meta = (*claim)["metadata"];
    namespace_values["pvc.namespace"] = meta.value("namespace", "");
    name_values["pvc.namespace"] = meta.value("namespace", "");
    name_values["pvc.name"] = meta.value("name", "");
    if (keys.annotations_allowed && meta.contains("annotations") &&
        meta["annotations"].is_object()) {
      for (auto it = meta["annotations"].begin(); it != meta["annotations"].end(); ++it) {
        if (it.value().is_string()) {
          name_values["pvc.annotations['" + it.key() + "']"] = it.value().get<std::string>();
        }
      }
    }
  }
  const std::string label = std::string(keys.name) + " secret";
  auto ns = Resolve(t.namespace_, namespace_values);
  if (!ns.ok()) return ns.status().WithContext(label + " namespace");
  if (!IsDns1123Label(*ns)) {
    return InvalidArgument(label + " namespace \"" + t.namespace_ + "\" resolved to \"" + *ns +
                           "\", which is not a valid namespace name");
  }
  auto name = Resolve(t.name, name_values);
  if (!name.ok()) return name.status().WithContext(label + " name");
  if (!IsDns1123Subdomain(*name)) {
    return InvalidArgument(label + " name \"" + t.name + "\" resolved to \"" + *name +
                           "\", which is not a valid secret name");
  }
  return std::optional<SecretRef>(SecretRef{*name, *ns});
}

}  // namespace flexcsi::controller
