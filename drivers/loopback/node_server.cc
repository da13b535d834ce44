// NodeServer's shared steps (loading a volume, attaching and formatting its device, mounting
// it, detaching it) and its capability and identity answers; each RPC lives in its own file:
// node_staging.cc, node_publishing.cc, node_volume_stats.cc, node_expansion.cc.
#include "drivers/loopback/node_server.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/filesystem.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/node_mounts.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::NodeServiceCapability;
using csi::v1::VolumeCapability;

std::optional<VolumeRecord> NodeServer::LoadVolume(const std::string& volume_id) const {
  std::optional<VolumeRecord> volume = catalog_->GetVolume(volume_id);
  if (!volume || catalog_ == state_) return volume;
  std::optional<VolumeRecord> local = state_->GetVolume(volume_id);
  volume->staging_path = local ? local->staging_path : "";
  volume->staged_capability_key = local ? local->staged_capability_key : "";
  volume->device = local ? local->device : "";
  volume->device_seq = local ? local->device_seq : 0;
  volume->node_publications =
      local ? local->node_publications : decltype(volume->node_publications){};
  return volume;
}

StatusOr<std::string> NodeServer::AttachAndFormat(const VolumeRecord& volume,
                                                  const VolumeCapability& capability,
                                                  std::string* fs_type, bool* formatted) {
  *formatted = false;
  const std::string file = catalog_->VolumeFilePath(volume.id);
  StatusOr<std::string> device = AttachLoopDevice(file);
  if (!device.ok()) return device.status();
  if (volume.block) return device;

  const std::string wanted =
      capability.mount().fs_type().empty() ? volume.fs_type : capability.mount().fs_type();
  StatusOr<std::string> found = ProbeFilesystem(*device);
  if (!found.ok()) return found.status();
  if (found->empty()) {
    spdlog::info("formatting {} ({}) as {}", *device, volume.id, wanted);
    FLEXCSI_RETURN_IF_ERROR(MakeFilesystem(*device, wanted));
    *fs_type = wanted;
    *formatted = true;
  } else if (*found != wanted && !capability.mount().fs_type().empty()) {
    return FailedPrecondition("volume " + volume.id + " holds " + *found +
                              ", capability asks for " + wanted);
  } else {
    *fs_type = *found;
  }
  return device;
}

Status NodeServer::MountDevice(const std::string& device, const std::string& fs_type,
                               bool formatted, const std::string& path,
                               const VolumeCapability& capability, bool readonly,
                               bool superblock_readonly) {
  FLEXCSI_RETURN_IF_ERROR(EnsureDirectory(path));
  if (!IsMountPoint(path)) {
    // A volume restored or cloned into a larger size carries the smaller filesystem of its
    // source; grow it so the capacity the CO asked for is visible. ext4 grows best offline,
    // which is only safe while the device is mounted nowhere.
    const bool grow = !formatted && !superblock_readonly;
    if (grow && !DeviceIsMounted(device)) {
      Status grown = GrowUnmountedFilesystem(fs_type, device);
      if (!grown.ok()) spdlog::warn("growing {} on {}: {}", fs_type, device, grown.ToString());
    }
    FLEXCSI_RETURN_IF_ERROR(
        Mount(device, path, fs_type, MountOptionsFor(capability, fs_type, superblock_readonly)));
    // xfs grows only mounted, and only through a writable mount point: before a read-only
    // target is made read-only.
    if (grow && fs_type == "xfs") {
      Status grown = GrowFilesystem(fs_type, device, path);
      if (!grown.ok()) spdlog::warn("growing {} on {}: {}", fs_type, path, grown.ToString());
    }
    if (readonly && !superblock_readonly) {
      Status made_ro = MakeMountReadOnly(path);
      if (!made_ro.ok()) {
        // A writable mount where a read-only one was asked for must not survive.
        Status undone = UnmountAll(path);
        if (!undone.ok()) spdlog::warn("undoing {}: {}", path, undone.ToString());
        return made_ro;
      }
    }
  }
  return ApplyMountGroup(path, capability, readonly);
}

Status NodeServer::CheckMountGroupOffered(const VolumeCapability& capability) const {
  if (!capability.has_mount()) return Status::Ok();
  if (!options_.volume_mount_group && !capability.mount().volume_mount_group().empty()) {
    // The CO must not send it to a node without VOLUME_MOUNT_GROUP; a real driver would ignore
    // it and the workload would silently lack the group, so refusing makes the CO's bug visible.
    return InvalidArgument(
        "volume_mount_group is set but this node does not offer "
        "VOLUME_MOUNT_GROUP (--no-volume-mount-group)");
  }
  return ParseMountGroup(capability.mount().volume_mount_group()).status();
}

Status NodeServer::DetachNodeAttachment(const VolumeRecord& volume, const std::string& file) {
  if (options_.shared() && volume.device_seq != 0) {
    return DetachLoopDeviceAttachment(volume.device, volume.device_seq, file);
  }
  return DetachLoopDevices(file);
}

grpc::Status NodeServer::NodeGetCapabilities(grpc::ServerContext*,
                                             const csi::v1::NodeGetCapabilitiesRequest*,
                                             csi::v1::NodeGetCapabilitiesResponse* response) {
  std::vector<NodeServiceCapability::RPC::Type> types = {
      NodeServiceCapability::RPC::GET_VOLUME_STATS,
      NodeServiceCapability::RPC::VOLUME_CONDITION,
      NodeServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER,
  };
  if (options_.volume_mount_group) {
    types.push_back(NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP);
  }
  if (options_.stage_unstage) types.push_back(NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
  if (options_.expand) types.push_back(NodeServiceCapability::RPC::EXPAND_VOLUME);
  for (auto type : types) response->add_capabilities()->mutable_rpc()->set_type(type);
  return grpc::Status::OK;
}

grpc::Status NodeServer::NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                                     csi::v1::NodeGetInfoResponse* response) {
  response->set_node_id(options_.node_id);
  response->set_max_volumes_per_node(options_.max_volumes_per_node);
  // A shared store is reachable from every node: no node-local topology to report.
  if (!options_.shared()) {
    (*response->mutable_accessible_topology()->mutable_segments())[kTopologyNodeKey] =
        options_.node_id;
  }
  return grpc::Status::OK;
}

}  // namespace loopback
}  // namespace flexcsi
