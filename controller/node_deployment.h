// Node deployment (external-provisioner's --node-deployment): one flexcsi-controller per node,
// each reaching its own node's instance of a node-local driver (TopoLVM, LVM or local-path
// drivers, csi-loopback node-local), provisions only for its node and deletes only its node's
// volumes. These are the ownership decisions, pure so that they are unit-tested:
//   claim: its selected node (GA or 1.11's alpha annotation) is this node -> ours; another node
//     -> silently someone else's; none -> nobody's yet (an Immediate claim is then claimed by
//     writing this node into the annotation with the read resourceVersion, so one node wins).
//   PV: its nodeAffinity is satisfied by this node's topology (the driver's NodeGetInfo
//     accessible topology) -> ours to delete or expand. A PV without nodeAffinity is nobody's:
//     every node instance would otherwise delete it, on a driver that holds it on one node only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "controller/topology.h"

namespace flexcsi::controller {

struct NodeDeployment {
  std::string node_name;
  // Immediate claims (no selected node) are claimed for this node (external-provisioner's
  // --node-deployment-immediate-binding, default on); off: left to whoever selects a node.
  bool immediate_binding = true;
  // Wait before claiming an Immediate claim: random in [0, base), doubling per lost race, at
  // most max (external-provisioner's --node-deployment-base-delay / -max-delay).
  std::chrono::milliseconds base_delay{20000};
  std::chrono::milliseconds max_delay{60000};
};

enum class ClaimOwner { kThisNode, kOtherNode, kNobodyYet };

// Whose claim it is, by its selected node.
ClaimOwner OwnerOfClaim(const nlohmann::json& claim, const std::string& node_name);

// Whether the PV's required nodeAffinity is satisfied by a node carrying exactly the labels of
// `node_topology` (the node's segment for the driver's keys). Terms are ORed, expressions ANDed;
// operators In, NotIn, Exists, DoesNotExist (Gt/Lt never match). No nodeAffinity, or an empty
// topology: false (see above).
bool VolumeIsOnNode(const nlohmann::json& pv, const TopologySegment& node_topology);

// Whether an Immediate claim of this class may be claimed for this node: a class without
// allowedTopologies allows every node; otherwise one of its terms must hold every key of the
// term with one of its values in `node_topology`.
bool ClassAllowsNode(const nlohmann::json& storage_class, const TopologySegment& node_topology);

// How long to wait before the attempt to claim an Immediate claim, after `lost_races` earlier
// attempts lost to a conflict: `random01` * min(base * 2^lost_races, max).
std::chrono::milliseconds OwnershipDelay(const NodeDeployment& config, int lost_races,
                                         double random01);

}  // namespace flexcsi::controller
