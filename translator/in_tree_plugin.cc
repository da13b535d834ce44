#include "translator/in_tree_plugin.h"

namespace flexcsi {
namespace translator {

bool InTreePlugin::CanSupport(JsonView pv) const {
  JsonView spec = FindField(pv, "spec");
  return spec && FindField(spec, SourceField());
}

bool InTreePlugin::CanSupportInline(const Json& volume) const {
  return FindField(volume, SourceField()) != nullptr;
}

const Json& InlineSource(const Json& volume, const char* field) {
  return *ObjectField(volume, field, "volume");
}

const Json& CsiSource(const Json& pv) {
  const Json* spec = ObjectField(pv, "spec", "");
  return *ObjectField(*spec, "csi", "spec");
}

void SwapVolumeSource(Json& pv, const char* remove_field, const char* add_field, Json source) {
  Json& spec = pv["spec"];
  spec.erase(remove_field);
  spec[add_field] = std::move(source);
}

void ReplaceSourceWithCsi(const char* in_tree_field, Json csi, SpecChanges* changes) {
  changes->Remove(in_tree_field);
  changes->Set("csi", std::move(csi));
}

Json NewInlinePV(const std::string& name, Json csi, const char* access_mode) {
  Json pv = Json::object();
  pv["metadata"] = Json{{"name", name}};
  pv["spec"] = Json{{"csi", std::move(csi)}, {"accessModes", Json::array({access_mode})}};
  return pv;
}

void DropIfEmpty(Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  if (it->is_null() || ((it->is_object() || it->is_array()) && it->empty())) obj.erase(it);
}

std::string PVName(JsonView pv) {
  JsonView metadata = ObjectField(pv, "metadata", "");
  return metadata ? StringField(metadata, "name", "metadata") : std::string();
}

bool LookupAnnotation(JsonView pv, const std::string& key, std::string* value) {
  JsonView metadata = ObjectField(pv, "metadata", "");
  if (!metadata) return false;
  return LookupStringInMap(metadata, "annotations", key, "metadata", value);
}

void SetAnnotation(Json& pv, const std::string& key, const std::string& value) {
  Json& metadata = EnsureObjectField(pv, "metadata", "");
  Json& annotations = EnsureObjectField(metadata, "annotations", "metadata");
  annotations[key] = value;
}

}  // namespace translator
}  // namespace flexcsi

namespace flexcsi {
namespace translator {

Json NewCsiSource(std::string driver, std::string handle, std::string fs_type, bool read_only,
                  std::map<std::string, std::string> attributes) {
  Json csi = Json::object();
  auto& members = csi.get_ref<Json::object_t&>();
  members.emplace("driver", std::move(driver));
  members.emplace("volumeHandle", std::move(handle));
  if (read_only) members.emplace("readOnly", true);
  if (!fs_type.empty()) members.emplace("fsType", std::move(fs_type));
  if (!attributes.empty()) {
    Json map = Json::object();
    auto& entries = map.get_ref<Json::object_t&>();
    // The keys are copied (a map's keys are const), the values moved.
    for (auto& [key, value] : attributes)
      entries.emplace_hint(entries.end(), key, std::move(value));
    members.emplace("volumeAttributes", std::move(map));
  }
  return csi;
}

Json NewSecretRef(const std::string& name, const std::string& ns) {
  Json ref = Json::object();
  if (!name.empty()) ref["name"] = name;
  if (!ns.empty()) ref["namespace"] = ns;
  return ref;
}

}  // namespace translator
}  // namespace flexcsi
