// CallDispatcher: turns one BridgeRequest into one FlexVolume reply. It checks what every call
// shares (a configured driver, the argv count of flexvolume.md §2.1, the deadline), routes to the
// call's handler, counts the result, and answers the bridge.* administrative calls.
#pragma once

#include <nlohmann/json.hpp>

#include "bridge/bridge_context.h"
#include "common/bridge_protocol.h"

namespace flexcsi {

class CallDispatcher {
 public:
  explicit CallDispatcher(BridgeContext& ctx) : ctx_(ctx) {}

  // Never throws; any failure becomes {"status":"Failure","message":...}.
  nlohmann::json Dispatch(const BridgeRequest& request);

  // The bridge.health answer: each driver's Probe and capabilities, record counts, and how many
  // records wait for the reconciler, whether the kubelet root is kubelet's. "ready" is true when
  // the root is and every driver probed ready.
  nlohmann::json Health();
  // What /healthz reports: the kubelet root is kubelet's (kubelet_root_check.h) and every
  // configured driver answers Probe as ready. Only these, so
  // that a readiness check every few seconds costs no capability RPCs and no table reads.
  bool Ready();
  // The bridge.state answer: every record.
  nlohmann::json State();

 private:
  nlohmann::json DispatchFlexCall(const BridgeRequest& request);

  BridgeContext& ctx_;
};

}  // namespace flexcsi
