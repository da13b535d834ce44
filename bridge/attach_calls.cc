// attach, isattached, detach: what the external-attacher does for a VolumeAttachment
// (kubelet-csi.md §4), driven by kube-controller-manager's FlexVolume calls instead. And
// waitforattach, kubelet's check that the attach it depends on really happened.
#include <spdlog/spdlog.h>

#include "bridge/call_identity.h"
#include "bridge/csi_requests.h"
#include "bridge/flex_calls.h"
#include "bridge/flex_options.h"
#include "bridge/publish_context_token.h"
#include "bridge/volume_mapping.h"
#include "bridge/volume_operations.h"

namespace flexcsi {
namespace {

using ControllerCap = csi::v1::ControllerServiceCapability::RPC;

bool Has(const ControllerCapabilities& caps, ControllerCap::Type t) { return caps.count(t) > 0; }

Status CheckNodeName(const std::string& node) {
  if (node.empty()) return InvalidArgument("the node name argument is empty");
  return Status::Ok();
}

StatusOr<std::string> Attach(BridgeContext& ctx, const FlexCall& call) {
  const std::string& node_name = call.args[1];
  FLEXCSI_RETURN_IF_ERROR(CheckNodeName(node_name));
  // An inline volume's author chose its options: it is attached only where its driver entry
  // allows inline volumes, and never as a PV's volume (call_identity.h).
  CallContext about;
  about.node_name = node_name;
  auto resolved = ResolveCall(ctx, call, call.args[0], about);
  if (!resolved.ok()) return resolved.status();
  const CsiVolume& volume = resolved->volume;
  const std::string node_id = call.driver.NodeIdFor(node_name);
  auto guard = ctx.locks.Lock(VolumeLockKey(volume.driver, volume.volume_handle));

  CsiClient& client = ctx.ClientFor(call.driver);
  auto caps = client.ControllerGetCapabilities(call.deadline);
  if (!caps.ok()) return caps.status();

  AttachmentRecord record;
  record.flex_driver = call.driver.flex_driver;
  record.volume_name = resolved->options.volume_name;
  record.node_name = node_name;
  record.csi_driver = volume.driver;
  record.volume_id = volume.volume_handle;
  record.node_id = node_id;
  if (!Has(*caps, ControllerCap::PUBLISH_UNPUBLISH_VOLUME)) {
    // The external-attacher marks such volumes attached without any RPC.
    record.phase = Phase::kDone;
    FLEXCSI_RETURN_IF_ERROR(ctx.store.PutAttachment(record));
    return EncodePublishContextToken({});
  }

  record.phase = Phase::kInProgress;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutAttachment(record));
  csi::v1::ControllerPublishVolumeRequest req;
  req.set_volume_id(volume.volume_handle);
  req.set_node_id(node_id);
  MountCapabilitySpec capability{call.driver.access_mode, volume.fs_type, call.driver.mount_flags,
                                 std::nullopt};
  *req.mutable_volume_capability() =
      MountCapability(capability, Has(*caps, ControllerCap::SINGLE_NODE_MULTI_WRITER));
  // readonly must stay false unless the controller has PUBLISH_READONLY (CSI spec).
  req.set_readonly(resolved->options.readonly && Has(*caps, ControllerCap::PUBLISH_READONLY));
  CopyMap(volume.volume_attributes, req.mutable_volume_context());
  auto published = client.ControllerPublishVolume(
      req, call.deadline.LeavingForRollback(RollbackReserve(call.deadline)));
  if (!published.ok()) {
    Status rollback = DetachVolume(ctx, record, call.deadline);
    const std::string key =
        AttachmentRepairKey(record.flex_driver, record.volume_name, record.node_name);
    if (rollback.ok()) {
      ctx.repairs.RecordSuccess(key);
    } else {
      ctx.repairs.RecordFailure("attachment", key, rollback.ToString(),
                                RepairBackoff::Clock::now());
    }
    return Status(
        published.status().code(),
        published.status().message() +
            (rollback.ok() ? " (rolled back)" : " (rollback pending: " + rollback.message() + ")"));
  }
  for (const auto& [k, v] : published->publish_context()) record.publish_context[k] = v;
  record.phase = Phase::kDone;
  FLEXCSI_RETURN_IF_ERROR(ctx.store.PutAttachment(record));
  PublishContext context(published->publish_context().begin(), published->publish_context().end());
  return EncodePublishContextToken(context);
}

// Whether the driver itself says the volume is published to node_id; NOT_FOUND-free drivers
// without GET_VOLUME or LIST_VOLUMES_PUBLISHED_NODES leave the answer to our records.
StatusOr<std::optional<bool>> AskDriverIfAttached(CsiClient& client,
                                                  const ControllerCapabilities& caps,
                                                  const std::string& volume_id,
                                                  const std::string& node_id,
                                                  const Deadline& deadline) {
  auto contains = [&](const auto& ids) {
    for (const auto& id : ids) {
      if (id == node_id) return true;
    }
    return false;
  };
  if (Has(caps, ControllerCap::GET_VOLUME) &&
      Has(caps, ControllerCap::LIST_VOLUMES_PUBLISHED_NODES)) {
    csi::v1::ControllerGetVolumeRequest req;
    req.set_volume_id(volume_id);
    auto resp = client.ControllerGetVolume(req, deadline);
    if (resp.status().code() == Code::kNotFound) return std::optional<bool>(false);
    if (!resp.ok()) return resp.status();
    return std::optional<bool>(contains(resp->status().published_node_ids()));
  }
  if (Has(caps, ControllerCap::LIST_VOLUMES) &&
      Has(caps, ControllerCap::LIST_VOLUMES_PUBLISHED_NODES)) {
    csi::v1::ListVolumesRequest req;
    for (;;) {
      auto page = client.ListVolumes(req, deadline);
      if (!page.ok()) return page.status();
      for (const auto& entry : page->entries()) {
        if (entry.volume().volume_id() == volume_id) {
          return std::optional<bool>(contains(entry.status().published_node_ids()));
        }
      }
      if (page->next_token().empty()) return std::optional<bool>(false);
      req.set_starting_token(page->next_token());
    }
  }
  return std::optional<bool>();
}

StatusOr<bool> IsAttached(BridgeContext& ctx, const FlexCall& call) {
  const std::string& node_name = call.args[1];
  FLEXCSI_RETURN_IF_ERROR(CheckNodeName(node_name));
  auto resolved = ResolveFlexVolume(call.driver, call.args[0]);
  if (!resolved.ok()) return resolved.status();
  auto record =
      ctx.store.GetAttachment(call.driver.flex_driver, resolved->options.volume_name, node_name);
  if (!record.ok()) return record.status();
  CsiClient& client = ctx.ClientFor(call.driver);
  auto caps = client.ControllerGetCapabilities(call.deadline);
  if (!caps.ok()) return caps.status();
  if (Has(*caps, ControllerCap::PUBLISH_UNPUBLISH_VOLUME)) {
    auto says = AskDriverIfAttached(client, *caps, resolved->volume.volume_handle,
                                    call.driver.NodeIdFor(node_name), call.deadline);
    if (!says.ok()) return says.status();
    if (says->has_value()) return **says;
  }
  return record->has_value() && (*record)->phase == Phase::kDone;
}

Status Detach(BridgeContext& ctx, const FlexCall& call) {
  const std::string& volume_name = call.args[0];
  const std::string& node_name = call.args[1];
  if (volume_name.empty()) return InvalidArgument("the volume name argument is empty");
  FLEXCSI_RETURN_IF_ERROR(CheckNodeName(node_name));
  auto found = ctx.store.GetAttachment(call.driver.flex_driver, volume_name, node_name);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    // Already detached, or never attached through this bridge: detach must be idempotent.
    spdlog::info("detach: no attachment of {} to {} recorded; nothing to do", volume_name,
                 node_name);
    return Status::Ok();
  }
  auto guard = ctx.locks.Lock(VolumeLockKey((*found)->csi_driver, (*found)->volume_id));
  // Re-read under the lock: a concurrent detach may have finished meanwhile.
  auto record = ctx.store.GetAttachment(call.driver.flex_driver, volume_name, node_name);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return Status::Ok();
  return DetachVolume(ctx, **record, call.deadline);
}

}  // namespace

nlohmann::json ReplyFor(const Status& status) {
  return status.ok() ? FlexSuccess() : FlexFailure(status.ToString());
}

nlohmann::json HandleAttach(BridgeContext& ctx, const FlexCall& call) {
  auto device = Attach(ctx, call);
  if (!device.ok()) return ReplyFor(device.status());
  nlohmann::json reply = FlexSuccess();
  reply["device"] = *device;
  return reply;
}

nlohmann::json HandleIsAttached(BridgeContext& ctx, const FlexCall& call) {
  auto attached = IsAttached(ctx, call);
  if (!attached.ok()) return ReplyFor(attached.status());
  nlohmann::json reply = FlexSuccess();
  reply["attached"] = *attached;  // always explicit: a missing key means false to kubelet
  return reply;
}

nlohmann::json HandleDetach(BridgeContext& ctx, const FlexCall& call) {
  return ReplyFor(Detach(ctx, call));
}

nlohmann::json HandleWaitForAttach(BridgeContext& ctx, const FlexCall& call) {
  const std::string& device = call.args[0];
  // The device must be ours (or empty) and the options must name a volume this driver maps;
  // the controller side has already confirmed the attach by then (kubelet waits for
  // node.status.volumesAttached before calling).
  auto context = DecodePublishContextToken(device);
  if (!context.ok()) return ReplyFor(context.status());
  auto resolved = ResolveFlexVolume(call.driver, call.args[1]);
  if (!resolved.ok()) return ReplyFor(resolved.status());
  nlohmann::json reply = FlexSuccess();
  reply["device"] = device;
  return reply;
}

}  // namespace flexcsi
