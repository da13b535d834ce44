#include "bridge/volume_operations.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "bridge/flex_options.h"
#include "bridge/staging_marker.h"
#include "common/mount_table.h"

namespace flexcsi {
namespace {

bool Has(const NodeCapabilities& caps, csi::v1::NodeServiceCapability::RPC::Type t) {
  return caps.count(t) > 0;
}

// mkdir -p with kubelet's mode for the directories it creates (0750).
Status MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string partial = path.substr(0, slash);
    if (mkdir(partial.c_str(), 0750) != 0 && errno != EEXIST) {
      return Internal("cannot create " + partial + ": " + std::strerror(errno));
    }
    if (slash == std::string::npos) return Status::Ok();
  }
}

bool MentionsNot(const std::string& message, const char* what) {
  std::string lower = message;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find(std::string("not ") + what) != std::string::npos;
}

// The answer of an undo (NodeUnstageVolume or NodeUnpublishVolume at `path`), read as whether
// anything is left to undo. CSI lets a driver answer either RPC for a volume it does not know
// with NOT_FOUND, and some answer FAILED_PRECONDITION "... not staged" / "not published" for one
// it knows but never staged or published there: either way the driver holds nothing. The path
// must agree, though: a driver that lost its own state must not make the bridge forget a live
// mount, so a mount at `path` (other than the bridge's staging marker, which the caller removes
// itself) keeps the error.
Status UndoneUnlessMounted(const Status& undo, const std::string& path, const char* not_what) {
  if (undo.ok()) return undo;
  const bool driver_holds_nothing =
      undo.code() == Code::kNotFound ||
      (undo.code() == Code::kFailedPrecondition && MentionsNot(undo.message(), not_what));
  if (!driver_holds_nothing) return undo;
  if (IsMountPoint(path) && !IsStagingMarker(path)) {
    return Status(undo.code(), undo.message() + " (yet " + path + " is still mounted)");
  }
  spdlog::info("{}: the driver holds nothing at {}; nothing to undo", undo.message(), path);
  return Status::Ok();
}

// Records a failed undo for the reconciler's backoff, or clears an earlier failure.
void NoteUndo(BridgeContext& ctx, const char* kind, const std::string& key, const Status& undo) {
  if (undo.ok()) {
    ctx.repairs.RecordSuccess(key);
  } else {
    ctx.repairs.RecordFailure(kind, key, undo.ToString(), RepairBackoff::Clock::now());
  }
}

std::string RollbackNote(const Status& rollback) {
  return rollback.ok()
             ? " (rolled back)"
             : " (rollback failed and will be retried by the bridge: " + rollback.message() + ")";
}

csi::v1::NodeUnstageVolumeRequest UnstageRequest(const std::string& volume_id,
                                                 const std::string& staging_path) {
  csi::v1::NodeUnstageVolumeRequest req;
  req.set_volume_id(volume_id);
  req.set_staging_target_path(staging_path);
  return req;
}

csi::v1::NodeUnpublishVolumeRequest UnpublishRequest(const std::string& volume_id,
                                                     const std::string& target_path) {
  csi::v1::NodeUnpublishVolumeRequest req;
  req.set_volume_id(volume_id);
  req.set_target_path(target_path);
  return req;
}

}  // namespace

void RemoveDirectoryIfEmpty(const std::string& path) {
  if (rmdir(path.c_str()) != 0) return;
  // Bridge-owned staging paths end in /<sha256>/globalmount; the sha dir is ours too.
  const std::string suffix = "/globalmount";
  if (path.size() > suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0 &&
      path.find("/plugins/flexcsi/") != std::string::npos) {
    rmdir(path.substr(0, path.size() - suffix.size()).c_str());
  }
}

Status CheckStagingSource(const StagingRecord& record, CallSource source) {
  const std::string recorded = record.request.value("source", "");
  const bool recorded_inline = recorded == CallSourceName(CallSource::kInline);
  const bool recorded_pv = !recorded_inline && recorded != CallSourceName(CallSource::kTrusted);
  if (source == CallSource::kInline && recorded_pv) {
    return FailedPrecondition("volume " + record.volume_name +
                              " is staged on this node for a persistent volume: an inline volume "
                              "may not use its staging (docs/security.md)");
  }
  if (source == CallSource::kPersistentVolume && recorded_inline) {
    return FailedPrecondition("volume " + record.volume_name +
                              " is staged on this node for an inline volume: a persistent "
                              "volume may not use its staging (docs/security.md)");
  }
  return Status::Ok();
}

Status StageVolume(BridgeContext& ctx, const StageSpec& spec, const NodeCapabilities& caps,
                   const Deadline& deadline) {
  using Cap = csi::v1::NodeServiceCapability::RPC;
  const bool stage_rpc = Has(caps, Cap::STAGE_UNSTAGE_VOLUME);
  // kubelet must find a mount point at its device mount path after a successful mountdevice,
  // whatever the driver does (staging_marker.h); the bridge's own staging paths need none.
  const bool needs_mount_point = spec.owner == StagingOwner::kKubelet;
  auto existing = ctx.store.GetStaging(spec.staging_path);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) {
    const StagingRecord& r = **existing;
    FLEXCSI_RETURN_IF_ERROR(RefuseAnotherVolume("staging path " + spec.staging_path, r.csi_driver,
                                                r.volume_id, spec.volume.driver,
                                                spec.volume.volume_handle));
    FLEXCSI_RETURN_IF_ERROR(CheckStagingSource(r, spec.source));
    const bool settled =
        r.phase == Phase::kDone && (!r.ExpectsMount() || IsMountPoint(spec.staging_path));
    // A repeated mountdevice finds everything in place; a re-stage after a reboot (record done,
    // nothing mounted) falls through and stages again.
    if (settled && r.StagedThroughCsi() == stage_rpc &&
        (!needs_mount_point || IsMountPoint(spec.staging_path))) {
      return Status::Ok();
    }
  }

  StagingRecord record;
  record.staging_path = spec.staging_path;
  record.flex_driver = spec.driver->flex_driver;
  record.volume_name = spec.volume_name;
  record.csi_driver = spec.volume.driver;
  record.volume_id = spec.volume.volume_handle;
  record.owner = spec.owner;
  record.request = {{"publishContext", spec.publish_context},
                    {"volumeContext", spec.volume.volume_attributes},
                    {"capability", CapabilityToJson(spec.capability)},
                    {"source", CallSourceName(spec.source)}};
  record.shape = stage_rpc ? StagingShape::kDriverMount : StagingShape::kNoStage;
  record.marker = !stage_rpc && needs_mount_point;
  if (!stage_rpc && !needs_mount_point) {
    // No RPC and no path kubelet looks at: the record only carries the publish context.
    record.phase = Phase::kDone;
    return ctx.store.PutStaging(record);
  }

  FLEXCSI_RETURN_IF_ERROR(MakeDirectories(spec.staging_path));
  record.phase = Phase::kInProgress;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutStaging(record));
  if (!stage_rpc) {
    Status marked = MountStagingMarker(spec.staging_path);
    if (!marked.ok()) {
      ctx.store.DeleteStaging(spec.staging_path);
      return marked;
    }
    record.phase = Phase::kDone;
    return ctx.store.PutStaging(record);
  }

  csi::v1::NodeStageVolumeRequest req;
  req.set_volume_id(spec.volume.volume_handle);
  req.set_staging_target_path(spec.staging_path);
  CopyMap(spec.publish_context, req.mutable_publish_context());
  CopyMap(spec.volume.volume_attributes, req.mutable_volume_context());
  CopyMap(spec.secrets, req.mutable_secrets());
  MountCapabilitySpec capability = spec.capability;
  if (!Has(caps, Cap::VOLUME_MOUNT_GROUP)) capability.mount_group.reset();
  *req.mutable_volume_capability() =
      MountCapability(capability, Has(caps, Cap::SINGLE_NODE_MULTI_WRITER));

  CsiClient& client = ctx.ClientFor(*spec.driver);
  Status staged =
      client.NodeStageVolume(req, deadline.LeavingForRollback(RollbackReserve(deadline)));
  if (staged.ok()) {
    // The driver's shape shows in the mount table: a mount at the staging path, or none.
    if (!IsMountPoint(spec.staging_path)) {
      record.shape = StagingShape::kRecordOnly;
      if (needs_mount_point) {
        staged = MountStagingMarker(spec.staging_path);
        record.marker = staged.ok();
      }
    }
  }
  if (staged.ok()) {
    record.phase = Phase::kDone;
    return ctx.store.PutStaging(record);
  }
  staged = Status(staged.code(), RedactSecretValues(staged.message(), spec.secrets));

  spdlog::warn("NodeStageVolume failed, rolling back: volume={} staging={} error=\"{}\"",
               spec.volume.volume_handle, spec.staging_path, staged.message());
  Status rollback = UndoneUnlessMounted(
      client.NodeUnstageVolume(UnstageRequest(spec.volume.volume_handle, spec.staging_path),
                               deadline),
      spec.staging_path, "staged");
  if (rollback.ok()) rollback = ctx.store.DeleteStaging(spec.staging_path);
  if (rollback.ok() && spec.owner == StagingOwner::kBridge) {
    RemoveDirectoryIfEmpty(spec.staging_path);
  }
  NoteUndo(ctx, "staging", StagingRepairKey(spec.staging_path), rollback);
  return Status(staged.code(), staged.message() + RollbackNote(rollback));
}

Status UnstageVolume(BridgeContext& ctx, const StagingRecord& record, const Deadline& deadline) {
  auto users = ctx.store.CountPublicationsOfStaging(record.staging_path);
  if (!users.ok()) return users.status();
  if (*users > 0) {
    return FailedPrecondition("volume " + record.volume_id + " is still published " +
                              std::to_string(*users) + " time(s) from " + record.staging_path +
                              "; unmount the pods first");
  }
  if (record.StagedThroughCsi() || record.marker) {
    StagingRecord removing = record;
    removing.phase = Phase::kRemoving;
    FLEXCSI_RETURN_IF_ERROR(ctx.store.PutStaging(removing));
  }
  if (record.StagedThroughCsi()) {
    const DriverConfig* driver = ctx.config.FindDriver(record.flex_driver);
    if (driver == nullptr) {
      return FailedPrecondition("driver " + record.flex_driver +
                                " is no longer in the bridge configuration; cannot unstage " +
                                record.volume_id);
    }
    FLEXCSI_RETURN_IF_ERROR(
        UndoneUnlessMounted(ctx.ClientFor(*driver).NodeUnstageVolume(
                                UnstageRequest(record.volume_id, record.staging_path), deadline),
                            record.staging_path, "staged"));
  }
  // After the unstage, so that a failed one leaves the mount point that makes kubelet retry.
  // Looked for even without the record's flag: a crash may have come between mounting the
  // marker and recording it.
  if (record.owner == StagingOwner::kKubelet) {
    FLEXCSI_RETURN_IF_ERROR(UnmountStagingMarker(record.staging_path));
  }
  FLEXCSI_RETURN_IF_ERROR(ctx.store.DeleteStaging(record.staging_path));
  if (record.owner == StagingOwner::kBridge) RemoveDirectoryIfEmpty(record.staging_path);
  return Status::Ok();
}

Status PublishVolume(BridgeContext& ctx, const PublishSpec& spec, const NodeCapabilities& caps,
                     const Deadline& deadline) {
  using Cap = csi::v1::NodeServiceCapability::RPC;
  auto existing = ctx.store.GetPublication(spec.target_path);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) {
    const PublicationRecord& r = **existing;
    FLEXCSI_RETURN_IF_ERROR(RefuseAnotherVolume("target " + spec.target_path, r.csi_driver,
                                                r.volume_id, spec.volume.driver,
                                                spec.volume.volume_handle));
    if (r.phase == Phase::kDone && r.readonly == spec.readonly && IsMountPoint(spec.target_path)) {
      return Status::Ok();
    }
  }

  PublicationRecord record;
  record.target_path = spec.target_path;
  record.staging_path = spec.staging_path;
  record.flex_driver = spec.driver->flex_driver;
  record.volume_name = spec.volume_name;
  record.csi_driver = spec.volume.driver;
  record.volume_id = spec.volume.volume_handle;
  record.pod_uid = spec.pod_uid;
  record.readonly = spec.readonly;
  record.phase = Phase::kInProgress;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutPublication(record));

  csi::v1::NodePublishVolumeRequest req;
  req.set_volume_id(spec.volume.volume_handle);
  req.set_target_path(spec.target_path);
  // The record keeps the staging path even without STAGE_UNSTAGE (it counts references);
  // the driver is told about it only when it stages (kubelet-csi.md §5.3).
  if (!spec.staging_path.empty() && Has(caps, Cap::STAGE_UNSTAGE_VOLUME)) {
    req.set_staging_target_path(spec.staging_path);
  }
  req.set_readonly(spec.readonly);
  CopyMap(spec.publish_context, req.mutable_publish_context());
  CopyMap(spec.volume_context, req.mutable_volume_context());
  CopyMap(spec.secrets, req.mutable_secrets());
  MountCapabilitySpec capability = spec.capability;
  if (!Has(caps, Cap::VOLUME_MOUNT_GROUP)) capability.mount_group.reset();
  *req.mutable_volume_capability() =
      MountCapability(capability, Has(caps, Cap::SINGLE_NODE_MULTI_WRITER));

  CsiClient& client = ctx.ClientFor(*spec.driver);
  Status published =
      client.NodePublishVolume(req, deadline.LeavingForRollback(RollbackReserve(deadline)));
  if (published.ok()) {
    record.phase = Phase::kDone;
    return ctx.store.PutPublication(record);
  }
  published = Status(published.code(), RedactSecretValues(published.message(), spec.secrets));

  spdlog::warn("NodePublishVolume failed, rolling back: volume={} target={} error=\"{}\"",
               spec.volume.volume_handle, spec.target_path, published.message());
  Status rollback = UndoneUnlessMounted(
      client.NodeUnpublishVolume(UnpublishRequest(spec.volume.volume_handle, spec.target_path),
                                 deadline),
      spec.target_path, "published");
  if (rollback.ok()) rollback = ctx.store.DeletePublication(spec.target_path);
  NoteUndo(ctx, "publication", PublicationRepairKey(spec.target_path), rollback);
  return Status(published.code(), published.message() + RollbackNote(rollback));
}

Status UnpublishVolume(BridgeContext& ctx, const PublicationRecord& record,
                       const Deadline& deadline) {
  PublicationRecord removing = record;
  removing.phase = Phase::kRemoving;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutPublication(removing));
  const DriverConfig* driver = ctx.config.FindDriver(record.flex_driver);
  if (driver == nullptr) {
    return FailedPrecondition("driver " + record.flex_driver +
                              " is no longer in the bridge configuration; cannot unpublish " +
                              record.volume_id);
  }
  FLEXCSI_RETURN_IF_ERROR(
      UndoneUnlessMounted(ctx.ClientFor(*driver).NodeUnpublishVolume(
                              UnpublishRequest(record.volume_id, record.target_path), deadline),
                          record.target_path, "published"));
  return ctx.store.DeletePublication(record.target_path);
}

Status DetachVolume(BridgeContext& ctx, const AttachmentRecord& record, const Deadline& deadline) {
  AttachmentRecord removing = record;
  removing.phase = Phase::kRemoving;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutAttachment(removing));
  const DriverConfig* driver = ctx.config.FindDriver(record.flex_driver);
  if (driver == nullptr) {
    return FailedPrecondition("driver " + record.flex_driver +
                              " is no longer in the bridge configuration; cannot detach " +
                              record.volume_id);
  }
  CsiClient& client = ctx.ClientFor(*driver);
  auto caps = client.ControllerGetCapabilities(deadline);
  if (!caps.ok()) return caps.status();
  if (caps->count(csi::v1::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME)) {
    csi::v1::ControllerUnpublishVolumeRequest req;
    req.set_volume_id(record.volume_id);
    req.set_node_id(record.node_id);
    Status unpublished = client.ControllerUnpublishVolume(req, deadline);
    // CSI: NOT_FOUND when the driver knows neither the volume nor the node, which leaves
    // nothing published to undo.
    if (unpublished.code() == Code::kNotFound) {
      spdlog::info("{}: nothing to detach", unpublished.message());
      unpublished = Status::Ok();
    }
    FLEXCSI_RETURN_IF_ERROR(unpublished);
  }
  return ctx.store.DeleteAttachment(record.flex_driver, record.volume_name, record.node_name);
}

}  // namespace flexcsi
