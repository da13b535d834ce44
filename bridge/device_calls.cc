// mountdevice and unmountdevice: kubelet's MountDevice/UnmountDevice for a CSI volume
// (kubelet-csi.md §5.2, §5.5), with the FlexVolume device mount path as staging_target_path.
// Used by attach:true drivers; attach:false drivers are staged by mount (mount_calls.cc).
#include <spdlog/spdlog.h>

#include "bridge/call_identity.h"
#include "bridge/flex_calls.h"
#include "bridge/kubelet_paths.h"
#include "bridge/rule_secrets.h"
#include "bridge/staging_marker.h"
#include "bridge/volume_operations.h"

namespace flexcsi {
namespace {

Status MountDevice(BridgeContext& ctx, const FlexCall& call) {
  auto device_mount_path = ParseKubeletPath(call.args[0], ctx.config.kubelet_root);
  if (!device_mount_path.ok()) return device_mount_path.status();
  if (device_mount_path->kind != KubeletPathKind::kDeviceMountPath) {
    return InvalidArgument("mountdevice path " + device_mount_path->path +
                           " is not a FlexVolume device mount path");
  }
  const std::string* staging_path = &device_mount_path->path;
  auto publish_context = DecodePublishContextToken(call.args[1]);
  if (!publish_context.ok()) return publish_context.status();
  CallContext context;
  context.path = &*device_mount_path;
  context.node_name = ctx.node_name;
  auto resolved = ResolveCall(ctx, call, call.args[2], context);
  if (!resolved.ok()) return resolved.status();
  const FlexOptions& options = resolved->options;
  const CsiVolume& volume = resolved->volume;

  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));
  auto caps = ctx.ClientFor(call.driver).NodeGetCapabilities(call.deadline);
  if (!caps.ok()) return caps.status();

  StageSpec spec;
  spec.driver = &call.driver;
  spec.volume_name = options.volume_name;
  spec.volume = volume;
  spec.staging_path = *staging_path;
  spec.owner = StagingOwner::kKubelet;
  spec.source = resolved->identity.source;
  spec.publish_context = *publish_context;
  // mountdevice carries no fsGroup, pod or secrets (flexvolume.md §2.8): only a rule's
  // `secrets` give the stage request any.
  spec.capability = {call.driver.access_mode, volume.fs_type, call.driver.mount_flags,
                     std::nullopt};
  auto secrets = CallSecrets(volume, options, resolved->identity, ctx.secrets);
  if (!secrets.ok()) return secrets.status();
  spec.secrets = std::move(*secrets);
  Status staged = StageVolume(ctx, spec, *caps, call.deadline);
  spdlog::info("mountdevice volume={} staging={} result={}", volume.volume_handle, *staging_path,
               staged.ok() ? "staged" : staged.ToString());
  // Header comment of this file: the FlexVolume device mount path is the CSI staging path; when
  // the driver mounts nothing there, StageVolume leaves the bridge's marker instead.
  return staged;
}

Status UnmountDevice(BridgeContext& ctx, const FlexCall& call) {
  auto device_mount_path = ParseKubeletPath(call.args[0], ctx.config.kubelet_root);
  if (!device_mount_path.ok()) return device_mount_path.status();
  const std::string* staging_path = &device_mount_path->path;
  std::string key;
  StatusOr<std::optional<StagingRecord>> found = std::optional<StagingRecord>();
  for (const std::string& candidate : RecordKeysOf(*device_mount_path)) {
    key = candidate;
    found = ctx.store.GetStaging(key);
    if (!found.ok() || found->has_value()) break;
  }
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    // Like kubelet without vol_data.json (kubelet-csi.md §5.5): no volume of ours is there. A
    // marker without a record (a crash between the two) still goes, or kubelet's rmdir fails.
    spdlog::info("unmountdevice staging={}: no staging recorded; nothing to unstage",
                 *staging_path);
    return UnmountStagingMarker(*staging_path);
  }
  auto guard = ctx.locks.Lock(VolumeLockKey((*found)->csi_driver, (*found)->volume_id));
  // Re-read under the lock: a concurrent call may have changed or removed it.
  auto record = ctx.store.GetStaging(key);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return Status::Ok();
  Status unstaged = UnstageVolume(ctx, **record, call.deadline);
  spdlog::info("unmountdevice volume={} staging={} result={}", (*record)->volume_id, *staging_path,
               unstaged.ok() ? "unstaged" : unstaged.ToString());
  return unstaged;
}

}  // namespace

nlohmann::json HandleMountDevice(BridgeContext& ctx, const FlexCall& call) {
  return ReplyFor(MountDevice(ctx, call));
}

nlohmann::json HandleUnmountDevice(BridgeContext& ctx, const FlexCall& call) {
  return ReplyFor(UnmountDevice(ctx, call));
}

}  // namespace flexcsi
