#include "translator/flexvolume_rules.h"

#include <fstream>
#include <sstream>

#include "translator/go_strings.h"
#include "translator/json_fields.h"
#include "common/yaml_json.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

struct SecretRefName {
  SecretRefField field;
  const char* rule_name;
  const char* pv_field;
};

const SecretRefName kSecretRefNames[] = {
    {SecretRefField::kControllerPublish, "controllerPublish", "controllerPublishSecretRef"},
    {SecretRefField::kNodeStage, "nodeStage", "nodeStageSecretRef"},
    {SecretRefField::kNodePublish, "nodePublish", "nodePublishSecretRef"},
    {SecretRefField::kControllerExpand, "controllerExpand", "controllerExpandSecretRef"},
    {SecretRefField::kNodeExpand, "nodeExpand", "nodeExpandSecretRef"},
};

// Kubelet owns kubernetes.io/* options at call time (fsType, readwrite, secrets, pod info);
// freezing them into a PV would be wrong.
const char kKubeletOptionPrefix[] = "kubernetes.io/";

bool HasWhitespace(const std::string& s) {
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return true;
  }
  return false;
}

// A rules-file value that must be text. YAML resolves `3` and `true` to other types; a rules
// author writing `static: {replicas: 3}` means the string "3".
Status ScalarText(const Json& v, const std::string& where, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
  } else if (v.is_number() || v.is_boolean()) {
    *out = v.dump();
  } else if (v.is_null()) {
    out->clear();
  } else {
    return InvalidArgument(where + " must be a string");
  }
  return Status::Ok();
}

Status StringMap(const Json& v, const std::string& where, std::map<std::string, std::string>* out) {
  if (v.is_null()) return Status::Ok();
  if (!v.is_object()) return InvalidArgument(where + " must be a map of strings");
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string text;
    FLEXCSI_RETURN_IF_ERROR(ScalarText(*it, where + "." + it.key(), &text));
    (*out)[it.key()] = text;
  }
  return Status::Ok();
}

Status StringList(const Json& v, const std::string& where, std::vector<std::string>* out) {
  if (v.is_null()) return Status::Ok();
  if (!v.is_array()) return InvalidArgument(where + " must be a list of strings");
  for (const Json& item : v) {
    std::string text;
    FLEXCSI_RETURN_IF_ERROR(ScalarText(item, where + "[]", &text));
    out->push_back(text);
  }
  return Status::Ok();
}

Status RejectUnknownKeys(const Json& obj, const std::set<std::string>& known,
                         const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (known.count(it.key()) == 0) {
      return InvalidArgument(where + ": unknown field " + GoQuote(it.key()));
    }
  }
  return Status::Ok();
}

// The option keys named by ${KEY} placeholders, in order; "$$" is a literal "$". Returns false
// when the template has no placeholder.
bool TemplateKeys(const std::string& tmpl, std::vector<std::string>* keys) {
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 >= tmpl.size()) continue;
    if (tmpl[i + 1] == '$') {
      ++i;
    } else if (tmpl[i + 1] == '{') {
      size_t close = tmpl.find('}', i + 2);
      if (close == std::string::npos) break;  // copied literally
      keys->push_back(tmpl.substr(i + 2, close - i - 2));
      i = close;
    }
  }
  return !keys->empty();
}

// {fromOption: KEY} or {value: TEXT}.
Status ParseRuleValue(const Json& v, const std::string& where, RuleValue* out) {
  if (!v.is_object()) return InvalidArgument(where + " must be {fromOption: KEY} or {value: TEXT}");
  FLEXCSI_RETURN_IF_ERROR(RejectUnknownKeys(v, {"fromOption", "value"}, where));
  FLEXCSI_RETURN_IF_ERROR(
      ScalarText(v.value("fromOption", Json()), where + ".fromOption", &out->from_option));
  FLEXCSI_RETURN_IF_ERROR(ScalarText(v.value("value", Json()), where + ".value", &out->value));
  if (out->from_option.empty() == out->value.empty()) {
    return InvalidArgument(where + " needs exactly one of fromOption and value, not empty");
  }
  return Status::Ok();
}

Status ParseRuleSecrets(const Json& v, const std::string& where, RuleSecrets* out) {
  if (!v.is_object()) return InvalidArgument(where + " must be a map");
  FLEXCSI_RETURN_IF_ERROR(RejectUnknownKeys(
      v, {"secretName", "secretNamespace", "singleKeyAs", "fromOptions", "defaults"}, where));
  for (const auto& [key, field] :
       {std::pair{"secretName", &out->name}, std::pair{"secretNamespace", &out->namespace_}}) {
    if (!v.contains(key) || v[key].is_null()) continue;
    RuleValue value;
    FLEXCSI_RETURN_IF_ERROR(ParseRuleValue(v[key], where + "." + key, &value));
    *field = value;
  }
  FLEXCSI_RETURN_IF_ERROR(
      ScalarText(v.value("singleKeyAs", Json()), where + ".singleKeyAs", &out->single_key_as));
  FLEXCSI_RETURN_IF_ERROR(
      StringMap(v.value("fromOptions", Json()), where + ".fromOptions", &out->from_options));
  FLEXCSI_RETURN_IF_ERROR(
      StringMap(v.value("defaults", Json()), where + ".defaults", &out->defaults));
  if (!out->name && (out->namespace_ || !out->single_key_as.empty())) {
    return InvalidArgument(where + ": secretNamespace and singleKeyAs need secretName");
  }
  if (!out->name && out->from_options.empty() && out->defaults.empty()) {
    return InvalidArgument(where + " gives no secret: set secretName, fromOptions or defaults");
  }
  return Status::Ok();
}

// The option keys the rule's `secrets` consume: they name or make secrets, never attributes.
std::set<std::string> SecretOptionKeys(const FlexVolumeRule& rule) {
  std::set<std::string> keys;
  if (!rule.secrets) return keys;
  for (const auto& value : {rule.secrets->name, rule.secrets->namespace_}) {
    if (value && !value->from_option.empty()) keys.insert(value->from_option);
  }
  for (const auto& [option, key] : rule.secrets->from_options) keys.insert(option);
  return keys;
}

// An option's value, or the value the rule states; "" when the option is absent.
std::string ValueOf(const RuleValue& value, const std::map<std::string, std::string>& options) {
  if (value.from_option.empty()) return value.value;
  auto it = options.find(value.from_option);
  return it == options.end() ? std::string() : it->second;
}

// The rule's `secrets` against the options: which Secret the bridge reads, and the keys made
// from options and defaults.
Status ResolveRuleSecrets(const FlexVolumeRule& rule,
                          const std::map<std::string, std::string>& options,
                          const std::string& fallback_namespace, CsiVolume* out) {
  const RuleSecrets& secrets = *rule.secrets;
  out->secret_ref_fields = rule.secret_refs;  // what names the Secret migrate writes, if derived
  out->secret_values = secrets.defaults;
  for (const auto& [option, key] : secrets.from_options) {
    auto it = options.find(option);
    if (it != options.end() && !it->second.empty()) out->secret_values[key] = it->second;
  }
  if (!secrets.name) return Status::Ok();
  const std::string name = ValueOf(*secrets.name, options);
  if (name.empty()) {
    // No Secret named: the volume uses none, as rook's agent then did (or the keys kubelet
    // passes from a secretRef are all there is).
    return Status::Ok();
  }
  SecretReference read{name, fallback_namespace};
  if (secrets.namespace_) {
    read.namespace_name = ValueOf(*secrets.namespace_, options);
    if (read.namespace_name.empty()) {
      return InvalidArgument("flexVolume rule for " + rule.flex_driver +
                             ": secret namespace option " +
                             GoQuote(secrets.namespace_->from_option) + " is missing or empty");
    }
  }
  out->read_secret = read;
  out->read_secret_single_key_as = secrets.single_key_as;
  return Status::Ok();
}

Status ParseRule(const Json& r, const std::string& where, FlexVolumeRule* rule) {
  if (!r.is_object()) return InvalidArgument(where + " must be a map");
  FLEXCSI_RETURN_IF_ERROR(
      RejectUnknownKeys(r,
                        {"flexDriver", "csiDriver", "volumeHandle", "keepHandleOptions",
                         "attributes", "secrets", "secretRefs", "defaultFsType"},
                        where));
  FLEXCSI_RETURN_IF_ERROR(
      ScalarText(r.value("flexDriver", Json()), where + ".flexDriver", &rule->flex_driver));
  FLEXCSI_RETURN_IF_ERROR(
      ScalarText(r.value("csiDriver", Json()), where + ".csiDriver", &rule->csi_driver));
  if (rule->flex_driver.empty()) return InvalidArgument(where + ": flexDriver is required");
  if (rule->csi_driver.empty()) return InvalidArgument(where + ": csiDriver is required");
  if (HasWhitespace(rule->flex_driver)) {
    return InvalidArgument(where + ": flexDriver " + GoQuote(rule->flex_driver) +
                           " contains whitespace");
  }
  if (HasWhitespace(rule->csi_driver)) {
    return InvalidArgument(where + ": csiDriver " + GoQuote(rule->csi_driver) +
                           " contains whitespace");
  }

  const Json handle = r.value("volumeHandle", Json());
  if (!handle.is_object()) {
    return InvalidArgument(where + ": volumeHandle is required and must be a map");
  }
  FLEXCSI_RETURN_IF_ERROR(
      RejectUnknownKeys(handle, {"fromOption", "template"}, where + ".volumeHandle"));
  bool has_option = handle.contains("fromOption") && !handle["fromOption"].is_null();
  bool has_template = handle.contains("template") && !handle["template"].is_null();
  if (has_option == has_template) {
    return InvalidArgument(where + ": volumeHandle needs exactly one of fromOption and template");
  }
  if (has_option) {
    FLEXCSI_RETURN_IF_ERROR(ScalarText(handle["fromOption"], where + ".volumeHandle.fromOption",
                                       &rule->handle_from_option));
    if (rule->handle_from_option.empty()) {
      return InvalidArgument(where + ": volumeHandle.fromOption is empty");
    }
  } else {
    FLEXCSI_RETURN_IF_ERROR(
        ScalarText(handle["template"], where + ".volumeHandle.template", &rule->handle_template));
    std::vector<std::string> keys;
    if (!TemplateKeys(rule->handle_template, &keys)) {
      return InvalidArgument(where + ": volumeHandle.template " + GoQuote(rule->handle_template) +
                             " has no ${KEY} placeholder");
    }
  }

  const Json keep = r.value("keepHandleOptions", Json());
  if (keep.is_boolean()) {
    rule->keep_handle_options = keep.get<bool>();
  } else if (keep.is_string() && (keep == "true" || keep == "false")) {
    rule->keep_handle_options = keep == "true";
  } else if (!keep.is_null()) {
    return InvalidArgument(where + ".keepHandleOptions must be true or false");
  }

  const Json attributes = r.value("attributes", Json());
  if (!attributes.is_null()) {
    if (!attributes.is_object()) return InvalidArgument(where + ".attributes must be a map");
    FLEXCSI_RETURN_IF_ERROR(
        RejectUnknownKeys(attributes, {"exclude", "rename", "defaults", "static"},
                          where + ".attributes"));
    std::vector<std::string> exclude;
    FLEXCSI_RETURN_IF_ERROR(
        StringList(attributes.value("exclude", Json()), where + ".attributes.exclude", &exclude));
    rule->exclude.insert(exclude.begin(), exclude.end());
    FLEXCSI_RETURN_IF_ERROR(
        StringMap(attributes.value("rename", Json()), where + ".attributes.rename", &rule->rename));
    FLEXCSI_RETURN_IF_ERROR(StringMap(attributes.value("defaults", Json()),
                                      where + ".attributes.defaults", &rule->default_attributes));
    FLEXCSI_RETURN_IF_ERROR(StringMap(attributes.value("static", Json()),
                                      where + ".attributes.static", &rule->static_attributes));
    for (const auto& [from, to] : rule->rename) {
      if (rule->static_attributes.count(to) != 0) {
        return InvalidArgument(where + ": attributes.rename target " + GoQuote(to) + " (from " +
                               GoQuote(from) + ") collides with a static attribute");
      }
    }
  }

  if (r.contains("secrets") && !r["secrets"].is_null()) {
    RuleSecrets secrets;
    FLEXCSI_RETURN_IF_ERROR(ParseRuleSecrets(r["secrets"], where + ".secrets", &secrets));
    rule->secrets = secrets;
  }

  if (r.contains("secretRefs") && !r["secretRefs"].is_null()) {
    std::vector<std::string> names;
    FLEXCSI_RETURN_IF_ERROR(StringList(r["secretRefs"], where + ".secretRefs", &names));
    rule->secret_refs.clear();
    for (const std::string& name : names) {
      bool known = false;
      for (const SecretRefName& n : kSecretRefNames) {
        if (name == n.rule_name) {
          rule->secret_refs.push_back(n.field);
          known = true;
        }
      }
      if (!known) {
        return InvalidArgument(where + ": unknown secretRefs entry " + GoQuote(name) +
                               " (allowed: controllerPublish, nodeStage, nodePublish, "
                               "controllerExpand, nodeExpand)");
      }
    }
  }
  return ScalarText(r.value("defaultFsType", Json()), where + ".defaultFsType",
                    &rule->default_fs_type);
}

// The handle and the option keys it used.
StatusOr<std::string> BuildHandle(const FlexVolumeRule& rule,
                                  const std::map<std::string, std::string>& options,
                                  std::set<std::string>* used) {
  auto option = [&](const std::string& key) -> StatusOr<std::string> {
    auto it = options.find(key);
    if (it == options.end() || it->second.empty()) {
      return InvalidArgument("flexVolume rule for " + rule.flex_driver + ": volume handle option " +
                             GoQuote(key) + " is missing or empty");
    }
    used->insert(key);
    return it->second;
  };
  std::string handle;
  if (!rule.handle_from_option.empty()) {
    StatusOr<std::string> v = option(rule.handle_from_option);
    if (!v.ok()) return v.status();
    handle = *v;
  } else {
    const std::string& t = rule.handle_template;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == '$') {
        handle.push_back('$');
        ++i;
        continue;
      }
      if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == '{') {
        size_t close = t.find('}', i + 2);
        if (close != std::string::npos) {
          StatusOr<std::string> v = option(t.substr(i + 2, close - i - 2));
          if (!v.ok()) return v.status();
          handle += *v;
          i = close;
          continue;
        }
      }
      handle.push_back(t[i]);
    }
  }
  if (handle.empty()) {
    return InvalidArgument("flexVolume rule for " + rule.flex_driver +
                           " produced an empty volume handle");
  }
  return handle;
}

}  // namespace

const char* SecretRefRuleName(SecretRefField field) {
  for (const SecretRefName& n : kSecretRefNames) {
    if (n.field == field) return n.rule_name;
  }
  return "";
}

const char* SecretRefPVFieldName(SecretRefField field) {
  for (const SecretRefName& n : kSecretRefNames) {
    if (n.field == field) return n.pv_field;
  }
  return "";
}

const FlexVolumeRule* FlexVolumeRules::FindByFlexDriver(const std::string& name) const {
  for (const FlexVolumeRule& r : rules_) {
    if (r.flex_driver == name) return &r;
  }
  return nullptr;
}

const FlexVolumeRule* FlexVolumeRules::FindByCsiDriver(const std::string& name) const {
  for (const FlexVolumeRule& r : rules_) {
    if (r.csi_driver == name) return &r;
  }
  return nullptr;
}

StatusOr<FlexVolumeRules> ParseFlexVolumeRules(const nlohmann::json& doc) {
  const Json* list = &doc;
  if (doc.is_object()) {
    auto it = doc.find("flexVolumeRules");
    if (it == doc.end()) return InvalidArgument("flexVolume rules: no flexVolumeRules list");
    list = &*it;
  }
  if (list->is_null()) return FlexVolumeRules();
  if (!list->is_array()) return InvalidArgument("flexVolume rules: flexVolumeRules must be a list");
  FlexVolumeRules rules;
  for (size_t i = 0; i < list->size(); ++i) {
    FlexVolumeRule rule;
    std::string where = "flexVolumeRules[" + std::to_string(i) + "]";
    FLEXCSI_RETURN_IF_ERROR(ParseRule((*list)[i], where, &rule));
    for (size_t j = 0; j < rules.rules_.size(); ++j) {
      if (rules.rules_[j].flex_driver == rule.flex_driver) {
        rules.warnings_.push_back(where + ": flexDriver " + rule.flex_driver +
                                  " is already matched by flexVolumeRules[" + std::to_string(j) +
                                  "], which wins");
        break;
      }
    }
    rules.rules_.push_back(std::move(rule));
  }
  return rules;
}

StatusOr<FlexVolumeRules> ParseFlexVolumeRules(const YAML::Node& doc) {
  StatusOr<Json> json = YamlNodeToJson(doc);
  if (!json.ok()) return json.status();
  return ParseFlexVolumeRules(*json);
}

StatusOr<FlexVolumeRules> ParseFlexVolumeRulesText(const std::string& text) {
  if (LooksLikeJson(text)) {
    StatusOr<Json> json = ParseJsonText(text);
    if (!json.ok()) return json.status().WithContext("flexVolume rules");
    return ParseFlexVolumeRules(*json);
  }
  StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status().WithContext("flexVolume rules");
  if (docs->size() != 1) {
    return InvalidArgument("flexVolume rules: expected one YAML document, got " +
                           std::to_string(docs->size()));
  }
  return ParseFlexVolumeRules((*docs)[0]);
}

StatusOr<FlexVolumeRules> LoadFlexVolumeRulesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open flexVolume rules file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  StatusOr<FlexVolumeRules> rules = ParseFlexVolumeRulesText(text.str());
  if (!rules.ok()) return rules.status().WithContext(path);
  return rules;
}

StatusOr<CsiVolume> MapFlexVolumeToCsi(const FlexVolumeRules& rules, const FlexVolumeSource& source,
                                       const std::string& fallback_secret_namespace) {
  const FlexVolumeRule* rule = rules.FindByFlexDriver(source.driver);
  if (rule == nullptr) return InvalidArgument("no flexVolume rule for driver " + source.driver);
  CsiVolume out;
  out.driver = rule->csi_driver;
  std::set<std::string> used;
  StatusOr<std::string> handle = BuildHandle(*rule, source.options, &used);
  if (!handle.ok()) return handle.status();
  out.volume_handle = *handle;

  const std::set<std::string> secret_options = SecretOptionKeys(*rule);
  std::map<std::string, std::string> renamed;
  for (const auto& [key, value] : source.options) {
    if (StartsWith(key, kKubeletOptionPrefix)) continue;
    if (!rule->keep_handle_options && used.count(key) != 0) continue;
    if (rule->exclude.count(key) != 0 || secret_options.count(key) != 0) continue;
    auto rename = rule->rename.find(key);
    if (rename == rule->rename.end()) {
      out.volume_attributes.emplace(key, value);  // a renamed key of the same name wins
    } else {
      renamed[rename->second] = value;
    }
  }
  for (auto& [key, value] : renamed) out.volume_attributes[key] = value;
  for (const auto& [key, value] : rule->default_attributes) {
    out.volume_attributes.emplace(key, value);
  }
  for (const auto& [key, value] : rule->static_attributes) out.volume_attributes[key] = value;

  out.fs_type = source.fs_type.empty() ? rule->default_fs_type : source.fs_type;
  out.read_only = source.read_only;
  if (source.secret_ref) {
    SecretReference secret = *source.secret_ref;
    if (secret.namespace_name.empty()) secret.namespace_name = fallback_secret_namespace;
    if (secret.namespace_name.empty()) {
      return InvalidArgument("cannot determine secret namespace for flexVolume secretRef " +
                             secret.name);
    }
    out.secret = secret;
    out.secret_ref_fields = rule->secret_refs;
  }
  if (rule->secrets) FLEXCSI_RETURN_IF_ERROR(ResolveRuleSecrets(*rule, source.options,
                                                               fallback_secret_namespace, &out));
  return out;
}

StatusOr<CsiVolume> MapFlexVolumeCallToCsi(const FlexVolumeRules& rules, const std::string& driver,
                                           const std::map<std::string, std::string>& options) {
  FlexVolumeSource source;
  source.driver = driver;
  source.options = options;
  auto it = options.find("kubernetes.io/fsType");
  if (it != options.end()) source.fs_type = it->second;
  it = options.find("kubernetes.io/readwrite");
  source.read_only = it != options.end() && it->second == "ro";
  return MapFlexVolumeToCsi(rules, source, std::string());
}

StatusOr<FlexVolumeSource> MapCsiToFlexVolume(const FlexVolumeRule& rule, const CsiVolume& volume) {
  if (rule.handle_from_option.empty()) {
    return InvalidArgument("flexVolume rule for " + rule.csi_driver +
                           " uses a template handle and cannot be reversed");
  }
  std::map<std::string, std::string> reverse_rename;
  for (const auto& [from, to] : rule.rename) reverse_rename[to] = from;
  FlexVolumeSource out;
  out.driver = rule.flex_driver;
  for (const auto& [key, value] : volume.volume_attributes) {
    if (rule.static_attributes.count(key) != 0) continue;
    auto it = reverse_rename.find(key);
    out.options[it == reverse_rename.end() ? key : it->second] = value;
  }
  out.options[rule.handle_from_option] = volume.volume_handle;
  out.fs_type = volume.fs_type;
  out.read_only = volume.read_only;
  const RuleSecrets* secrets = rule.secrets ? &*rule.secrets : nullptr;
  if (volume.secret && secrets && secrets->name && !secrets->name->from_option.empty()) {
    // Named by options, read by the bridge: any Secret type works, where a secretRef would
    // have to be typed with the FlexVolume driver's name for kubelet to pass it on.
    out.options[secrets->name->from_option] = volume.secret->name;
    if (secrets->namespace_ && !secrets->namespace_->from_option.empty()) {
      out.options[secrets->namespace_->from_option] = volume.secret->namespace_name;
    }
  } else {
    out.secret_ref = volume.secret;
  }
  return out;
}

}  // namespace translator
}  // namespace flexcsi
