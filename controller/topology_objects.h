// What flexcsi-controller keeps of every Node and CSINode it watches: only what topology is
// decided from (topology.h). A Node's status (images, conditions, addresses) is most of its
// size and changes every few minutes on every node; kept whole, a 1,000-node cluster's Nodes
// would cost tens of MiB of parsed JSON for a few labels each.
#pragma once

#include <nlohmann/json.hpp>

namespace flexcsi::controller {

// {metadata: {name, labels, resourceVersion}}: what AggregateTopology, NodesMatchingTopology and
// the selected node's segment read.
nlohmann::json NodeTopologyView(nlohmann::json node);

// {metadata: {name, resourceVersion}, spec: {drivers}}: the driver entries (name, nodeID,
// topologyKeys, allocatable) that say where a driver is registered and with which keys.
nlohmann::json CsiNodeTopologyView(nlohmann::json csinode);

}  // namespace flexcsi::controller
