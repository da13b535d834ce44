#include "bridge/csi_requests.h"

namespace flexcsi {

using Mode = csi::v1::VolumeCapability::AccessMode;

csi::v1::VolumeCapability::AccessMode::Mode CsiAccessMode(const std::string& kubernetes_mode,
                                                          bool single_node_multi_writer) {
  if (kubernetes_mode == "ReadWriteOnce") {
    return single_node_multi_writer ? Mode::SINGLE_NODE_MULTI_WRITER : Mode::SINGLE_NODE_WRITER;
  }
  if (kubernetes_mode == "ReadWriteOncePod") {
    return single_node_multi_writer ? Mode::SINGLE_NODE_SINGLE_WRITER : Mode::SINGLE_NODE_WRITER;
  }
  if (kubernetes_mode == "ReadOnlyMany") return Mode::MULTI_NODE_READER_ONLY;
  if (kubernetes_mode == "ReadWriteMany") return Mode::MULTI_NODE_MULTI_WRITER;
  return Mode::UNKNOWN;
}

csi::v1::VolumeCapability MountCapability(const MountCapabilitySpec& spec,
                                          bool single_node_multi_writer) {
  csi::v1::VolumeCapability cap;
  cap.mutable_access_mode()->set_mode(CsiAccessMode(spec.access_mode, single_node_multi_writer));
  auto* mount = cap.mutable_mount();
  mount->set_fs_type(spec.fs_type);
  for (const auto& flag : spec.mount_flags) mount->add_mount_flags(flag);
  if (spec.mount_group) mount->set_volume_mount_group(std::to_string(*spec.mount_group));
  return cap;
}

void CopyMap(const std::map<std::string, std::string>& from,
             google::protobuf::Map<std::string, std::string>* to) {
  for (const auto& [k, v] : from) (*to)[k] = v;
}

nlohmann::json CapabilityToJson(const MountCapabilitySpec& spec) {
  nlohmann::json j = {{"accessMode", spec.access_mode},
                      {"fsType", spec.fs_type},
                      {"mountFlags", spec.mount_flags}};
  if (spec.mount_group) j["mountGroup"] = *spec.mount_group;
  return j;
}

MountCapabilitySpec CapabilityFromJson(const nlohmann::json& j) {
  MountCapabilitySpec spec;
  spec.access_mode = j.value("accessMode", "ReadWriteOnce");
  spec.fs_type = j.value("fsType", "");
  if (j.contains("mountFlags") && j["mountFlags"].is_array()) {
    for (const auto& f : j["mountFlags"]) {
      if (f.is_string()) spec.mount_flags.push_back(f.get<std::string>());
    }
  }
  if (j.contains("mountGroup") && j["mountGroup"].is_number_integer()) {
    spec.mount_group = j["mountGroup"].get<int64_t>();
  }
  return spec;
}

}  // namespace flexcsi
