// NodePublishVolume and NodeUnpublishVolume: one target per pod, bound from the staging mount
// or mounted from the device, each with its own read-only flag and mount group.
#include "drivers/loopback/node_server.h"

#include <algorithm>
#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/node_mounts.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::VolumeCapability;

grpc::Status NodeServer::NodePublishVolume(grpc::ServerContext*,
                                           const csi::v1::NodePublishVolumeRequest* request,
                                           csi::v1::NodePublishVolumeResponse*) {
  return FinishRpc("NodePublishVolume", request->volume_id() + " at " + request->target_path(),
                   DoPublish(*request));
}

Status NodeServer::DoPublish(const csi::v1::NodePublishVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.target_path(), "target_path"));
  if (!request.has_volume_capability()) return InvalidArgument("volume_capability is required");
  const VolumeCapability& capability = request.volume_capability();
  FLEXCSI_RETURN_IF_ERROR(ValidateCapability(capability, "volume_capability", options_.shared()));
  FLEXCSI_RETURN_IF_ERROR(CheckMountGroupOffered(capability));
  if (options_.stage_unstage && request.staging_target_path().empty()) {
    return FailedPrecondition("staging_target_path is required: the node stages volumes");
  }

  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, capability));

  const std::string target = request.target_path();
  const bool readonly = request.readonly() || IsReadOnlyMode(capability.access_mode().mode());
  const std::string key = CapabilityKey(capability);

  // Idempotency and conflicts are judged per target: kubelet publishes one volume to every pod
  // on the node, each pod with its own read-only flag and fsGroup. Only the same target with
  // another capability or read-only flag is ALREADY_EXISTS.
  auto existing = volume->node_publications.find(target);
  if (existing != volume->node_publications.end()) {
    if (existing->second.readonly != readonly || existing->second.capability_key != key) {
      return AlreadyExists("volume " + volume->id + " is published at " + target +
                           " with a different capability or readonly flag");
    }
    if (IsMountPoint(target)) return Status::Ok();
    // Recorded but gone (e.g. someone unmounted it): publish again below.
  } else {
    const auto kSingleWriter = VolumeCapability::AccessMode::SINGLE_NODE_SINGLE_WRITER;
    const std::string single_writer_key =
        VolumeCapability::AccessMode::Mode_Name(kSingleWriter) + "|";
    for (const auto& [other_target, publication] : volume->node_publications) {
      if (capability.access_mode().mode() == kSingleWriter ||
          publication.capability_key.rfind(single_writer_key, 0) == 0) {
        return FailedPrecondition("volume " + volume->id +
                                  " is SINGLE_NODE_SINGLE_WRITER and already published at " +
                                  other_target);
      }
    }
  }

  if (options_.stage_unstage && (volume->staging_path.empty() ||
                                 !SamePath(volume->staging_path, request.staging_target_path()))) {
    return FailedPrecondition("volume " + volume->id + " is not staged at " +
                              request.staging_target_path());
  }
  Status published = options_.stage_unstage && !options_.stage_without_mount
                         ? PublishFromStagingPath(request, readonly, &*volume)
                         : PublishFromDevice(request, readonly, &*volume);
  FLEXCSI_RETURN_IF_ERROR(published);
  StatusOr<int64_t> group = ParseMountGroup(
      capability.has_mount() ? capability.mount().volume_mount_group() : std::string());
  volume->node_publications[target] = {readonly, key, group.ok() ? *group : -1};
  return state_->PutVolume(*volume).status();
}

Status NodeServer::PublishFromStagingPath(const csi::v1::NodePublishVolumeRequest& request,
                                          bool readonly, VolumeRecord* volume) {
  const std::string& target = request.target_path();
  const VolumeCapability& capability = request.volume_capability();
  if (volume->block) {
    StatusOr<std::string> device = AttachLoopDevice(catalog_->VolumeFilePath(volume->id), readonly);
    if (!device.ok()) return device.status();
    FLEXCSI_RETURN_IF_ERROR(EnsureFile(target));
    if (!IsMountPoint(target)) FLEXCSI_RETURN_IF_ERROR(BindMount(*device, target, readonly));
    if (!readonly) volume->device = *device;
    return Status::Ok();
  }
  if (!IsMountPoint(volume->staging_path)) {
    return FailedPrecondition("staging path " + volume->staging_path +
                              " is not mounted; stage the volume again");
  }
  FLEXCSI_RETURN_IF_ERROR(EnsureDirectory(target));
  if (!IsMountPoint(target)) {
    FLEXCSI_RETURN_IF_ERROR(BindMount(volume->staging_path, target, readonly));
  }
  return ApplyMountGroup(target, capability, readonly);
}

Status NodeServer::PublishFromDevice(const csi::v1::NodePublishVolumeRequest& request,
                                     bool readonly, VolumeRecord* volume) {
  const std::string& target = request.target_path();
  const VolumeCapability& capability = request.volume_capability();
  const std::string file = catalog_->VolumeFilePath(volume->id);
  // ControllerPublishVolume(readonly) makes the whole attachment read-only: then the filesystem
  // itself is mounted read-only. Otherwise it is mounted writable once and a read-only target
  // is read-only as a mount point, so that read-only and writable targets coexist (a filesystem
  // cannot be mounted read-only and writable at the same time).
  auto ro = request.publish_context().find(kPublishContextReadonly);
  const bool attachment_readonly = ro != request.publish_context().end() && ro->second == "true";
  const bool had_device = !volume->device.empty();
  std::string fs_type;
  bool formatted = false;
  StatusOr<std::string> device = AttachAndFormat(*volume, capability, &fs_type, &formatted);
  Status result = device.status();
  if (result.ok()) {
    if (volume->block) {
      StatusOr<std::string> node_device = readonly ? AttachLoopDevice(file, true) : device;
      result = node_device.status();
      if (result.ok()) result = EnsureFile(target);
      if (result.ok() && !IsMountPoint(target)) {
        result = BindMount(*node_device, target, readonly);
      }
    } else {
      result = MountDevice(*device, fs_type, formatted, target, capability,
                           readonly || attachment_readonly, attachment_readonly);
    }
  }
  if (!result.ok()) {
    // Without staging this call attached the device; a failed first publication detaches it.
    if (!options_.stage_unstage && !had_device && volume->node_publications.empty()) {
      DetachLoopDevices(file);
    }
    return result;
  }
  volume->device_seq = LoopDeviceSequence(*device);
  volume->device = *device;
  return Status::Ok();
}

grpc::Status NodeServer::NodeUnpublishVolume(grpc::ServerContext*,
                                             const csi::v1::NodeUnpublishVolumeRequest* request,
                                             csi::v1::NodeUnpublishVolumeResponse*) {
  return FinishRpc("NodeUnpublishVolume", request->volume_id() + " at " + request->target_path(),
                   DoUnpublish(*request));
}

Status NodeServer::DoUnpublish(const csi::v1::NodeUnpublishVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.target_path(), "target_path"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  const std::string target = request.target_path();
  const bool recorded = volume->node_publications.count(target) > 0;
  StatusOr<MountEntry> mounted = FindByTarget(target);
  if (!recorded && mounted.ok()) {
    // Not in the state (a crash between mounting and recording does that): undo it only when
    // it is this volume that is mounted there.
    StatusOr<std::vector<std::string>> devices =
        LoopDevicesFor(catalog_->VolumeFilePath(volume->id));
    if (!devices.ok()) return devices.status();
    if (!MountShowsDevice(*mounted, *devices)) return Status::Ok();  // not ours to undo
  }
  FLEXCSI_RETURN_IF_ERROR(UnmountAll(target));
  // The spec asks us to leave no target behind; RemoveTarget only ever removes an empty one.
  FLEXCSI_RETURN_IF_ERROR(RemoveTarget(target));
  volume->node_publications.erase(target);
  bool changed = recorded;
  if (!options_.stage_unstage && volume->node_publications.empty()) {
    // Without staging the last unpublish detaches, also when this target was never recorded:
    // a driver killed after attaching but before recording leaves a device no record names,
    // and the CO then unpublishes instead of publishing again. Not then where devices may be
    // another node's (shared store), nor while one is mounted elsewhere: that belongs to
    // another unrecorded publication, whose unpublish detaches it.
    const std::string file = catalog_->VolumeFilePath(volume->id);
    StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
    if (!devices.ok()) return devices.status();
    if (recorded ||
        (!options_.shared() && std::none_of(devices->begin(), devices->end(), DeviceIsMounted))) {
      FLEXCSI_RETURN_IF_ERROR(DetachNodeAttachment(*volume, file));
    }
    changed = changed || !volume->device.empty();
    volume->device.clear();
    volume->device_seq = 0;
  }
  if (!changed) return Status::Ok();
  return state_->PutVolume(*volume).status();
}

}  // namespace loopback
}  // namespace flexcsi
