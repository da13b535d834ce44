// Topology: where in the cluster a new volume may live, from what the driver's registration
// shows (CSINode topologyKeys, node labels), as external-provisioner's topology.go decides it.
// Pure functions over API objects; the provisioner reads the objects and feeds them in.
//
//   WaitForFirstConsumer: the selected node's labels for the driver's keys (provision_plan.cc).
//   Immediate, allowedTopologies: the class's terms.
//   Immediate, no allowedTopologies: one segment per node the driver is registered on
//     (AggregateTopology); none while the driver has keys is an error, not a volume nobody can
//     reach.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "csi.pb.h"

namespace flexcsi::controller {

using TopologySegment = std::map<std::string, std::string>;

struct RegisteredTopology {
  std::vector<std::string> keys;          // the driver's topology keys
  std::vector<TopologySegment> segments;  // one per registered node with all keys, sorted, unique
};

// How topology enters a provisioning plan.
struct TopologyOptions {
  // The driver has the VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability. Without it: no
  // topology requirement at all (allowedTopologies and the selected node are not passed on).
  bool supported = true;
  // Immediate binding without allowedTopologies: where the driver is registered. With keys but
  // no segments the plan fails (no node could use the volume).
  const RegisteredTopology* registered = nullptr;
};

// The segments a new volume must be accessible from (the three cases above, unsorted; empty for
// no requirement). `node` is the selected node (null for Immediate binding), `topology_keys` the
// driver's keys. INVALID_ARGUMENT for a malformed allowedTopologies or a selected node without
// the driver's labels or outside allowedTopologies; FAILED_PRECONDITION when the driver has keys
// but is registered on no node.
StatusOr<std::vector<TopologySegment>> RequisiteTopology(
    const nlohmann::json& storage_class, const nlohmann::json* node,
    const std::vector<std::string>& topology_keys, const TopologyOptions& options);

// `nodes` and `csinodes` are the items of a Node and a CSINode list (csinodes may be empty: the
// cluster predates CSINode, 1.9-1.13). Keys: the driver's topologyKeys in the first CSINode that
// lists the driver with keys, else `fallback_keys` (the driver's NodeGetInfo). Nodes: those
// whose CSINode lists the driver; when no CSINode does, every node. A node contributes its labels
// for the keys when it carries all of them.
RegisteredTopology AggregateTopology(const std::string& csi_driver, const nlohmann::json& nodes,
                                     const nlohmann::json& csinodes,
                                     const std::vector<std::string>& fallback_keys);

// Immediate binding's preferred order: the sorted requisite rotated by a hash of the claim name,
// with a StatefulSet ordinal ("data-web-2") added to the hash of the rest, so the replicas of a
// StatefulSet spread over the segments (external-provisioner's getPVCNameHashAndIndexOffset).
std::vector<TopologySegment> PreferredOrder(std::vector<TopologySegment> requisite,
                                            const std::string& claim_name);

// The names of the nodes whose labels satisfy one of `accessible` (the PV's nodeAffinity terms:
// every key of a segment equal). No accessible topology: every node.
std::vector<std::string> NodesMatchingTopology(
    const google::protobuf::RepeatedPtrField<csi::v1::Topology>& accessible,
    const nlohmann::json& nodes);

}  // namespace flexcsi::controller
