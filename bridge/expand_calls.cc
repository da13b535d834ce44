// expandvolume -> ControllerExpandVolume, expandfs -> NodeExpandVolume (kubelet-csi.md §5.6).
// A driver without the matching EXPAND_VOLUME capability answers "Not supported", which makes
// kubelet fall back to its own defaults (new size; generic resize2fs/xfs_growfs).
#include <cerrno>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "bridge/csi_requests.h"
#include "bridge/flex_calls.h"
#include "bridge/kubelet_paths.h"
#include "bridge/volume_mapping.h"

namespace flexcsi {
namespace {

StatusOr<int64_t> ParseSize(const std::string& text, const char* what) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < 0) {
    return InvalidArgument(std::string(what) + " \"" + text +
                           "\" is not a non-negative number of bytes");
  }
  return static_cast<int64_t>(v);
}

nlohmann::json SuccessWithSize(int64_t bytes) {
  nlohmann::json reply = FlexSuccess();
  reply["volumeNewSize"] = bytes;
  return reply;
}

}  // namespace

nlohmann::json HandleExpandVolume(BridgeContext& ctx, const FlexCall& call) {
  auto new_size = ParseSize(call.args[2], "new size");
  if (!new_size.ok()) return ReplyFor(new_size.status());
  auto old_size = ParseSize(call.args[3], "old size");
  if (!old_size.ok()) return ReplyFor(old_size.status());
  auto resolved = ResolveFlexVolume(call.driver, call.args[0]);
  if (!resolved.ok()) return ReplyFor(resolved.status());
  const CsiVolume& volume = resolved->volume;

  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));
  CsiClient& client = ctx.ClientFor(call.driver);
  auto caps = client.ControllerGetCapabilities(call.deadline);
  if (!caps.ok()) return ReplyFor(caps.status());
  if (!caps->count(csi::v1::ControllerServiceCapability::RPC::EXPAND_VOLUME)) {
    return FlexNotSupported();
  }
  csi::v1::ControllerExpandVolumeRequest req;
  req.set_volume_id(volume.volume_handle);
  req.mutable_capacity_range()->set_required_bytes(*new_size);
  *req.mutable_volume_capability() = MountCapability(
      {call.driver.access_mode, volume.fs_type, call.driver.mount_flags, std::nullopt}, false);
  auto resp = client.ControllerExpandVolume(req, call.deadline);
  spdlog::info("expandvolume volume={} from={} to={} result={}", volume.volume_handle, *old_size,
               *new_size, resp.ok() ? "expanded" : resp.status().ToString());
  if (!resp.ok()) return ReplyFor(resp.status());
  return SuccessWithSize(resp->capacity_bytes() > 0 ? resp->capacity_bytes() : *new_size);
}

nlohmann::json HandleExpandFs(BridgeContext& ctx, const FlexCall& call) {
  auto path = CheckUnderKubeletRoot(call.args[2], ctx.config.kubelet_root);
  if (!path.ok()) return ReplyFor(path.status());
  auto new_size = ParseSize(call.args[3], "new size");
  if (!new_size.ok()) return ReplyFor(new_size.status());
  auto old_size = ParseSize(call.args[4], "old size");
  if (!old_size.ok()) return ReplyFor(old_size.status());
  auto resolved = ResolveFlexVolume(call.driver, call.args[0]);
  if (!resolved.ok()) return ReplyFor(resolved.status());
  const FlexOptions& options = resolved->options;
  const CsiVolume& volume = resolved->volume;

  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));
  CsiClient& client = ctx.ClientFor(call.driver);
  auto caps = client.NodeGetCapabilities(call.deadline);
  if (!caps.ok()) return ReplyFor(caps.status());
  using NodeCap = csi::v1::NodeServiceCapability::RPC;
  if (!caps->count(NodeCap::EXPAND_VOLUME)) return FlexNotSupported();

  csi::v1::NodeExpandVolumeRequest req;
  req.set_volume_id(volume.volume_handle);
  req.set_volume_path(*path);
  auto staging = ctx.store.FindStagingOfVolume(call.driver.flex_driver, options.volume_name);
  if (!staging.ok()) return ReplyFor(staging.status());
  if (staging->has_value() && (*staging)->StagedThroughCsi()) {
    req.set_staging_target_path((*staging)->staging_path);
  }
  req.mutable_capacity_range()->set_required_bytes(*new_size);
  *req.mutable_volume_capability() = MountCapability(
      {call.driver.access_mode, volume.fs_type, call.driver.mount_flags, std::nullopt},
      caps->count(NodeCap::SINGLE_NODE_MULTI_WRITER) > 0);
  auto resp = client.NodeExpandVolume(req, call.deadline);
  spdlog::info("expandfs volume={} path={} from={} to={} result={}", volume.volume_handle, *path,
               *old_size, *new_size, resp.ok() ? "expanded" : resp.status().ToString());
  if (!resp.ok()) return ReplyFor(resp.status());
  return SuccessWithSize(resp->capacity_bytes() > 0 ? resp->capacity_bytes() : *new_size);
}

}  // namespace flexcsi
