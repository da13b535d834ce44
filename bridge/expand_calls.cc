// expandvolume -> ControllerExpandVolume; expandfs -> ControllerExpandVolume (where the node
// reaches the controller service) then NodeExpandVolume (kubelet-csi.md §5.6).
// expandvolume of a driver without controller EXPAND_VOLUME answers "Not supported" (kubelet's
// default: the new size). expandfs never does: kubelet's default would run resize2fs on the
// FlexVolume device path, which is a bridge token, not a device.
#include <cerrno>
#include <cstdlib>
#include <optional>

#include <spdlog/spdlog.h>

#include "bridge/call_identity.h"
#include "bridge/csi_requests.h"
#include "bridge/flex_calls.h"
#include "bridge/kubelet_paths.h"
#include "bridge/staging_marker.h"
#include "bridge/volume_mapping.h"
#include "common/mount_table.h"

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
  CallContext context;
  context.persistent_volume_only = true;
  auto resolved = ResolveCall(ctx, call, call.args[0], context);
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

namespace {

// A path where the volume's filesystem is mounted read-write, for NodeExpandVolume to grow it
// through. kubelet passes its device mount path (right after mountdevice) or a pod's volume dir;
// either may hold no filesystem (a record-only or no-stage staging shows the bridge's marker)
// or a read-only one (a read-only pod's publication: growing through it fails with EROFS).
// Empty when the volume is mounted read-write nowhere on this node yet.
StatusOr<std::string> WritablePathFor(BridgeContext& ctx, const CsiVolume& volume,
                                      const std::optional<StagingRecord>& staging,
                                      const std::string& path) {
  auto publication = ctx.store.GetPublication(path);
  if (!publication.ok()) return publication.status();
  if (publication->has_value() && !(*publication)->readonly && IsMountPoint(path)) return path;
  if (staging && staging->shape == StagingShape::kDriverMount && staging->phase == Phase::kDone &&
      IsMountPoint(staging->staging_path) && !IsStagingMarker(staging->staging_path)) {
    return staging->staging_path;
  }
  const bool ours = publication->has_value() || (staging && staging->staging_path == path);
  if (!ours && IsMountPoint(path) && !IsStagingMarker(path)) return path;  // kubelet's word
  auto all = ctx.store.ListPublications();
  if (!all.ok()) return all.status();
  for (const PublicationRecord& p : *all) {
    if (p.csi_driver == volume.driver && p.volume_id == volume.volume_handle && !p.readonly &&
        p.phase == Phase::kDone && IsMountPoint(p.target_path)) {
      return p.target_path;
    }
  }
  return std::string();
}

// Whether the driver's controller service can grow volumes, asked where the node bridge reaches
// it. Sets *reachable to false when there is no controller to ask (controllerEndpoint: none, or
// it does not answer).
bool ControllerCanExpand(BridgeContext& ctx, const DriverConfig& driver, const Deadline& deadline,
                         bool* reachable, std::string* why_not) {
  const std::string endpoint =
      driver.controller_endpoint.empty() ? driver.csi_endpoint : driver.controller_endpoint;
  if (endpoint == "none") {
    *reachable = false;
    *why_not = "the bridge configuration says controllerEndpoint: none";
    return false;
  }
  auto caps = ctx.clients.For(endpoint).ControllerGetCapabilities(deadline);
  if (!caps.ok()) {
    *reachable = false;
    *why_not =
        "its controller service at " + endpoint + " did not answer: " + caps.status().ToString();
    return false;
  }
  *reachable = true;
  if (!caps->count(csi::v1::ControllerServiceCapability::RPC::EXPAND_VOLUME)) {
    *why_not = "its controller service has no EXPAND_VOLUME";
    return false;
  }
  return true;
}

Status ExpandFs(BridgeContext& ctx, const FlexCall& call, int64_t* grown_to) {
  auto kubelet_path = ParseKubeletPath(call.args[2], ctx.config.kubelet_root);
  if (!kubelet_path.ok()) return kubelet_path.status();
  const std::string* path = &kubelet_path->path;
  auto new_size = ParseSize(call.args[3], "new size");
  if (!new_size.ok()) return new_size.status();
  auto old_size = ParseSize(call.args[4], "old size");
  if (!old_size.ok()) return old_size.status();
  CallContext context;
  context.persistent_volume_only = true;
  auto resolved = ResolveCall(ctx, call, call.args[0], context);
  if (!resolved.ok()) return resolved.status();
  const FlexOptions& options = resolved->options;
  const CsiVolume& volume = resolved->volume;
  *grown_to = *new_size;

  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));
  CsiClient& client = ctx.ClientFor(call.driver);
  auto caps = client.NodeGetCapabilities(call.deadline);
  if (!caps.ok()) return caps.status();
  using NodeCap = csi::v1::NodeServiceCapability::RPC;
  const bool node_expand = caps->count(NodeCap::EXPAND_VOLUME) > 0;
  bool controller_reachable = false;
  std::string no_controller;
  const bool controller_expand =
      ControllerCanExpand(ctx, call.driver, call.deadline, &controller_reachable, &no_controller);
  if (!node_expand && !controller_expand && controller_reachable) {
    return FailedPrecondition("CSI driver " + volume.driver +
                              " cannot expand volumes: neither its node nor its controller "
                              "service has EXPAND_VOLUME; volume " +
                              volume.volume_handle + " stays at its size");
  }

  // kube-controller-manager never calls expandvolume for FlexVolume PVs (flexvolume.md §2.12):
  // it only raises the PV's capacity. So the controller half of the growth happens here, first;
  // ControllerExpandVolume is idempotent when the volume already has the size.
  bool node_needed = node_expand;
  if (controller_expand) {
    const std::string endpoint = call.driver.controller_endpoint.empty()
                                     ? call.driver.csi_endpoint
                                     : call.driver.controller_endpoint;
    csi::v1::ControllerExpandVolumeRequest req;
    req.set_volume_id(volume.volume_handle);
    req.mutable_capacity_range()->set_required_bytes(*new_size);
    *req.mutable_volume_capability() = MountCapability(
        {call.driver.access_mode, volume.fs_type, call.driver.mount_flags, std::nullopt}, false);
    auto grown = ctx.clients.For(endpoint).ControllerExpandVolume(req, call.deadline);
    spdlog::info("expandfs volume={} ControllerExpandVolume to={} result={}", volume.volume_handle,
                 *new_size, grown.ok() ? "expanded" : grown.status().ToString());
    if (!grown.ok()) return grown.status();
    if (grown->capacity_bytes() > 0) *grown_to = grown->capacity_bytes();
    node_needed = node_expand && grown->node_expansion_required();
  }
  if (!node_needed) {
    if (!controller_expand) {
      spdlog::info(
          "expandfs volume={}: the node has nothing to grow and {}; the volume is grown "
          "cluster-side (flexcsi-controller)",
          volume.volume_handle, no_controller);
    }
    return Status::Ok();
  }

  auto staging = ctx.store.FindStagingOfVolume(call.driver.flex_driver, options.volume_name);
  if (!staging.ok()) return staging.status();
  auto writable = WritablePathFor(ctx, volume, *staging, *path);
  if (!writable.ok()) return writable.status();
  if (writable->empty()) {
    if (!staging->has_value()) {
      return FailedPrecondition("volume " + volume.volume_handle +
                                " is mounted read-write nowhere on this node, so its filesystem "
                                "cannot grow here; a read-write pod's mount will grow it");
    }
    // Right after mountdevice of a driver that mounts nothing at its staging path: the
    // filesystem appears only with the first publication. kubelet's CSI plugin retries node
    // expansion after NodePublish in that case; FlexVolume has no "not yet", so the bridge keeps
    // the request and grows the filesystem at the first read-write mount (mount_calls.cc).
    StagingRecord pending = **staging;
    pending.request["pendingNodeExpandBytes"] = *new_size;
    FLEXCSI_RETURN_IF_ERROR(ctx.store.PutStaging(pending));
    spdlog::info(
        "expandfs volume={} path={}: no filesystem mounted read-write yet; grows to {} "
        "at the first read-write mount",
        volume.volume_handle, *path, *new_size);
    return Status::Ok();
  }

  csi::v1::NodeExpandVolumeRequest req;
  req.set_volume_id(volume.volume_handle);
  req.set_volume_path(*writable);
  if (staging->has_value() && (*staging)->StagedThroughCsi() &&
      caps->count(NodeCap::STAGE_UNSTAGE_VOLUME)) {
    req.set_staging_target_path((*staging)->staging_path);
  }
  req.mutable_capacity_range()->set_required_bytes(*new_size);
  *req.mutable_volume_capability() = MountCapability(
      {call.driver.access_mode, volume.fs_type, call.driver.mount_flags, std::nullopt},
      caps->count(NodeCap::SINGLE_NODE_MULTI_WRITER) > 0);
  auto resp = client.NodeExpandVolume(req, call.deadline);
  spdlog::info("expandfs volume={} path={} via={} from={} to={} result={}", volume.volume_handle,
               *path, *writable, *old_size, *new_size,
               resp.ok() ? "expanded" : resp.status().ToString());
  if (!resp.ok()) {
    if (resp.status().code() == Code::kOutOfRange && !controller_expand) {
      return Status(
          Code::kOutOfRange,
          resp.status().message() + "; the volume has not grown to " + std::to_string(*new_size) +
              " bytes and this node cannot grow it (" + no_controller +
              "). Run flexcsi-controller as the resizer of this driver's claims: it calls "
              "ControllerExpandVolume, and kubelet's next expandfs then succeeds");
    }
    return resp.status();
  }
  if (resp->capacity_bytes() > 0) *grown_to = resp->capacity_bytes();
  if (staging->has_value() && (*staging)->request.contains("pendingNodeExpandBytes")) {
    StagingRecord done = **staging;
    done.request.erase("pendingNodeExpandBytes");
    FLEXCSI_RETURN_IF_ERROR(ctx.store.PutStaging(done));
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json HandleExpandFs(BridgeContext& ctx, const FlexCall& call) {
  int64_t grown_to = 0;
  Status expanded = ExpandFs(ctx, call, &grown_to);
  if (!expanded.ok()) return ReplyFor(expanded);
  return SuccessWithSize(grown_to);
}

}  // namespace flexcsi
