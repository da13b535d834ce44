#include "controller/topology.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

#include "common/json_access.h"
#include "common/status.h"

namespace flexcsi::controller {
namespace {

// The driver's entry in a CSINode, or null.
const nlohmann::json* DriverEntry(const nlohmann::json& csinode, const std::string& csi_driver) {
  const auto& drivers = JField(JField(csinode, "spec"), "drivers");
  if (!drivers.is_array()) return nullptr;
  for (const auto& d : drivers) {
    if (JStr(d, "name") == csi_driver) return &d;
  }
  return nullptr;
}

std::vector<std::string> Keys(const nlohmann::json& entry) {
  std::vector<std::string> keys;
  const auto& list = JField(entry, "topologyKeys");
  if (list.is_array()) {
    for (const auto& k : list) {
      if (k.is_string()) keys.push_back(k.get<std::string>());
    }
  }
  return keys;
}

// FNV-1, 32 bits (Go's hash/fnv New32, which external-provisioner uses).
uint32_t Fnv1(const std::string& text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) {
    h *= 16777619u;
    h ^= c;
  }
  return h;
}

// allowedTopologies -> the list of topology segments it permits (cartesian product of each
// term's matchLabelExpressions values).
StatusOr<std::vector<TopologySegment>> AllowedSegments(const nlohmann::json& storage_class) {
  std::vector<TopologySegment> out;
  const auto& terms = JField(storage_class, "allowedTopologies");
  if (!terms.is_array()) return out;
  for (const auto& term : terms) {
    std::vector<TopologySegment> combos = {{}};
    const auto& exprs = JField(term, "matchLabelExpressions");
    if (!exprs.is_array()) continue;
    for (const auto& expr : exprs) {
      const std::string key = JStr(expr, "key");
      const auto& values = JField(expr, "values");
      if (key.empty() || !values.is_array() || values.empty()) {
        return InvalidArgument(
            "allowedTopologies: every matchLabelExpressions entry needs a key "
            "and values");
      }
      std::vector<TopologySegment> next;
      for (const auto& c : combos) {
        for (const auto& v : values) {
          auto copy = c;
          copy[key] = v.is_string() ? v.get<std::string>() : v.dump();
          next.push_back(copy);
        }
      }
      combos = std::move(next);
    }
    for (auto& c : combos) {
      if (!c.empty()) out.push_back(std::move(c));
    }
  }
  return out;
}

// True when `segment` has no key whose value differs from `allowed`'s.
bool SegmentWithinAllowed(const TopologySegment& segment, const TopologySegment& allowed) {
  for (const auto& [k, v] : allowed) {
    auto it = segment.find(k);
    if (it != segment.end() && it->second != v) return false;
  }
  return true;
}

// WaitForFirstConsumer: the selected node's labels for the driver's keys, which must lie within
// allowedTopologies when the class has any.
StatusOr<TopologySegment> SelectedNodeSegment(const nlohmann::json& node,
                                              const std::vector<std::string>& topology_keys,
                                              const std::vector<TopologySegment>& allowed) {
  const std::string node_name = JStr(JField(node, "metadata"), "name");
  const auto& labels = JField(JField(node, "metadata"), "labels");
  TopologySegment segment;
  for (const auto& key : topology_keys) {
    if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) {
      return InvalidArgument("selected node " + node_name + " has no topology label " + key +
                             " (is the driver's node plugin registered there?)");
    }
    segment[key] = labels[key].get<std::string>();
  }
  if (!allowed.empty()) {
    bool ok = false;
    for (const auto& a : allowed) ok |= SegmentWithinAllowed(segment, a);
    if (!ok) {
      return InvalidArgument("selected node " + node_name +
                             " is outside the StorageClass's allowedTopologies");
    }
  }
  return segment;
}

}  // namespace

RegisteredTopology AggregateTopology(const std::string& csi_driver, const nlohmann::json& nodes,
                                     const nlohmann::json& csinodes,
                                     const std::vector<std::string>& fallback_keys) {
  RegisteredTopology out;
  std::set<std::string> registered;
  if (csinodes.is_array()) {
    for (const auto& csinode : csinodes) {
      const nlohmann::json* entry = DriverEntry(csinode, csi_driver);
      if (entry == nullptr) continue;
      registered.insert(JStr(JField(csinode, "metadata"), "name"));
      if (out.keys.empty()) out.keys = Keys(*entry);
    }
  }
  if (out.keys.empty()) out.keys = fallback_keys;
  if (out.keys.empty() || !nodes.is_array()) return out;
  std::set<TopologySegment> segments;
  for (const auto& node : nodes) {
    const auto& meta = JField(node, "metadata");
    if (!registered.empty() && !registered.count(JStr(meta, "name"))) continue;
    const auto& labels = JField(meta, "labels");
    TopologySegment segment;
    for (const auto& key : out.keys) {
      const std::string value = JStr(labels, key.c_str());
      if (value.empty()) break;
      segment[key] = value;
    }
    if (segment.size() == out.keys.size()) segments.insert(std::move(segment));
  }
  out.segments.assign(segments.begin(), segments.end());
  return out;
}

std::vector<TopologySegment> PreferredOrder(std::vector<TopologySegment> requisite,
                                            const std::string& claim_name) {
  if (requisite.empty()) return requisite;
  std::sort(requisite.begin(), requisite.end());
  requisite.erase(std::unique(requisite.begin(), requisite.end()), requisite.end());
  // "ClaimName-StatefulSetName-Id": hash StatefulSetName (the part after the next dash back),
  // offset by Id, so all claims of one replica land together and replicas spread.
  std::string base = claim_name;
  uint32_t ordinal = 0;
  const auto dash = claim_name.rfind('-');
  const std::string id = dash == std::string::npos ? "" : claim_name.substr(dash + 1);
  if (!id.empty() && id.size() <= 10 &&
      std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); }) &&
      std::stoull(id) <= UINT32_MAX) {
    ordinal = static_cast<uint32_t>(std::stoull(id));
    base = claim_name.substr(0, dash);
    const auto prev = base.rfind('-');
    if (prev != std::string::npos) base = base.substr(prev + 1);
  }
  const size_t shift = (Fnv1(base) + ordinal) % requisite.size();
  std::rotate(requisite.begin(), requisite.begin() + static_cast<long>(shift), requisite.end());
  return requisite;
}

StatusOr<std::vector<TopologySegment>> RequisiteTopology(
    const nlohmann::json& storage_class, const nlohmann::json* node,
    const std::vector<std::string>& topology_keys, const TopologyOptions& options) {
  // A malformed allowedTopologies is refused even for a driver that would not be told.
  auto allowed = AllowedSegments(storage_class);
  if (!allowed.ok()) return allowed.status();
  if (!options.supported) {
    // No accessibility constraints: the driver is not told where, and the PV says nowhere.
    return std::vector<TopologySegment>{};
  }
  if (node != nullptr && !topology_keys.empty()) {
    auto segment = SelectedNodeSegment(*node, topology_keys, *allowed);
    if (!segment.ok()) return segment.status();
    return std::vector<TopologySegment>{*segment};
  }
  if (!allowed->empty()) return *allowed;
  const RegisteredTopology* registered = options.registered;
  if (node == nullptr && registered != nullptr && !registered->keys.empty()) {
    if (registered->segments.empty()) {
      std::string keys;
      for (const auto& k : registered->keys) keys += (keys.empty() ? "" : ", ") + k;
      return FailedPrecondition("no node has the driver's topology labels (" + keys +
                                "); is the driver registered on any node?");
    }
    return registered->segments;
  }
  return std::vector<TopologySegment>{};
}

std::vector<std::string> NodesMatchingTopology(
    const google::protobuf::RepeatedPtrField<csi::v1::Topology>& accessible,
    const nlohmann::json& nodes) {
  std::vector<std::string> out;
  if (!nodes.is_array()) return out;
  for (const auto& node : nodes) {
    const auto& meta = JField(node, "metadata");
    const auto& labels = JField(meta, "labels");
    bool fits = accessible.empty();
    for (const auto& topology : accessible) {
      bool all = true;
      for (const auto& [k, v] : topology.segments()) all &= JStr(labels, k.c_str()) == v;
      fits |= all;
    }
    if (fits) out.push_back(JStr(meta, "name"));
  }
  return out;
}

}  // namespace flexcsi::controller
