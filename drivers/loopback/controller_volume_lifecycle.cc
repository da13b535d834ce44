// CreateVolume (blank, from a snapshot, or a clone) and DeleteVolume: the backing file and the
// volume's record, made and removed idempotently.
#include "drivers/loopback/controller_server.h"

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

using csi::v1::VolumeCapability;

namespace {

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
  const std::map<std::string, std::string> parameters = ParametersAsMap(request.parameters());
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

}  // namespace loopback
}  // namespace flexcsi
