// CallDispatcher: turns one BridgeRequest into one FlexVolume reply. It checks what every call
// shares (a configured driver, the argv count of flexvolume.md §2.1, the deadline), routes to the
// call's handler, counts the result, and answers the bridge.* administrative calls.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "bridge/bridge_context.h"
#include "bridge/driver_probe_cache.h"
#include "bridge/metrics_http_server.h"
#include "common/bridge_protocol.h"

namespace flexcsi {

class CallDispatcher {
 public:
  explicit CallDispatcher(BridgeContext& ctx) : ctx_(ctx) {}

  // Never throws; any failure becomes {"status":"Failure","message":...}.
  nlohmann::json Dispatch(const BridgeRequest& request);

  // The bridge.health answer (the socket's administrative call, `flexcsi doctor`): each
  // driver's Probe and capabilities asked live, with the background prober's last answer
  // ("lastProbe"), record counts, how many records wait for the reconciler, whether the kubelet
  // root is kubelet's. "ready" is true when the root is and every driver probed ready. Runs on
  // the request server's threads, never on the metrics server's.
  nlohmann::json Health();
  // What /healthz reports: the kubelet root is kubelet's (kubelet_root_check.h) and every
  // configured driver's last background Probe answered ready recently (DriverProbeCache), with
  // one line per driver saying so and how old that answer is. Never calls a driver, so the
  // metrics server's thread never waits on one; not ready before StartDriverProbes().
  HealthAnswer Ready() const;
  // Starts probing every configured driver in the background, for Ready() and Health().
  // REQUIRES: ctx's config and clients outlive this dispatcher; called once, by the daemon.
  void StartDriverProbes(DriverProbeCache::Options options = {});
  // Stops the probing (waits for Probes in progress, at most their timeout). Idempotent.
  void StopDriverProbes();
  // The bridge.state answer: every record.
  nlohmann::json State();

 private:
  nlohmann::json DispatchFlexCall(const BridgeRequest& request);

  BridgeContext& ctx_;
  std::unique_ptr<DriverProbeCache> probes_;  // set by StartDriverProbes()
};

}  // namespace flexcsi
