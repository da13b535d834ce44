// ControllerPublishVolume and ControllerUnpublishVolume: which node a volume is attached to,
// and the publish context that tells the node where the backing file lives.
#include "drivers/loopback/controller_server.h"

#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

grpc::Status ControllerServer::ControllerPublishVolume(
    grpc::ServerContext*, const csi::v1::ControllerPublishVolumeRequest* request,
    csi::v1::ControllerPublishVolumeResponse* response) {
  if (!options_.controller_attach) {
    return FinishRpc("ControllerPublishVolume", request->volume_id(),
                     Unimplemented("PUBLISH_UNPUBLISH_VOLUME is disabled (--no-attach)"));
  }
  return FinishRpc("ControllerPublishVolume", request->volume_id() + " node=" + request->node_id(),
                   DoControllerPublish(*request, response));
}

Status ControllerServer::DoControllerPublish(const csi::v1::ControllerPublishVolumeRequest& request,
                                             csi::v1::ControllerPublishVolumeResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.node_id(), "node_id"));
  if (!request.has_volume_capability()) return InvalidArgument("volume_capability is required");
  FLEXCSI_RETURN_IF_ERROR(
      ValidateCapability(request.volume_capability(), "volume_capability", options_.shared()));

  auto lock = locks_->Lock("vol:" + request.volume_id());
  // Another node's controller may publish the same volume: check and record under one lock.
  auto store = state_->LockStore();
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  if (!IsKnownNode(request.node_id())) {
    return NotFound("node " + request.node_id() + " is not known to this driver");
  }
  FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, request.volume_capability()));

  const std::string key = CapabilityKey(request.volume_capability());
  auto existing = volume->controller_publications.find(request.node_id());
  if (existing != volume->controller_publications.end()) {
    if (existing->second.readonly != request.readonly() || existing->second.capability_key != key) {
      return AlreadyExists("volume " + volume->id + " is published to node " + request.node_id() +
                           " with a different capability or readonly flag");
    }
  } else {
    // Several nodes only when the new publication and every existing one are multi-node.
    const bool multi_node = IsMultiNodeMode(request.volume_capability().access_mode().mode());
    for (const auto& [node, publication] : volume->controller_publications) {
      if (node != request.node_id() &&
          !(multi_node && publication.capability_key.rfind("MULTI_NODE_", 0) == 0)) {
        return FailedPrecondition("volume " + volume->id + " is already published to node " + node +
                                  " and its access mode is single-node");
      }
    }
    int64_t on_node = 0;
    for (const VolumeRecord& other : state_->ListVolumes()) {
      on_node += other.controller_publications.count(request.node_id());
    }
    if (options_.max_volumes_per_node > 0 && on_node >= options_.max_volumes_per_node) {
      return ResourceExhausted("node " + request.node_id() + " already has " +
                               std::to_string(on_node) + " volumes published");
    }
    volume->controller_publications[request.node_id()] = {request.readonly(), key};
    StatusOr<VolumeRecord> stored = state_->PutVolume(*volume);
    if (!stored.ok()) return stored.status();
  }

  auto& context = *response->mutable_publish_context();
  context[kPublishContextBackingFile] = state_->VolumeFilePath(volume->id);
  context[kPublishContextReadonly] = request.readonly() ? "true" : "false";
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(state_->VolumeFilePath(volume->id));
  if (devices.ok() && !devices->empty()) context[kPublishContextDeviceHint] = devices->front();
  return Status::Ok();
}

grpc::Status ControllerServer::ControllerUnpublishVolume(
    grpc::ServerContext*, const csi::v1::ControllerUnpublishVolumeRequest* request,
    csi::v1::ControllerUnpublishVolumeResponse*) {
  if (!options_.controller_attach) {
    return FinishRpc("ControllerUnpublishVolume", request->volume_id(),
                     Unimplemented("PUBLISH_UNPUBLISH_VOLUME is disabled (--no-attach)"));
  }
  return FinishRpc("ControllerUnpublishVolume",
                   request->volume_id() + " node=" + request->node_id(),
                   DoControllerUnpublish(*request));
}

Status ControllerServer::DoControllerUnpublish(
    const csi::v1::ControllerUnpublishVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  auto store = state_->LockStore();
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  // An unknown volume is certainly not attached anywhere: the spec counts that as success.
  if (!volume) return Status::Ok();
  size_t removed = 0;
  if (request.node_id().empty()) {
    removed = volume->controller_publications.size();
    volume->controller_publications.clear();
  } else {
    removed = volume->controller_publications.erase(request.node_id());
  }
  if (removed == 0) return Status::Ok();
  StatusOr<VolumeRecord> stored = state_->PutVolume(*volume);
  return stored.status();
}

}  // namespace loopback
}  // namespace flexcsi
