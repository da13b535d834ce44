// The read-only volume RPCs: ValidateVolumeCapabilities, ListVolumes (paged by sequence
// number) and ControllerGetVolume.
#include "drivers/loopback/controller_server.h"

#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::VolumeCapability;

grpc::Status ControllerServer::ValidateVolumeCapabilities(
    grpc::ServerContext*, const csi::v1::ValidateVolumeCapabilitiesRequest* request,
    csi::v1::ValidateVolumeCapabilitiesResponse* response) {
  return FinishRpc("ValidateVolumeCapabilities", request->volume_id(),
                   DoValidate(*request, response));
}

Status ControllerServer::DoValidate(const csi::v1::ValidateVolumeCapabilitiesRequest& request,
                                    csi::v1::ValidateVolumeCapabilitiesResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  if (request.volume_capabilities().empty()) {
    return InvalidArgument("volume_capabilities is required");
  }
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  // An unsupported capability is an answer (no confirmation), not an error.
  for (const VolumeCapability& capability : request.volume_capabilities()) {
    Status supported = ValidateCapability(capability, "volume_capabilities", options_.shared());
    if (supported.ok()) supported = CheckAccessTypeMatches(*volume, capability);
    if (supported.ok() && capability.has_mount() && !capability.mount().fs_type().empty() &&
        capability.mount().fs_type() != volume->fs_type) {
      supported = InvalidArgument("volume is formatted as " + volume->fs_type);
    }
    if (!supported.ok()) {
      response->set_message(supported.message());
      return Status::Ok();
    }
  }
  if (!request.parameters().empty() &&
      ParametersAsMap(request.parameters()) != volume->parameters) {
    response->set_message("parameters differ from those the volume was created with");
    return Status::Ok();
  }
  auto* confirmed = response->mutable_confirmed();
  *confirmed->mutable_volume_capabilities() = request.volume_capabilities();
  *confirmed->mutable_volume_context() = request.volume_context();
  *confirmed->mutable_parameters() = request.parameters();
  return Status::Ok();
}

grpc::Status ControllerServer::ListVolumes(grpc::ServerContext*,
                                           const csi::v1::ListVolumesRequest* request,
                                           csi::v1::ListVolumesResponse* response) {
  return FinishRpc("ListVolumes", "token=" + request->starting_token(),
                   DoListVolumes(*request, response));
}

Status ControllerServer::DoListVolumes(const csi::v1::ListVolumesRequest& request,
                                       csi::v1::ListVolumesResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(ValidateMaxEntries(request.max_entries()));
  StatusOr<uint64_t> after = ParseStartingToken(request.starting_token());
  if (!after.ok()) return after.status();
  if (*after > state_->LastIssuedSeq()) {
    return Aborted("starting_token " + request.starting_token() + " was not issued by this driver");
  }
  int count = 0;
  uint64_t last = *after;
  for (const VolumeRecord& volume : state_->ListVolumes()) {
    if (volume.seq <= *after) continue;
    if (request.max_entries() > 0 && count == request.max_entries()) {
      // More remain: the next page resumes after the last entry of this one.
      response->set_next_token(std::to_string(last));
      break;
    }
    auto* entry = response->add_entries();
    FillVolume(volume, entry->mutable_volume());
    for (const auto& [node, publication] : volume.controller_publications) {
      entry->mutable_status()->add_published_node_ids(node);
    }
    *entry->mutable_status()->mutable_volume_condition() = ConditionOf(volume);
    last = volume.seq;
    ++count;
  }
  return Status::Ok();
}

grpc::Status ControllerServer::ControllerGetVolume(
    grpc::ServerContext*, const csi::v1::ControllerGetVolumeRequest* request,
    csi::v1::ControllerGetVolumeResponse* response) {
  return FinishRpc("ControllerGetVolume", request->volume_id(), DoGetVolume(*request, response));
}

Status ControllerServer::DoGetVolume(const csi::v1::ControllerGetVolumeRequest& request,
                                     csi::v1::ControllerGetVolumeResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  FillVolume(*volume, response->mutable_volume());
  for (const auto& [node, publication] : volume->controller_publications) {
    response->mutable_status()->add_published_node_ids(node);
  }
  *response->mutable_status()->mutable_volume_condition() = ConditionOf(*volume);
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
