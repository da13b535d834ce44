#include "drivers/loopback/controller_server.h"

#include <sys/statvfs.h>
#include <sys/time.h>

#include <spdlog/spdlog.h>
#include <algorithm>

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

namespace {

using csi::v1::ControllerServiceCapability;
using csi::v1::VolumeCapability;

std::map<std::string, std::string> ToMap(
    const google::protobuf::Map<std::string, std::string>& map) {
  return std::map<std::string, std::string>(map.begin(), map.end());
}

bool WantsBlockOnly(const google::protobuf::RepeatedPtrField<VolumeCapability>& capabilities) {
  bool any_block = false;
  bool any_mount = false;
  for (const VolumeCapability& capability : capabilities) {
    any_block |= capability.has_block();
    any_mount |= capability.has_mount();
  }
  return any_block && !any_mount;
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------

grpc::Status ControllerServer::CreateVolume(grpc::ServerContext*,
                                            const csi::v1::CreateVolumeRequest* request,
                                            csi::v1::CreateVolumeResponse* response) {
  return FinishRpc("CreateVolume", "name=" + request->name(),
                   DoCreateVolume(*request, response->mutable_volume()));
}

Status ControllerServer::DoCreateVolume(const csi::v1::CreateVolumeRequest& request,
                                        csi::v1::Volume* volume) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.name(), "name"));
  FLEXCSI_RETURN_IF_ERROR(ValidateCapabilities(request.volume_capabilities(), options_.shared()));
  if (!request.mutable_parameters().empty()) {
    return InvalidArgument("mutable_parameters are not supported (no MODIFY_VOLUME)");
  }
  const std::map<std::string, std::string> parameters = ToMap(request.parameters());
  StatusOr<std::string> fs_type = FsTypeFromParameters(parameters);
  if (!fs_type.ok()) return fs_type.status();
  const bool block = WantsBlockOnly(request.volume_capabilities());
  // The filesystem comes from the fsType parameter, else from the capabilities' fs_type (what a
  // Kubernetes provisioner sends), else ext4. Whatever is named must agree.
  const bool fs_from_parameter = parameters.count(kFsTypeParameter) > 0;
  std::string capability_fs;
  for (const VolumeCapability& capability : request.volume_capabilities()) {
    if (!capability.has_mount() || capability.mount().fs_type().empty()) continue;
    const std::string& named = capability.mount().fs_type();
    if (fs_from_parameter && named != *fs_type) {
      return InvalidArgument("capability fs_type " + named + " contradicts parameter fsType " +
                             *fs_type);
    }
    if (!capability_fs.empty() && named != capability_fs) {
      return InvalidArgument("capabilities ask for both " + capability_fs + " and " + named);
    }
    capability_fs = named;
  }
  if (!fs_from_parameter && !capability_fs.empty()) fs_type = capability_fs;
  if (!options_.shared() && request.has_accessibility_requirements() &&
      !request.accessibility_requirements().requisite().empty()) {
    bool reachable = false;
    for (const csi::v1::Topology& topology : request.accessibility_requirements().requisite()) {
      auto it = topology.segments().find(kTopologyNodeKey);
      reachable |= it != topology.segments().end() && it->second == options_.node_id;
    }
    if (!reachable) {
      return ResourceExhausted("no requisite topology includes node " + options_.node_id);
    }
  }
  const csi::v1::CapacityRange* range =
      request.has_capacity_range() ? &request.capacity_range() : nullptr;

  auto name_lock = locks_->Lock("name:" + request.name());

  // Which content source is asked for; checked first so that a repeat of a CreateVolume whose
  // source has been deleted since still finds its volume.
  std::string source_snapshot_id;
  std::string source_volume_id;
  if (request.has_volume_content_source()) {
    const csi::v1::VolumeContentSource& source = request.volume_content_source();
    if (source.has_snapshot()) {
      source_snapshot_id = source.snapshot().snapshot_id();
      FLEXCSI_RETURN_IF_ERROR(RequireField(source_snapshot_id, "snapshot_id"));
    } else if (source.has_volume()) {
      source_volume_id = source.volume().volume_id();
      FLEXCSI_RETURN_IF_ERROR(RequireField(source_volume_id, "volume_id"));
    } else {
      return InvalidArgument("volume_content_source has neither snapshot nor volume");
    }
  }

  if (std::optional<VolumeRecord> existing = state_->FindVolumeByName(request.name())) {
    // Idempotent repeat, or a conflicting reuse of the name.
    if (!CapacityFits(range, existing->capacity_bytes)) {
      return AlreadyExists("volume " + request.name() + " exists with capacity " +
                           std::to_string(existing->capacity_bytes) +
                           " outside the requested range");
    }
    if (existing->parameters != parameters || existing->block != block ||
        existing->source_snapshot_id != source_snapshot_id ||
        existing->source_volume_id != source_volume_id) {
      return AlreadyExists("volume " + request.name() + " exists with different parameters");
    }
    FillVolume(*existing, volume);
    return Status::Ok();
  }

  // Resolve the content source and learn the smallest size the new volume may have.
  std::string source_file;
  int64_t source_bytes = 0;
  bool source_block = block;
  std::optional<VolumeRecord> source_volume;
  if (!source_snapshot_id.empty()) {
    std::optional<SnapshotRecord> snapshot = state_->GetSnapshot(source_snapshot_id);
    if (!snapshot) return NotFound("snapshot " + source_snapshot_id + " does not exist");
    source_file = state_->SnapshotFilePath(snapshot->id);
    source_bytes = snapshot->size_bytes;
    source_block = snapshot->block;
  } else if (!source_volume_id.empty()) {
    source_volume = state_->GetVolume(source_volume_id);
    if (!source_volume) return NotFound("volume " + source_volume_id + " does not exist");
    source_file = state_->VolumeFilePath(source_volume->id);
    source_bytes = source_volume->capacity_bytes;
    source_block = source_volume->block;
  }
  // Raw block contents would read as "no filesystem" to NodeStage, which would then format over
  // the copied data; a filesystem copied into a block volume is merely odd. Refuse both.
  if (source_block != block) {
    return InvalidArgument(std::string("content source is a ") +
                           (source_block ? "block" : "filesystem") + " volume, the new one is " +
                           (block ? "block" : "a filesystem"));
  }

  int64_t minimum = kMinVolumeBytes;
  if (!block && *fs_type == "xfs") minimum = kMinXfsBytes;
  minimum = std::max(minimum, source_bytes);
  StatusOr<int64_t> capacity = ChooseCapacity(range, minimum);
  if (!capacity.ok()) return capacity.status();

  VolumeRecord record;
  record.id = NewId("vol-");
  record.name = request.name();
  record.capacity_bytes = *capacity;
  record.block = block;
  record.fs_type = *fs_type;
  record.parameters = parameters;
  record.source_snapshot_id = source_snapshot_id;
  record.source_volume_id = source_volume_id;
  const std::string file = state_->VolumeFilePath(record.id);

  if (source_file.empty()) {
    FLEXCSI_RETURN_IF_ERROR(CreateSparseFile(file, record.capacity_bytes));
  } else {
    if (source_volume) {
      // The source may be in use; copy what its filesystem has written, under its lock.
      auto source_lock = locks_->Lock("vol:" + source_volume->id);
      std::optional<VolumeRecord> current = state_->GetVolume(source_volume->id);
      if (!current) return NotFound("volume " + source_volume_id + " does not exist");
      FLEXCSI_RETURN_IF_ERROR(FlushVolume(*current));
      FLEXCSI_RETURN_IF_ERROR(CopySparseFile(source_file, file, record.capacity_bytes));
    } else {
      FLEXCSI_RETURN_IF_ERROR(CopySparseFile(source_file, file, record.capacity_bytes));
    }
  }
  StatusOr<VolumeRecord> stored = state_->PutVolume(record);
  if (!stored.ok()) {
    RemoveFile(file);
    return stored.status();
  }
  FillVolume(*stored, volume);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

grpc::Status ControllerServer::DeleteVolume(grpc::ServerContext*,
                                            const csi::v1::DeleteVolumeRequest* request,
                                            csi::v1::DeleteVolumeResponse*) {
  return FinishRpc("DeleteVolume", request->volume_id(), DoDeleteVolume(*request));
}

Status ControllerServer::DoDeleteVolume(const csi::v1::DeleteVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  auto store = state_->LockStore();
  std::optional<VolumeRecord> volume = state_->GetVolume(request.volume_id());
  if (!volume) return Status::Ok();  // already gone: idempotent
  // In use means attached to a node or used on this one; the CO must undo that first.
  if (!volume->controller_publications.empty()) {
    return FailedPrecondition("volume " + volume->id + " is still published to node " +
                              volume->controller_publications.begin()->first);
  }
  if (!volume->staging_path.empty() || !volume->node_publications.empty()) {
    return FailedPrecondition("volume " + volume->id + " is still in use on node " +
                              options_.node_id);
  }
  const std::string file = state_->VolumeFilePath(volume->id);
  FLEXCSI_RETURN_IF_ERROR(DetachLoopDevices(file));
  FLEXCSI_RETURN_IF_ERROR(RemoveFile(file));
  return state_->RemoveVolume(volume->id);
}

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

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
  if (!request.parameters().empty() && ToMap(request.parameters()) != volume->parameters) {
    response->set_message("parameters differ from those the volume was created with");
    return Status::Ok();
  }
  auto* confirmed = response->mutable_confirmed();
  *confirmed->mutable_volume_capabilities() = request.volume_capabilities();
  *confirmed->mutable_volume_context() = request.volume_context();
  *confirmed->mutable_parameters() = request.parameters();
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

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
  if (!FsTypeFromParameters(ToMap(request.parameters())).ok()) {
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

// ---------------------------------------------------------------------------------------------

namespace {
void FillSnapshot(const SnapshotRecord& record, csi::v1::Snapshot* snapshot) {
  snapshot->set_snapshot_id(record.id);
  snapshot->set_source_volume_id(record.source_volume_id);
  snapshot->set_size_bytes(record.size_bytes);
  snapshot->mutable_creation_time()->set_seconds(record.creation_seconds);
  snapshot->mutable_creation_time()->set_nanos(record.creation_nanos);
  snapshot->set_ready_to_use(true);  // the copy is complete before we answer
}
}  // namespace

grpc::Status ControllerServer::CreateSnapshot(grpc::ServerContext*,
                                              const csi::v1::CreateSnapshotRequest* request,
                                              csi::v1::CreateSnapshotResponse* response) {
  return FinishRpc("CreateSnapshot",
                   "name=" + request->name() + " source=" + request->source_volume_id(),
                   DoCreateSnapshot(*request, response->mutable_snapshot()));
}

Status ControllerServer::DoCreateSnapshot(const csi::v1::CreateSnapshotRequest& request,
                                          csi::v1::Snapshot* snapshot) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.name(), "name"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.source_volume_id(), "source_volume_id"));
  if (!request.parameters().empty()) {
    return InvalidArgument("snapshot parameters are not supported");
  }
  auto name_lock = locks_->Lock("snapshot-name:" + request.name());
  if (std::optional<SnapshotRecord> existing = state_->FindSnapshotByName(request.name())) {
    if (existing->source_volume_id != request.source_volume_id()) {
      return AlreadyExists("snapshot " + request.name() + " exists for volume " +
                           existing->source_volume_id);
    }
    FillSnapshot(*existing, snapshot);
    return Status::Ok();
  }
  auto volume_lock = locks_->Lock("vol:" + request.source_volume_id());
  std::optional<VolumeRecord> volume = state_->GetVolume(request.source_volume_id());
  if (!volume) return NotFound("volume " + request.source_volume_id() + " does not exist");

  SnapshotRecord record;
  record.id = NewId("snap-");
  record.name = request.name();
  record.source_volume_id = volume->id;
  record.block = volume->block;
  record.size_bytes = volume->capacity_bytes;
  struct timeval now;
  ::gettimeofday(&now, nullptr);
  record.creation_seconds = now.tv_sec;
  record.creation_nanos = static_cast<int32_t>(now.tv_usec * 1000);

  FLEXCSI_RETURN_IF_ERROR(FlushVolume(*volume));
  const std::string file = state_->SnapshotFilePath(record.id);
  FLEXCSI_RETURN_IF_ERROR(
      CopySparseFile(state_->VolumeFilePath(volume->id), file, record.size_bytes));
  StatusOr<SnapshotRecord> stored = state_->PutSnapshot(record);
  if (!stored.ok()) {
    RemoveFile(file);
    return stored.status();
  }
  FillSnapshot(*stored, snapshot);
  return Status::Ok();
}

grpc::Status ControllerServer::DeleteSnapshot(grpc::ServerContext*,
                                              const csi::v1::DeleteSnapshotRequest* request,
                                              csi::v1::DeleteSnapshotResponse*) {
  return FinishRpc("DeleteSnapshot", request->snapshot_id(), DoDeleteSnapshot(*request));
}

Status ControllerServer::DoDeleteSnapshot(const csi::v1::DeleteSnapshotRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.snapshot_id(), "snapshot_id"));
  auto lock = locks_->Lock("snap:" + request.snapshot_id());
  std::optional<SnapshotRecord> snapshot = state_->GetSnapshot(request.snapshot_id());
  if (!snapshot) return Status::Ok();
  // Volumes restored from it are full copies, so nothing depends on the file.
  FLEXCSI_RETURN_IF_ERROR(RemoveFile(state_->SnapshotFilePath(snapshot->id)));
  return state_->RemoveSnapshot(snapshot->id);
}

grpc::Status ControllerServer::ListSnapshots(grpc::ServerContext*,
                                             const csi::v1::ListSnapshotsRequest* request,
                                             csi::v1::ListSnapshotsResponse* response) {
  return FinishRpc("ListSnapshots", "token=" + request->starting_token(),
                   DoListSnapshots(*request, response));
}

Status ControllerServer::DoListSnapshots(const csi::v1::ListSnapshotsRequest& request,
                                         csi::v1::ListSnapshotsResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(ValidateMaxEntries(request.max_entries()));
  StatusOr<uint64_t> after = ParseStartingToken(request.starting_token());
  if (!after.ok()) return after.status();
  std::vector<SnapshotRecord> matching;
  for (SnapshotRecord& snapshot : state_->ListSnapshots()) {
    if (!request.snapshot_id().empty() && snapshot.id != request.snapshot_id()) continue;
    if (!request.source_volume_id().empty() &&
        snapshot.source_volume_id != request.source_volume_id()) {
      continue;
    }
    matching.push_back(std::move(snapshot));
  }
  if (*after > state_->LastIssuedSeq()) {
    return Aborted("starting_token " + request.starting_token() + " was not issued by this driver");
  }
  int count = 0;
  uint64_t last = *after;
  for (const SnapshotRecord& snapshot : matching) {
    if (snapshot.seq <= *after) continue;
    if (request.max_entries() > 0 && count == request.max_entries()) {
      response->set_next_token(std::to_string(last));
      break;
    }
    FillSnapshot(snapshot, response->add_entries()->mutable_snapshot());
    last = snapshot.seq;
    ++count;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

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
