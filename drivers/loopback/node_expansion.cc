// NodeExpandVolume: the loop devices re-read at the grown backing file's size, and the
// filesystem grown through a writable mount (or offline, for a staged volume mounted nowhere).
#include "drivers/loopback/node_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/filesystem.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/node_mounts.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

grpc::Status NodeServer::NodeExpandVolume(grpc::ServerContext*,
                                          const csi::v1::NodeExpandVolumeRequest* request,
                                          csi::v1::NodeExpandVolumeResponse* response) {
  if (!options_.expand) {
    return FinishRpc("NodeExpandVolume", request->volume_id(),
                     Unimplemented("volume expansion is disabled (--no-expand)"));
  }
  return FinishRpc("NodeExpandVolume", request->volume_id() + " at " + request->volume_path(),
                   DoExpand(*request, response));
}

Status NodeServer::DoExpand(const csi::v1::NodeExpandVolumeRequest& request,
                            csi::v1::NodeExpandVolumeResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_path(), "volume_path"));
  if (request.has_volume_capability()) {
    FLEXCSI_RETURN_IF_ERROR(
        ValidateCapability(request.volume_capability(), "volume_capability", options_.shared()));
  }
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  if (request.has_volume_capability()) {
    Status matches = CheckAccessTypeMatches(*volume, request.volume_capability());
    if (!matches.ok()) return InvalidArgument(matches.message());
  }
  const std::string path = request.volume_path();
  if (!PathExists(path)) return NotFound("volume path " + path + " does not exist");
  if (request.has_capacity_range()) {
    const auto& range = request.capacity_range();
    if (range.required_bytes() > volume->capacity_bytes) {
      return OutOfRange("volume " + volume->id + " has " + std::to_string(volume->capacity_bytes) +
                        " bytes; expand it with ControllerExpandVolume first");
    }
    if (range.limit_bytes() > 0 && volume->capacity_bytes > range.limit_bytes()) {
      return OutOfRange("volume capacity exceeds limit_bytes");
    }
  }
  const std::string file = catalog_->VolumeFilePath(volume->id);
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
  if (!devices.ok()) return devices.status();
  if (devices->empty()) {
    return FailedPrecondition("volume " + volume->id + " is not attached on this node");
  }
  for (const std::string& device : *devices) {
    FLEXCSI_RETURN_IF_ERROR(RefreshLoopDeviceSize(device));
  }
  if (!volume->block) {
    StatusOr<MountEntry> mounted = FindByTarget(path);
    // --stage-without-mount: the staging path names the volume but nothing is mounted there.
    const bool staged_unmounted = !mounted.ok() && options_.stage_without_mount &&
                                  !volume->staging_path.empty() &&
                                  SamePath(volume->staging_path, path);
    if (!mounted.ok() && !staged_unmounted) {
      return FailedPrecondition("volume path " + path + " is not mounted");
    }
    if (mounted.ok() &&
        std::find(devices->begin(), devices->end(), mounted->source) == devices->end()) {
      return NotFound("volume " + volume->id + " is not what is mounted at " + path);
    }
    // Grow through a writable mount of the filesystem: a read-only pod's target refuses the
    // resize (EROFS) although the filesystem is writable through the volume's other mounts.
    std::optional<MountEntry> writable;
    if (mounted.ok() && MountIsWritable(*mounted)) writable = *mounted;
    std::vector<std::string> paths = {volume->staging_path};
    for (const auto& [target, publication] : volume->node_publications) paths.push_back(target);
    for (const std::string& other : paths) {
      if (writable || other.empty()) break;
      StatusOr<MountEntry> entry = FindByTarget(other);
      if (entry.ok() && MountIsWritable(*entry) &&
          std::find(devices->begin(), devices->end(), entry->source) != devices->end()) {
        writable = *entry;
      }
    }
    if (!writable && staged_unmounted && !DeviceIsMounted(devices->front())) {
      // Staged, published nowhere: ext4 grows offline now; xfs can only grow mounted, and
      // MountDevice grows it at the next NodePublish, so there is nothing left to fail on.
      StatusOr<std::string> fs_type = ProbeFilesystem(devices->front());
      if (!fs_type.ok()) return fs_type.status();
      if (*fs_type == "xfs") {
        spdlog::info("{}: xfs on {} grows when next mounted", volume->id, devices->front());
      } else {
        FLEXCSI_RETURN_IF_ERROR(GrowUnmountedFilesystem(*fs_type, devices->front()));
      }
      response->set_capacity_bytes(volume->capacity_bytes);
      return Status::Ok();
    }
    if (!writable) {
      return FailedPrecondition("volume " + volume->id +
                                " is mounted nowhere writable on this node; it cannot grow now");
    }
    FLEXCSI_RETURN_IF_ERROR(GrowFilesystem(writable->fstype, writable->source, writable->target));
  }
  response->set_capacity_bytes(volume->capacity_bytes);
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
