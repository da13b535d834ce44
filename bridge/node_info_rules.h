// How a CSI driver is registered on its Node, by the rules of kubelet's node info manager
// (pkg/volume/csi/nodeinfomanager), which a FlexVolume node has no kubelet CSI plugin to apply:
//   - the Node's annotation csi.volume.kubernetes.io/nodeid: a JSON map of driver -> node id;
//   - one Node label per accessible topology segment; an existing label with another value is a
//     collision and an error, never overwritten, unless it is this driver's own (its CSINode
//     entry lists the key and no other driver's does): a driver restarted with a new node id
//     moves its own labels, as it must, since PVs are placed by them;
//   - the CSINode object named after the node (owned by the Node): one `drivers` entry per
//     driver with nodeID, topologyKeys and allocatable.count (max_volumes_per_node, when > 0).
// Entries, labels and map keys of other drivers are never touched. Pure functions over the API's
// JSON, so the rules are tested without a cluster; NodeRegistrar applies them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

inline constexpr char kNodeIdAnnotation[] = "csi.volume.kubernetes.io/nodeid";

// What NodeGetInfo and GetPluginInfo said about one driver on this node.
struct DriverNodeInfo {
  std::string driver;  // CSI driver name
  std::string node_id;
  std::map<std::string, std::string> topology;  // accessible_topology.segments
  int64_t max_volumes = 0;                      // 0: no limit reported

  bool operator==(const DriverNodeInfo& o) const {
    return driver == o.driver && node_id == o.node_id && topology == o.topology &&
           max_volumes == o.max_volumes;
  }
};

// The merge patch that registers `info` on `node`, or nullopt when the node already says all of
// it. It carries the node's resourceVersion, so a concurrent change is a 409 to retry.
// `csinode` (null or {} when there is none) tells which labels are the driver's own.
// FAILED_PRECONDITION on a topology label collision or an annotation that is not a JSON map.
StatusOr<std::optional<nlohmann::json>> NodeRegistrationPatch(const nlohmann::json& node,
                                                              const nlohmann::json& csinode,
                                                              const DriverNodeInfo& info);

// The merge patch that removes the driver's node-id entry and the topology labels only it
// registered (keys no other driver's CSINode entry lists), or nullopt when there is nothing to
// remove. `csinode` may be null (no CSINode, or not served).
std::optional<nlohmann::json> NodeUnregistrationPatch(const nlohmann::json& node,
                                                      const nlohmann::json& csinode,
                                                      const std::string& driver);

// The CSINode driver entry for `info`, as kubelet writes it.
nlohmann::json CsiNodeDriverEntry(const DriverNodeInfo& info);

// A new CSINode for `node` (name, owner reference) holding `info`'s entry, in `group_version`
// (storage.k8s.io/v1, or v1beta1 on 1.14-1.16: the same fields there).
nlohmann::json NewCsiNode(const nlohmann::json& node, const DriverNodeInfo& info,
                          const std::string& group_version = "storage.k8s.io/v1");

// `csinode` with `info`'s entry added or replaced, or nullopt when it is already there as is.
std::optional<nlohmann::json> CsiNodeWithDriver(const nlohmann::json& csinode,
                                                const DriverNodeInfo& info);

// `csinode` without the driver's entry, or nullopt when it has none.
std::optional<nlohmann::json> CsiNodeWithoutDriver(const nlohmann::json& csinode,
                                                   const std::string& driver);

// How `node` and `csinode` (may be null) register `driver` now: its node id in the annotation
// ("" when absent) and in the CSINode entry ("" when absent). For doctor and re-verification.
struct RegisteredDriver {
  std::string annotation_node_id;
  std::string csinode_node_id;
  bool labels_match = false;   // every topology segment of `expected` is a label on the node
  bool csinode_served = true;  // false on clusters before 1.14: only labels and annotation

  bool Matches(const DriverNodeInfo& expected) const {
    return annotation_node_id == expected.node_id && labels_match &&
           (!csinode_served || csinode_node_id == expected.node_id);
  }
};
RegisteredDriver ReadRegistration(const nlohmann::json& node, const nlohmann::json& csinode,
                                  const DriverNodeInfo& expected);

}  // namespace flexcsi
