// One handler per FlexVolume call (flexvolume.md §2), each mapping the call to what kubelet's
// CSI plugin or the external-attacher would do (kubelet-csi.md §12). A handler reads top to
// bottom: validate arguments, resolve the CSI volume, take the volume lock, act, reply.
//
// `args` are argv[2..] exactly as kubelet passed them; the dispatcher has checked their count.
// Every handler returns the FlexVolume reply object and never throws.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/bridge_context.h"
#include "bridge/deadline.h"
#include "common/bridge_protocol.h"

namespace flexcsi {

struct FlexCall {
  const DriverConfig& driver;
  std::string name;
  std::vector<std::string> args;
  Deadline deadline;
};

// attach_calls.cc — controller side (kube-controller-manager) and waitforattach.
nlohmann::json HandleAttach(BridgeContext& ctx, const FlexCall& call);        // <json> <node>
nlohmann::json HandleIsAttached(BridgeContext& ctx, const FlexCall& call);    // <json> <node>
nlohmann::json HandleDetach(BridgeContext& ctx, const FlexCall& call);        // <volume> <node>
nlohmann::json HandleWaitForAttach(BridgeContext& ctx, const FlexCall& call); // <device> <json>

// device_calls.cc — the node-wide staging of attach:true drivers.
nlohmann::json HandleMountDevice(BridgeContext& ctx, const FlexCall& call);    // <dmp> <dev> <json>
nlohmann::json HandleUnmountDevice(BridgeContext& ctx, const FlexCall& call);  // <dmp>

// mount_calls.cc — per pod.
nlohmann::json HandleMount(BridgeContext& ctx, const FlexCall& call);    // <dir> <json>
nlohmann::json HandleUnmount(BridgeContext& ctx, const FlexCall& call);  // <dir>

// expand_calls.cc
nlohmann::json HandleExpandVolume(BridgeContext& ctx, const FlexCall& call);  // <json> <dmp> <new> <old>
nlohmann::json HandleExpandFs(BridgeContext& ctx, const FlexCall& call);  // <json> <dev> <path> <new> <old>

// A Failure reply carrying the status message, or Success.
nlohmann::json ReplyFor(const Status& status);

}  // namespace flexcsi
