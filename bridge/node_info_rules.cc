#include "bridge/node_info_rules.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "common/json_access.h"

namespace flexcsi {
namespace {

using nlohmann::json;

const json& Metadata(const json& object, const char* key) {
  return JField(JField(object, "metadata"), key);
}

// The annotation's map; an absent annotation is an empty map.
StatusOr<json> NodeIdMap(const json& node) {
  const json& value = JField(Metadata(node, "annotations"), kNodeIdAnnotation);
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
  const json& drivers = JField(JField(csinode, "spec"), "drivers");
  if (!drivers.is_array()) return nullptr;
  for (const auto& entry : drivers) {
    if (JStr(entry, "name") == driver) return &entry;
  }
  return nullptr;
}

// `csinode` with every entry but `driver`'s (spec.drivers always an array).
json WithoutEntry(const json& csinode, const std::string& driver) {
  json updated = csinode;
  json drivers = json::array();
  for (const auto& e : JField(JField(csinode, "spec"), "drivers")) {
    if (JStr(e, "name") != driver) drivers.push_back(e);
  }
  updated["spec"]["drivers"] = drivers;
  return updated;
}

bool SameEntry(const json& entry, const DriverNodeInfo& info) {
  const json want = CsiNodeDriverEntry(info);
  return JStr(entry, "nodeID") == info.node_id &&
         StringSet(JField(entry, "topologyKeys")) ==
             StringSet(want.value("topologyKeys", json())) &&
         JField(entry, "allocatable") ==
             (want.contains("allocatable") ? want["allocatable"] : json());
}

// Topology keys that only `driver`'s CSINode entry lists: labels it may move.
std::set<std::string> OwnTopologyKeys(const json& csinode, const std::string& driver) {
  std::set<std::string> own, others;
  const json& drivers = JField(JField(csinode, "spec"), "drivers");
  if (drivers.is_array()) {
    for (const auto& e : drivers) {
      for (const auto& k : StringSet(JField(e, "topologyKeys"))) {
        (JStr(e, "name") == driver ? own : others).insert(k);
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
    const json& existing = JField(labels, key.c_str());
    if (existing.is_string() && existing.get<std::string>() != value && !own.count(key)) {
      return FailedPrecondition(
          "topology label collision on the node: driver " + info.driver + " reports " + key + "=" +
          value + " but the node has " + key + "=" + existing.get<std::string>() +
          " (another driver or a person set it; flexcsi never overwrites it)");
    }
    if (!existing.is_string() || existing.get<std::string>() != value) new_labels[key] = value;
  }
  if (!new_labels.empty()) metadata["labels"] = new_labels;
  if (JStr(*ids, info.driver.c_str()) != info.node_id) {
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
  json labels = json::object();
  for (const auto& key : OwnTopologyKeys(csinode, driver)) {
    if (JField(Metadata(node, "labels"), key.c_str()).is_string()) labels[key] = nullptr;
  }
  if (!labels.empty()) metadata["labels"] = labels;
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

json NewCsiNode(const json& node, const DriverNodeInfo& info, const std::string& group_version) {
  const std::string name = JStr(JField(node, "metadata"), "name");
  return {{"apiVersion", group_version},
          {"kind", "CSINode"},
          {"metadata",
           {{"name", name},
            {"ownerReferences",
             {{{"apiVersion", "v1"},
               {"kind", "Node"},
               {"name", name},
               {"uid", JStr(JField(node, "metadata"), "uid")}}}}}},
          {"spec", {{"drivers", {CsiNodeDriverEntry(info)}}}}};
}

std::optional<json> CsiNodeWithDriver(const json& csinode, const DriverNodeInfo& info) {
  const json* existing = FindEntry(csinode, info.driver);
  if (existing != nullptr && SameEntry(*existing, info)) return std::nullopt;
  json updated = WithoutEntry(csinode, info.driver);
  updated["spec"]["drivers"].push_back(CsiNodeDriverEntry(info));
  return updated;
}

std::optional<json> CsiNodeWithoutDriver(const json& csinode, const std::string& driver) {
  if (FindEntry(csinode, driver) == nullptr) return std::nullopt;
  return WithoutEntry(csinode, driver);
}

RegisteredDriver ReadRegistration(const json& node, const json& csinode,
                                  const DriverNodeInfo& expected) {
  RegisteredDriver out;
  if (auto ids = NodeIdMap(node); ids.ok())
    out.annotation_node_id = JStr(*ids, expected.driver.c_str());
  if (const json* entry = FindEntry(csinode, expected.driver)) {
    out.csinode_node_id = JStr(*entry, "nodeID");
  }
  out.labels_match =
      std::all_of(expected.topology.begin(), expected.topology.end(), [&](const auto& segment) {
        const json& v = JField(Metadata(node, "labels"), segment.first.c_str());
        return v.is_string() && v.get<std::string>() == segment.second;
      });
  return out;
}

}  // namespace flexcsi
