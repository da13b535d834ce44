// ControllerServer's shared answers (whether a node is known, a volume as CSI shows it, its
// condition) and the service-wide ones: capabilities and capacity. Each group of RPCs lives in
// its own file: controller_volume_lifecycle.cc, controller_volume_queries.cc,
// controller_attachments.cc, controller_snapshots.cc, controller_expansion.cc.
#include "drivers/loopback/controller_server.h"

#include <sys/statvfs.h>

#include <algorithm>

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::ControllerServiceCapability;
using csi::v1::VolumeCapability;

bool ControllerServer::IsKnownNode(const std::string& node_id) const {
  if (options_.shared()) return true;  // every node reaches the shared store
  if (node_id == options_.node_id) return true;
  return std::find(options_.extra_node_ids.begin(), options_.extra_node_ids.end(), node_id) !=
         options_.extra_node_ids.end();
}

void ControllerServer::FillVolume(const VolumeRecord& record, csi::v1::Volume* volume) const {
  volume->set_volume_id(record.id);
  volume->set_capacity_bytes(record.capacity_bytes);
  if (!record.block) (*volume->mutable_volume_context())["fsType"] = record.fs_type;
  if (!record.source_snapshot_id.empty()) {
    volume->mutable_content_source()->mutable_snapshot()->set_snapshot_id(
        record.source_snapshot_id);
  } else if (!record.source_volume_id.empty()) {
    volume->mutable_content_source()->mutable_volume()->set_volume_id(record.source_volume_id);
  }
  // A shared store is reachable from every node: no topology constrains where the volume goes.
  if (!options_.shared()) {
    (*volume->add_accessible_topology()->mutable_segments())[kTopologyNodeKey] = options_.node_id;
  }
}

csi::v1::VolumeCondition ControllerServer::ConditionOf(const VolumeRecord& record) const {
  csi::v1::VolumeCondition condition;
  StatusOr<int64_t> size = FileSize(state_->VolumeFilePath(record.id));
  if (!size.ok()) {
    condition.set_abnormal(true);
    condition.set_message("backing file missing: " + size.status().message());
  } else if (*size < record.capacity_bytes) {
    condition.set_abnormal(true);
    condition.set_message("backing file is smaller than the volume");
  } else {
    condition.set_abnormal(false);
    condition.set_message("backing file present");
  }
  return condition;
}

grpc::Status ControllerServer::GetCapacity(grpc::ServerContext*,
                                           const csi::v1::GetCapacityRequest* request,
                                           csi::v1::GetCapacityResponse* response) {
  return FinishRpc("GetCapacity", "", DoGetCapacity(*request, response));
}

Status ControllerServer::DoGetCapacity(const csi::v1::GetCapacityRequest& request,
                                       csi::v1::GetCapacityResponse* response) {
  response->mutable_maximum_volume_size()->set_value(kMaxVolumeBytes);
  response->mutable_minimum_volume_size()->set_value(kMinVolumeBytes);
  for (const VolumeCapability& capability : request.volume_capabilities()) {
    if (!ValidateCapability(capability, "volume_capabilities", options_.shared()).ok()) {
      response->set_available_capacity(0);  // nothing can be created for it
      return Status::Ok();
    }
  }
  if (!FsTypeFromParameters(ParametersAsMap(request.parameters())).ok()) {
    response->set_available_capacity(0);
    return Status::Ok();
  }
  if (!options_.shared() && request.has_accessible_topology()) {
    auto it = request.accessible_topology().segments().find(kTopologyNodeKey);
    if (it == request.accessible_topology().segments().end() || it->second != options_.node_id) {
      response->set_available_capacity(0);
      return Status::Ok();
    }
  }
  // Sparse files only consume what is written, so the honest figure is the free space of the
  // filesystem holding the state dir.
  struct statvfs fs;
  if (::statvfs(state_->state_dir().c_str(), &fs) != 0) {
    return Internal("statvfs " + state_->state_dir() + " failed");
  }
  response->set_available_capacity(static_cast<int64_t>(fs.f_bavail) *
                                   static_cast<int64_t>(fs.f_frsize));
  return Status::Ok();
}

grpc::Status ControllerServer::ControllerGetCapabilities(
    grpc::ServerContext*, const csi::v1::ControllerGetCapabilitiesRequest*,
    csi::v1::ControllerGetCapabilitiesResponse* response) {
  std::vector<ControllerServiceCapability::RPC::Type> types = {
      ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME,
      ControllerServiceCapability::RPC::LIST_VOLUMES,
      ControllerServiceCapability::RPC::GET_VOLUME,
      ControllerServiceCapability::RPC::GET_CAPACITY,
      ControllerServiceCapability::RPC::CREATE_DELETE_SNAPSHOT,
      ControllerServiceCapability::RPC::LIST_SNAPSHOTS,
      ControllerServiceCapability::RPC::CLONE_VOLUME,
      ControllerServiceCapability::RPC::VOLUME_CONDITION,
      ControllerServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER,
  };
  if (options_.controller_attach) {
    types.push_back(ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME);
    types.push_back(ControllerServiceCapability::RPC::PUBLISH_READONLY);
    types.push_back(ControllerServiceCapability::RPC::LIST_VOLUMES_PUBLISHED_NODES);
  }
  if (options_.expand) types.push_back(ControllerServiceCapability::RPC::EXPAND_VOLUME);
  for (auto type : types) response->add_capabilities()->mutable_rpc()->set_type(type);
  return grpc::Status::OK;
}

}  // namespace loopback
}  // namespace flexcsi
