// How the bridge fills the fields of CSI requests that kubelet would fill from a PV it does not
// have here: the volume capability (access mode, fsType, mount flags, mount group). The mapping
// follows kubelet-csi.md §5.2 (node side) and §4 (external-attacher, controller side).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/map.h>
#include <nlohmann/json.hpp>

#include "bridge/csi_client.h"
#include "csi.pb.h"

namespace flexcsi {

// Kubernetes access mode -> CSI access mode. `single_node_multi_writer` is whether the node (for
// NodeStage/NodePublish) or controller (for ControllerPublish) reports SINGLE_NODE_MULTI_WRITER.
csi::v1::VolumeCapability::AccessMode::Mode CsiAccessMode(const std::string& kubernetes_mode,
                                                          bool single_node_multi_writer);

struct MountCapabilitySpec {
  std::string access_mode;  // Kubernetes access mode
  std::string fs_type;
  std::vector<std::string> mount_flags;
  std::optional<int64_t> mount_group;  // sent only when the node has VOLUME_MOUNT_GROUP
};

csi::v1::VolumeCapability MountCapability(const MountCapabilitySpec& spec,
                                          bool single_node_multi_writer);

void CopyMap(const std::map<std::string, std::string>& from,
             google::protobuf::Map<std::string, std::string>* to);

// A short, secret-free description of a capability for logs and stored records.
nlohmann::json CapabilityToJson(const MountCapabilitySpec& spec);
MountCapabilitySpec CapabilityFromJson(const nlohmann::json& j);

}  // namespace flexcsi
