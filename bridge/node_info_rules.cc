#include "bridge/node_info_rules.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

namespace flexcsi {
namespace {

using nlohmann::json;

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

const json& Metadata(const json& object, const char* key) {
  return Field(Field(object, "metadata"), key);
}

std::string StringAt(const json& object, const char* key) {
  const json& v = Field(object, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// The annotation's map; an absent annotation is an empty map.
StatusOr<json> NodeIdMap(const json& node) {
  const json& value = Field(Metadata(node, "annotations"), kNodeIdAnnotation);
  if (!value.is_string() || value.get<std::string>().empty()) return json::object();
  json parsed = json::parse(value.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return FailedPrecondition(
        std::string("annotation ") + kNodeIdAnnotation +
        " on the node is not a JSON map of driver to node id: " + value.get<std::string>());
  }
  return parsed;
}

json SortedKeys(const std::map<std::string, std::string>& topology) {
  json keys = json::array();
  for (const auto& [key, value] : topology) keys.push_back(key);  // std::map: sorted
  return keys;
}

std::set<std::string> StringSet(const json& list) {
  std::set<std::string> out;
  if (list.is_array()) {
    for (const auto& v : list) {
      if (v.is_string()) out.insert(v.get<std::string>());
    }
  }
  return out;
}

const json* FindEntry(const json& csinode, const std::string& driver) {
  const json& drivers = Field(Field(csinode, "spec"), "drivers");
  if (!drivers.is_array()) return nullptr;
  for (const auto& entry : drivers) {
    if (StringAt(entry, "name") == driver) return &entry;
  }
  return nullptr;
}

bool SameEntry(const json& entry, const DriverNodeInfo& info) {
  const json want = CsiNodeDriverEntry(info);
  return StringAt(entry, "nodeID") == info.node_id &&
         StringSet(Field(entry, "topologyKeys")) == StringSet(want.value("topologyKeys", json())) &&
         Field(entry, "allocatable") ==
             (want.contains("allocatable") ? want["allocatable"] : json());
}

// Topology keys that only `driver`'s CSINode entry lists: labels it may move.
std::set<std::string> OwnTopologyKeys(const json& csinode, const std::string& driver) {
  std::set<std::string> own, others;
  const json& drivers = Field(Field(csinode, "spec"), "drivers");
  if (drivers.is_array()) {
    for (const auto& e : drivers) {
      for (const auto& k : StringSet(Field(e, "topologyKeys"))) {
        (StringAt(e, "name") == driver ? own : others).insert(k);
      }
    }
  }
  for (const auto& k : others) own.erase(k);
  return own;
}

}  // namespace

StatusOr<std::optional<json>> NodeRegistrationPatch(const json& node, const json& csinode,
                                                    const DriverNodeInfo& info) {
  auto ids = NodeIdMap(node);
  if (!ids.ok()) return ids.status();
  const std::set<std::string> own = OwnTopologyKeys(csinode, info.driver);
  json metadata = json::object();
  const json& labels = Metadata(node, "labels");
  json new_labels = json::object();
  for (const auto& [key, value] : info.topology) {
    const json& existing = Field(labels, key.c_str());
    if (existing.is_string() && existing.get<std::string>() != value && !own.count(key)) {
      return FailedPrecondition(
          "topology label collision on the node: driver " + info.driver + " reports " + key + "=" +
          value + " but the node has " + key + "=" + existing.get<std::string>() +
          " (another driver or a person set it; flexcsi never overwrites it)");
    }
    if (!existing.is_string() || existing.get<std::string>() != value) new_labels[key] = value;
  }
  if (!new_labels.empty()) metadata["labels"] = new_labels;
  if (StringAt(*ids, info.driver.c_str()) != info.node_id) {
    (*ids)[info.driver] = info.node_id;
    metadata["annotations"] = {{kNodeIdAnnotation, ids->dump()}};
  }
  if (metadata.empty()) return std::optional<json>();
  metadata["resourceVersion"] = Metadata(node, "resourceVersion");
  return std::optional<json>(json{{"metadata", metadata}});
}

std::optional<json> NodeUnregistrationPatch(const json& node, const json& csinode,
                                            const std::string& driver) {
  json metadata = json::object();
  auto ids = NodeIdMap(node);
  if (ids.ok() && ids->contains(driver)) {
    ids->erase(driver);
    metadata["annotations"] = {
        {kNodeIdAnnotation, ids->empty() ? json(nullptr) : json(ids->dump())}};
  }
  // Labels are removed only for keys this driver's entry listed and no other entry lists.
  if (const json* entry = FindEntry(csinode, driver)) {
    std::set<std::string> others;
    for (const auto& e : Field(Field(csinode, "spec"), "drivers")) {
      if (StringAt(e, "name") != driver) {
        for (const auto& k : StringSet(Field(e, "topologyKeys"))) others.insert(k);
      }
    }
    json labels = json::object();
    for (const auto& key : StringSet(Field(*entry, "topologyKeys"))) {
      if (!others.count(key) && Field(Metadata(node, "labels"), key.c_str()).is_string()) {
        labels[key] = nullptr;
      }
    }
    if (!labels.empty()) metadata["labels"] = labels;
  }
  if (metadata.empty()) return std::nullopt;
  metadata["resourceVersion"] = Metadata(node, "resourceVersion");
  return json{{"metadata", metadata}};
}

json CsiNodeDriverEntry(const DriverNodeInfo& info) {
  json entry = {{"name", info.driver}, {"nodeID", info.node_id}};
  if (!info.topology.empty()) entry["topologyKeys"] = SortedKeys(info.topology);
  if (info.max_volumes > 0) {
    // The API field is an int32; kubelet caps larger limits the same way.
    entry["allocatable"] = {
        {"count", std::min<int64_t>(info.max_volumes, std::numeric_limits<int32_t>::max())}};
  }
  return entry;
}

json NewCsiNode(const json& node, const DriverNodeInfo& info) {
  const std::string name = StringAt(Field(node, "metadata"), "name");
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "CSINode"},
          {"metadata",
           {{"name", name},
            {"ownerReferences",
             {{{"apiVersion", "v1"},
               {"kind", "Node"},
               {"name", name},
               {"uid", StringAt(Field(node, "metadata"), "uid")}}}}}},
          {"spec", {{"drivers", {CsiNodeDriverEntry(info)}}}}};
}

std::optional<json> CsiNodeWithDriver(const json& csinode, const DriverNodeInfo& info) {
  const json* existing = FindEntry(csinode, info.driver);
  if (existing != nullptr && SameEntry(*existing, info)) return std::nullopt;
  json updated = csinode;
  json drivers = json::array();
  for (const auto& e : Field(Field(csinode, "spec"), "drivers")) {
    if (StringAt(e, "name") != info.driver) drivers.push_back(e);
  }
  drivers.push_back(CsiNodeDriverEntry(info));
  updated["spec"]["drivers"] = drivers;
  return updated;
}

std::optional<json> CsiNodeWithoutDriver(const json& csinode, const std::string& driver) {
  if (FindEntry(csinode, driver) == nullptr) return std::nullopt;
  json updated = csinode;
  json drivers = json::array();
  for (const auto& e : Field(Field(csinode, "spec"), "drivers")) {
    if (StringAt(e, "name") != driver) drivers.push_back(e);
  }
  updated["spec"]["drivers"] = drivers;
  return updated;
}

RegisteredDriver ReadRegistration(const json& node, const json& csinode,
                                  const DriverNodeInfo& expected) {
  RegisteredDriver out;
  if (auto ids = NodeIdMap(node); ids.ok())
    out.annotation_node_id = StringAt(*ids, expected.driver.c_str());
  if (const json* entry = FindEntry(csinode, expected.driver)) {
    out.csinode_node_id = StringAt(*entry, "nodeID");
  }
  out.labels_match =
      std::all_of(expected.topology.begin(), expected.topology.end(), [&](const auto& segment) {
        const json& v = Field(Metadata(node, "labels"), segment.first.c_str());
        return v.is_string() && v.get<std::string>() == segment.second;
      });
  return out;
}

}  // namespace flexcsi
