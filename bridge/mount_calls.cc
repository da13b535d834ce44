// mount and unmount: kubelet's SetUp/TearDown for a CSI volume (kubelet-csi.md §5.3, §5.4), with
// the FlexVolume pod volume dir as target_path. For attach:false drivers kubelet never calls
// mountdevice, so the bridge stages the volume itself on the first mount and unstages it when the
// last publication using it goes (reference counting by publication records).
#include <spdlog/spdlog.h>

#include "bridge/call_identity.h"
#include "bridge/flex_calls.h"
#include "bridge/kubelet_paths.h"
#include "bridge/rule_secrets.h"
#include "bridge/staging_marker.h"
#include "bridge/volume_operations.h"
#include "common/mount_table.h"

namespace flexcsi {
namespace {

using NodeCap = csi::v1::NodeServiceCapability::RPC;

std::map<std::string, std::string> VolumeContextFor(const DriverConfig& driver,
                                                    const CsiVolume& volume,
                                                    const FlexOptions& options) {
  auto context = volume.volume_attributes;
  if (driver.pod_info_on_mount) {
    context["csi.storage.k8s.io/pod.name"] = options.pod_name;
    context["csi.storage.k8s.io/pod.namespace"] = options.pod_namespace;
    context["csi.storage.k8s.io/pod.uid"] = options.pod_uid;
    context["csi.storage.k8s.io/serviceAccount.name"] = options.service_account;
    context["csi.storage.k8s.io/ephemeral"] = "false";
  }
  return context;
}

// Where the bridge stages an attach:false volume itself. A PV's volume has one staging per node,
// shared by its pods, as kubelet's CSI plugin shares it. An inline volume's is its pod's alone:
// never shared with a PV's, nor with another pod's, whose author wrote the options differently.
std::string BridgeStagingPathOf(BridgeContext& ctx, const CsiVolume& volume,
                                 const ResolvedCall& call) {
  std::string key = volume.volume_handle;
  if (call.identity.source == CallSource::kInline) {
    key = "inline/" + call.identity.pod_uid + "/" + call.options.volume_name;
  }
  return BridgeStagingPathFor(ctx.config.kubelet_root, volume.driver, key);
}

// Finds (attach:true) or makes (attach:false) the staging the publication will use, and fills
// in spec.staging_path and spec.publish_context. Sets *self_staged when this call staged it.
Status PrepareStaging(BridgeContext& ctx, const FlexCall& call, const ResolvedCall& resolved,
                      const NodeCapabilities& caps, PublishSpec* spec, bool* self_staged) {
  const FlexOptions& options = resolved.options;
  const bool stage_rpc = caps.count(NodeCap::STAGE_UNSTAGE_VOLUME) > 0;
  if (call.driver.attach) {
    auto staging = ctx.store.FindStagingOfVolume(call.driver.flex_driver, options.volume_name);
    if (!staging.ok()) return staging.status();
    if (!staging->has_value()) {
      if (stage_rpc) {
        return FailedPrecondition("volume " + options.volume_name +
                                  " is not staged on this node; kubelet must run mountdevice "
                                  "before mount");
      }
      return Status::Ok();  // nothing staged, no publish context: the driver needs neither
    }
    const StagingRecord& r = **staging;
    // kubelet keys an attachable FlexVolume's device mount by its name alone, so pods whose
    // volumes merely share a name (an inline volume named like a PV, two namespaces' inline
    // volumes) reach the same staging.
    if (Status same = RefuseAnotherVolume("its staging", r.csi_driver, r.volume_id,
                                          spec->volume.driver, spec->volume.volume_handle);
        !same.ok()) {
      return FailedPrecondition("another volume is staged under this name: volume " +
                                options.volume_name + " on this node: " + same.message() +
                                " (docs/security.md)");
    }
    FLEXCSI_RETURN_IF_ERROR(CheckStagingSource(r, resolved.identity.source));
    if (stage_rpc && r.phase != Phase::kDone) {
      return FailedPrecondition("volume " + options.volume_name + " is " + PhaseName(r.phase) +
                                " at " + r.staging_path);
    }
    spec->staging_path = r.staging_path;
    const nlohmann::json context = r.request.value("publishContext", nlohmann::json::object());
    for (const auto& [k, v] : context.items()) {
      if (v.is_string()) spec->publish_context[k] = v.get<std::string>();
    }
    return Status::Ok();
  }
  if (!stage_rpc) return Status::Ok();

  StageSpec stage;
  stage.driver = &call.driver;
  stage.volume_name = options.volume_name;
  stage.volume = spec->volume;
  stage.staging_path = BridgeStagingPathOf(ctx, spec->volume, resolved);
  stage.owner = StagingOwner::kBridge;
  stage.source = resolved.identity.source;
  stage.capability = spec->capability;
  // FlexVolume has one secret set; the CSI spec lets a CO pass the same secrets to every RPC.
  stage.secrets = spec->secrets;
  auto before = ctx.store.GetStaging(stage.staging_path);
  if (!before.ok()) return before.status();
  FLEXCSI_RETURN_IF_ERROR(StageVolume(ctx, stage, caps, call.deadline));
  *self_staged = !before->has_value();
  spec->staging_path = stage.staging_path;
  return Status::Ok();
}

// Unstages a staging no publication uses any more and for which no call will ever come: the
// bridge's own (kubelet calls only mount and unmount for attach:false drivers). A failure is
// handed to the reconciler's backoff (repair_backoff.h), which retries it 1 s later, then 2 s,
// 4 s, ..., rather than at its next periodic pass.
Status UnstageUnusedStaging(BridgeContext& ctx, const StagingRecord& record,
                            const Deadline& deadline) {
  Status unstaged = UnstageVolume(ctx, record, deadline);
  const std::string key = StagingRepairKey(record.staging_path);
  if (unstaged.ok()) {
    ctx.repairs.RecordSuccess(key);
  } else {
    ctx.repairs.RecordFailure("staging", key, unstaged.ToString(), RepairBackoff::Clock::now());
  }
  return unstaged;
}

// After a failed publication: the bridge's own staging goes when nothing else uses it.
void ReleaseUnusedBridgeStaging(BridgeContext& ctx, const std::string& staging_path,
                                const Deadline& deadline) {
  auto record = ctx.store.GetStaging(staging_path);
  if (!record.ok() || !record->has_value() || (*record)->owner != StagingOwner::kBridge) return;
  auto users = ctx.store.CountPublicationsOfStaging(staging_path);
  if (!users.ok() || *users > 0) return;
  Status unstaged = UnstageUnusedStaging(ctx, **record, deadline);
  if (!unstaged.ok()) {
    spdlog::warn("unstaging unused {} failed, the reconciler will retry: {}", staging_path,
                 unstaged.ToString());
  }
}

// Finishes a node expansion that expandfs could not do because nothing was mounted read-write
// yet (expand_calls.cc): the first read-write publication grows the filesystem. A failure is
// logged and kept for the next read-write mount; the pod's mount itself has succeeded.
void FinishPendingNodeExpansion(BridgeContext& ctx, const FlexCall& call, const PublishSpec& spec,
                                const NodeCapabilities& caps) {
  if (spec.readonly || !caps.count(NodeCap::EXPAND_VOLUME)) return;
  auto staging = ctx.store.FindStagingOfVolume(call.driver.flex_driver, spec.volume_name);
  if (!staging.ok() || !staging->has_value()) return;
  StagingRecord record = **staging;
  // The staging of this very volume: another volume of the same name (an inline volume named
  // like a PV, on an attach:false driver) has a staging of its own and no expansion to finish.
  if (record.volume_id != spec.volume.volume_handle) return;
  auto pending = record.request.find("pendingNodeExpandBytes");
  if (pending == record.request.end() || !pending->is_number_integer()) return;
  csi::v1::NodeExpandVolumeRequest req;
  req.set_volume_id(spec.volume.volume_handle);
  req.set_volume_path(spec.target_path);
  if (record.StagedThroughCsi() && caps.count(NodeCap::STAGE_UNSTAGE_VOLUME)) {
    req.set_staging_target_path(record.staging_path);
  }
  req.mutable_capacity_range()->set_required_bytes(pending->get<int64_t>());
  MountCapabilitySpec capability = spec.capability;
  capability.mount_group.reset();
  *req.mutable_volume_capability() =
      MountCapability(capability, caps.count(NodeCap::SINGLE_NODE_MULTI_WRITER) > 0);
  auto grown = ctx.ClientFor(call.driver).NodeExpandVolume(req, call.deadline);
  spdlog::info("mount volume={} target={}: pending node expansion to {} result={}",
               spec.volume.volume_handle, spec.target_path, pending->get<int64_t>(),
               grown.ok() ? "expanded" : grown.status().ToString());
  if (!grown.ok()) return;
  record.request.erase("pendingNodeExpandBytes");
  Status kept = ctx.store.PutStaging(record);
  if (!kept.ok()) spdlog::warn("recording the finished expansion failed: {}", kept.ToString());
}

Status Mount(BridgeContext& ctx, const FlexCall& call) {
  auto pod_volume_dir = ParseKubeletPath(call.args[0], ctx.config.kubelet_root);
  if (!pod_volume_dir.ok()) return pod_volume_dir.status();
  if (pod_volume_dir->kind != KubeletPathKind::kPodVolumeDir) {
    return InvalidArgument("mount path " + pod_volume_dir->path + " is not a pod volume dir");
  }
  const std::string* target = &pod_volume_dir->path;
  CallContext context;
  context.path = &*pod_volume_dir;
  context.node_name = ctx.node_name;
  auto resolved = ResolveCall(ctx, call, call.args[1], context);
  if (!resolved.ok()) return resolved.status();
  const FlexOptions& options = resolved->options;
  const CsiVolume& volume = resolved->volume;

  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));
  auto caps = ctx.ClientFor(call.driver).NodeGetCapabilities(call.deadline);
  if (!caps.ok()) return caps.status();

  PublishSpec spec;
  spec.driver = &call.driver;
  spec.volume_name = options.volume_name;
  spec.volume = volume;
  spec.target_path = *target;
  spec.pod_uid = options.pod_uid;
  spec.readonly = options.readonly;
  spec.capability = {call.driver.access_mode, volume.fs_type, call.driver.mount_flags,
                     options.fs_group};
  spec.volume_context = VolumeContextFor(call.driver, volume, options);
  auto secrets = CallSecrets(volume, options, resolved->identity, ctx.secrets);
  if (!secrets.ok()) return secrets.status();
  spec.secrets = std::move(*secrets);

  bool self_staged = false;
  FLEXCSI_RETURN_IF_ERROR(PrepareStaging(ctx, call, *resolved, *caps, &spec, &self_staged));
  Status published = PublishVolume(ctx, spec, *caps, call.deadline);
  if (!published.ok() && self_staged) {
    ReleaseUnusedBridgeStaging(ctx, spec.staging_path, call.deadline);
  }
  if (published.ok()) FinishPendingNodeExpansion(ctx, call, spec, *caps);
  spdlog::info("mount volume={} target={} readonly={} staging={} result={}", volume.volume_handle,
               *target, spec.readonly, spec.staging_path.empty() ? "-" : spec.staging_path,
               published.ok() ? "published" : published.ToString());
  return published;
}

Status Unmount(BridgeContext& ctx, const FlexCall& call) {
  auto pod_volume_dir = ParseKubeletPath(call.args[0], ctx.config.kubelet_root);
  if (!pod_volume_dir.ok()) return pod_volume_dir.status();
  const std::string* target = &pod_volume_dir->path;
  std::string key;
  StatusOr<std::optional<PublicationRecord>> found = std::optional<PublicationRecord>();
  for (const std::string& candidate : RecordKeysOf(*pod_volume_dir)) {
    key = candidate;
    found = ctx.store.GetPublication(key);
    if (!found.ok() || found->has_value()) break;
  }
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    // kubelet calls unmount whenever the pod dir exists, mounted or not (flexvolume.md §2.11).
    if (IsMountPoint(*target)) {
      return FailedPrecondition(*target +
                                " is mounted but flexcsi-bridge has no record of "
                                "publishing it; refusing to unmount what it did not mount");
    }
    return Status::Ok();
  }
  auto guard = ctx.locks.Lock(VolumeLockKey((*found)->csi_driver, (*found)->volume_id));
  auto record = ctx.store.GetPublication(key);  // re-read under the lock
  if (!record.ok()) return record.status();
  if (!record->has_value()) return Status::Ok();
  const PublicationRecord publication = **record;

  Status unpublished = UnpublishVolume(ctx, publication, call.deadline);
  spdlog::info("unmount volume={} target={} result={}", publication.volume_id, *target,
               unpublished.ok() ? "unpublished" : unpublished.ToString());
  FLEXCSI_RETURN_IF_ERROR(unpublished);
  if (publication.staging_path.empty()) return Status::Ok();

  auto staging = ctx.store.GetStaging(publication.staging_path);
  if (!staging.ok()) return staging.status();
  if (!staging->has_value()) return Status::Ok();
  auto users = ctx.store.CountPublicationsOfStaging(publication.staging_path);
  if (!users.ok()) return users.status();
  if (*users > 0) return Status::Ok();
  const StagingRecord& s = **staging;
  // The last pod left. The bridge's own staging is unstaged now. A kubelet-owned staging waits
  // for unmountdevice, which kubelet calls because its device mount path is a mount point (the
  // driver's mount or the bridge's marker); only a record written before markers existed (a
  // driver without STAGE_UNSTAGE, nothing mounted) goes now, since no unmountdevice will come.
  const bool legacy_unmarked = s.owner == StagingOwner::kKubelet && !s.StagedThroughCsi() &&
                               !s.marker && !IsStagingMarker(s.staging_path);
  if (s.owner == StagingOwner::kBridge || legacy_unmarked) {
    Status unstaged = UnstageUnusedStaging(ctx, s, call.deadline);
    spdlog::info("unmount: last publication of volume={} gone, unstage {} result={}", s.volume_id,
                 s.staging_path, unstaged.ok() ? "unstaged" : unstaged.ToString());
    return unstaged;
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json HandleMount(BridgeContext& ctx, const FlexCall& call) {
  return ReplyFor(Mount(ctx, call));
}

nlohmann::json HandleUnmount(BridgeContext& ctx, const FlexCall& call) {
  return ReplyFor(Unmount(ctx, call));
}

}  // namespace flexcsi
