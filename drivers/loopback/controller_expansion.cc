// ControllerExpandVolume: the backing file grown, and any loop device attached to it on this
// machine told the new size.
#include "drivers/loopback/controller_server.h"

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

grpc::Status ControllerServer::ControllerExpandVolume(
    grpc::ServerContext*, const csi::v1::ControllerExpandVolumeRequest* request,
    csi::v1::ControllerExpandVolumeResponse* response) {
  if (!options_.expand) {
    return FinishRpc("ControllerExpandVolume", request->volume_id(),
                     Unimplemented("volume expansion is disabled (--no-expand)"));
  }
  return FinishRpc("ControllerExpandVolume", request->volume_id(), DoExpand(*request, response));
}

Status ControllerServer::DoExpand(const csi::v1::ControllerExpandVolumeRequest& request,
                                  csi::v1::ControllerExpandVolumeResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  if (!request.has_capacity_range()) return InvalidArgument("capacity_range is required");
  if (request.has_volume_capability()) {
    FLEXCSI_RETURN_IF_ERROR(
        ValidateCapability(request.volume_capability(), "volume_capability", options_.shared()));
  }
  auto lock = locks_->Lock("vol:" + request.volume_id());
  auto store = state_->LockStore();
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  if (request.has_volume_capability()) {
    FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, request.volume_capability()));
  }
  StatusOr<int64_t> wanted = ChooseCapacity(&request.capacity_range(), kMinVolumeBytes);
  if (!wanted.ok()) return wanted.status();
  const std::string file = state_->VolumeFilePath(volume->id);
  if (*wanted > volume->capacity_bytes) {
    FLEXCSI_RETURN_IF_ERROR(GrowFile(file, *wanted));
    volume->capacity_bytes = *wanted;
    StatusOr<VolumeRecord> stored = state_->PutVolume(*volume);
    if (!stored.ok()) return stored.status();
  }
  // Never shrink: a smaller request is satisfied by the current, larger size, as long as the
  // caller's limit allows it.
  if (request.capacity_range().limit_bytes() > 0 &&
      volume->capacity_bytes > request.capacity_range().limit_bytes()) {
    return OutOfRange("volume is already " + std::to_string(volume->capacity_bytes) +
                      " bytes, above limit_bytes; shrinking is not supported");
  }
  response->set_capacity_bytes(volume->capacity_bytes);
  if (volume->block) {
    // Block volumes need no filesystem work; the attached loop device can learn its new size
    // right here since controller and node share the machine.
    StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
    if (!devices.ok()) return devices.status();
    for (const std::string& device : *devices) {
      FLEXCSI_RETURN_IF_ERROR(RefreshLoopDeviceSize(device));
    }
    response->set_node_expansion_required(false);
  } else {
    response->set_node_expansion_required(true);
  }
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
