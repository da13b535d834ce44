// The four node-side volume operations, each a CSI RPC wrapped in its record transitions:
//
//   StageVolume:     record in-progress -> NodeStageVolume -> record done
//   PublishVolume:   record in-progress -> NodePublishVolume -> record done
//   UnpublishVolume: record removing -> NodeUnpublishVolume -> record deleted
//   UnstageVolume:   record removing -> NodeUnstageVolume -> record deleted
//
// FlexVolume has no "uncertain" state (flexvolume.md §9): after a Failure kubelet will not call
// unmount for that pod. So a failed Stage or Publish is rolled back with its negation before the
// Failure is returned; if the rollback itself fails, the record stays in-progress and the
// reconciler finishes the rollback later, with backoff (repair_backoff.h). Nothing is left mounted
// without a record.
//
// An undo (NodeUnstageVolume, NodeUnpublishVolume) answered NOT_FOUND, or FAILED_PRECONDITION
// "not staged" / "not published", is done when nothing but the bridge's marker is mounted at the
// path: the driver holds nothing of the volume (it may never have had it: a pod's inline volume
// naming nothing). ControllerUnpublishVolume answered NOT_FOUND is done too.
//
// REQUIRES for all: the caller holds the volume's lock in ctx.locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bridge/bridge_context.h"
#include "bridge/call_identity.h"
#include "bridge/csi_requests.h"
#include "bridge/deadline.h"
#include "bridge/publish_context_token.h"
#include "bridge/volume_mapping.h"

namespace flexcsi {

struct StageSpec {
  const DriverConfig* driver = nullptr;
  std::string volume_name;  // FlexVolume pvOrVolumeName
  CsiVolume volume;
  std::string staging_path;
  StagingOwner owner = StagingOwner::kKubelet;
  // Who the staging is for (call_identity.h), kept in the record: a staging is never shared
  // between a PV and an inline volume.
  CallSource source = CallSource::kTrusted;
  PublishContext publish_context;
  MountCapabilitySpec capability;
  std::map<std::string, std::string> secrets;  // never stored
};

// OK when a call of `source` may use `record`: the record was made for the same kind of volume
// (PV or inline), or one side is trusted (trustPodAuthors, or a record from before 0.2.0, which
// counts as a PV's). FAILED_PRECONDITION naming the volume and the kind it is staged for.
Status CheckStagingSource(const StagingRecord& record, CallSource source);

// Stages unless the same volume is already staged there (idempotent). For drivers without
// STAGE_UNSTAGE only the record is written (it carries the publish context to mount).
// FAILED_PRECONDITION when another volume is staged at the path.
Status StageVolume(BridgeContext& ctx, const StageSpec& spec, const NodeCapabilities& caps,
                   const Deadline& deadline);

// Unstages and deletes the record. FAILED_PRECONDITION while publications still use it.
Status UnstageVolume(BridgeContext& ctx, const StagingRecord& record, const Deadline& deadline);

struct PublishSpec {
  const DriverConfig* driver = nullptr;
  std::string volume_name;
  CsiVolume volume;
  std::string target_path;
  std::string
      staging_path;  // the staging it uses (sent to CSI only with STAGE_UNSTAGE); may be empty
  std::string pod_uid;
  bool readonly = false;
  PublishContext publish_context;
  MountCapabilitySpec capability;
  std::map<std::string, std::string> volume_context;  // volume attributes + pod info
  std::map<std::string, std::string> secrets;         // never stored
};

Status PublishVolume(BridgeContext& ctx, const PublishSpec& spec, const NodeCapabilities& caps,
                     const Deadline& deadline);

Status UnpublishVolume(BridgeContext& ctx, const PublicationRecord& record,
                       const Deadline& deadline);

// The controller side's negation: record removing -> ControllerUnpublishVolume (when the driver
// has PUBLISH_UNPUBLISH_VOLUME; otherwise attach made no RPC either) -> record deleted. Used by
// detach, by attach's rollback and by the reconciler.
Status DetachVolume(BridgeContext& ctx, const AttachmentRecord& record, const Deadline& deadline);

// Removes `path` and, for bridge-owned staging paths, its now-empty parent (the sha256 dir).
// Best effort: kubelet removes its own directories too.
void RemoveDirectoryIfEmpty(const std::string& path);

}  // namespace flexcsi
