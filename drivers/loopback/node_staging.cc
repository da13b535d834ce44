// NodeStageVolume and NodeUnstageVolume: the volume's loop device attached, formatted and
// mounted once at the staging path, and all of that undone.
#include "drivers/loopback/node_server.h"

#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/node_mounts.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::VolumeCapability;

grpc::Status NodeServer::NodeStageVolume(grpc::ServerContext*,
                                         const csi::v1::NodeStageVolumeRequest* request,
                                         csi::v1::NodeStageVolumeResponse*) {
  if (!options_.stage_unstage) {
    return FinishRpc("NodeStageVolume", request->volume_id(),
                     Unimplemented("STAGE_UNSTAGE_VOLUME is disabled (--no-stage-unstage)"));
  }
  return FinishRpc("NodeStageVolume",
                   request->volume_id() + " at " + request->staging_target_path(),
                   DoStage(*request));
}

Status NodeServer::DoStage(const csi::v1::NodeStageVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.staging_target_path(), "staging_target_path"));
  if (!request.has_volume_capability()) return InvalidArgument("volume_capability is required");
  const VolumeCapability& capability = request.volume_capability();
  FLEXCSI_RETURN_IF_ERROR(ValidateCapability(capability, "volume_capability", options_.shared()));
  FLEXCSI_RETURN_IF_ERROR(CheckMountGroupOffered(capability));

  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, capability));
  const std::string file = catalog_->VolumeFilePath(volume->id);
  auto hinted = request.publish_context().find(kPublishContextBackingFile);
  if (hinted != request.publish_context().end() && hinted->second != file) {
    return InvalidArgument("publish_context names backing file " + hinted->second + ", volume " +
                           volume->id + " lives in " + file);
  }
  auto ro = request.publish_context().find(kPublishContextReadonly);
  const bool readonly = IsReadOnlyMode(capability.access_mode().mode()) ||
                        (ro != request.publish_context().end() && ro->second == "true");
  const std::string path = request.staging_target_path();
  const std::string key = CapabilityKey(capability);

  if (!volume->staging_path.empty()) {
    if (!SamePath(volume->staging_path, path)) {
      return FailedPrecondition("volume " + volume->id + " is already staged at " +
                                volume->staging_path);
    }
    if (volume->staged_capability_key != key) {
      return AlreadyExists("volume " + volume->id + " is staged at " + path +
                           " with a different capability");
    }
    // Same request again: fall through and re-establish whatever is missing.
  }

  const bool had_device = !volume->device.empty();
  std::string fs_type;
  bool formatted = false;
  StatusOr<std::string> device = AttachAndFormat(*volume, capability, &fs_type, &formatted);
  Status result = device.status();
  // --stage-without-mount: the device is attached and formatted, the staging path stays an
  // empty directory, and NodePublish mounts the device at each target.
  if (result.ok() && !volume->block && !options_.stage_without_mount) {
    result = MountDevice(*device, fs_type, formatted, path, capability, readonly, readonly);
  }
  if (!result.ok()) {
    // Leave no half-staged volume behind: a device we attached for nothing is detached.
    if (!had_device && volume->node_publications.empty() && !IsMountPoint(path)) {
      DetachLoopDevices(file);
    }
    return result;
  }
  volume->staging_path = path;
  volume->staged_capability_key = key;
  volume->device_seq = LoopDeviceSequence(*device);
  volume->device = *device;
  return state_->PutVolume(*volume).status();
}

grpc::Status NodeServer::NodeUnstageVolume(grpc::ServerContext*,
                                           const csi::v1::NodeUnstageVolumeRequest* request,
                                           csi::v1::NodeUnstageVolumeResponse*) {
  if (!options_.stage_unstage) {
    return FinishRpc("NodeUnstageVolume", request->volume_id(),
                     Unimplemented("STAGE_UNSTAGE_VOLUME is disabled (--no-stage-unstage)"));
  }
  return FinishRpc("NodeUnstageVolume",
                   request->volume_id() + " at " + request->staging_target_path(),
                   DoUnstage(*request));
}

Status NodeServer::DoUnstage(const csi::v1::NodeUnstageVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.staging_target_path(), "staging_target_path"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  const std::string path = request.staging_target_path();
  if (!volume->staging_path.empty() && !SamePath(volume->staging_path, path)) {
    return Status::Ok();  // nothing of this volume is staged at that path
  }
  if (!volume->node_publications.empty()) {
    return FailedPrecondition("volume " + volume->id + " is still published at " +
                              volume->node_publications.begin()->first);
  }
  const std::string file = catalog_->VolumeFilePath(volume->id);
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
  if (!devices.ok()) return devices.status();
  // Unmount only what is ours: a mount of one of this volume's loop devices.
  StatusOr<MountEntry> mounted = FindByTarget(path);
  if (mounted.ok() && MountShowsDevice(*mounted, *devices)) {
    FLEXCSI_RETURN_IF_ERROR(UnmountAll(path));
  }
  FLEXCSI_RETURN_IF_ERROR(DetachNodeAttachment(*volume, file));
  if (volume->staging_path.empty() && volume->device.empty()) return Status::Ok();
  // With a shared store this node's copy of the record holds only node-side fields: once
  // nothing is left on the node, the copy goes (the catalog keeps the volume).
  if (catalog_ != state_) return state_->RemoveVolume(volume->id);
  volume->staging_path.clear();
  volume->staged_capability_key.clear();
  volume->device.clear();
  volume->device_seq = 0;
  return state_->PutVolume(*volume).status();
}

}  // namespace loopback
}  // namespace flexcsi
