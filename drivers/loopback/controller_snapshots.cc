// CreateSnapshot, DeleteSnapshot and ListSnapshots: a snapshot is a sparse copy of the volume's
// backing file, flushed first so the copy holds what was written.
#include "drivers/loopback/controller_server.h"

#include <sys/time.h>

#include "drivers/loopback/backing_file.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

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

}  // namespace loopback
}  // namespace flexcsi
