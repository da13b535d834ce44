// Metrics: the bridge's counters, gauges and histograms, rendered in the Prometheus text
// exposition format 0.0.4. One instance per daemon, shared by every thread that serves a call;
// MetricsHttpServer (metrics_http_server.h) exposes it on GET /metrics.
//
// Families (all names start with flexcsi_):
//   flexcsi_<component>_build_info{version,commit}           gauge, always 1 (once
//                                                            ExposeBuildInfo names the component)
//   flexcsi_flexvolume_calls_total{operation,status}         counter
//   flexcsi_csi_rpc_duration_seconds{method,code}            histogram, 1 ms .. 120 s
//   flexcsi_records{kind}                                    gauge (rows in the state database)
//   flexcsi_reconcile_repairs_total{kind}                    counter
//   flexcsi_failing_repairs{kind}                            gauge (records whose undo keeps
//                                                            failing; retried with backoff)
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace flexcsi {

// Upper bounds (seconds) of the CSI latency histogram. CSI calls span from a sub-millisecond
// Probe to a multi-minute ControllerPublish of a cloud disk, and kubelet's own ceiling for
// waitforattach is 10 minutes, so buckets run log-spaced from 1 ms to 120 s (+Inf beyond).
const std::vector<double>& CsiRpcLatencyBuckets();

// Thread-safe; every method may be called from any thread.
class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One FlexVolume call answered; status is the reply's "Success" | "Failure" | "Not supported".
  void RecordFlexCall(const std::string& operation, const std::string& status);
  // One CSI RPC finished with `code` after `seconds` (negative durations count as 0).
  void RecordCsiRpc(const std::string& method, Code code, double seconds);
  // The current number of rows of a kind: attachments | stagings | publications.
  void SetRecords(const std::string& kind, int64_t count);
  // `count` records repaired by reconciliation, by what was done: promoted | rolled_back | ...
  void AddReconcileRepairs(const std::string& kind, int64_t count);
  // How many records of a kind (attachment | staging | publication) have an undo that failed
  // and waits for its next attempt (repair_backoff.h).
  void SetFailingRepairs(const std::string& kind, int64_t count);

  // Adds flexcsi_<component>_build_info{version="0.2.0",commit="aa82685"} 1 (common/version.h;
  // commit "" without one), as Kubernetes components expose *_build_info, so that a dashboard
  // can tell which nodes run which release. component: "bridge" or "controller".
  void ExposeBuildInfo(const std::string& component);

  // The whole exposition, families in a fixed order, series sorted by labels.
  std::string RenderPrometheusText() const;

 private:
  struct Histogram {
    std::vector<uint64_t> bucket_counts;  // per bucket, not cumulative; size == buckets + 1 (+Inf)
    double sum = 0;
    uint64_t count = 0;
  };

  mutable std::mutex mu_;
  // All below guarded by mu_.
  std::string build_info_component_;                                    // "" = no build_info
  std::map<std::pair<std::string, std::string>, uint64_t> flex_calls_;  // (operation, status)
  std::map<std::pair<std::string, std::string>, Histogram> csi_rpcs_;   // (method, code name)
  std::map<std::string, int64_t> records_;                              // kind -> rows
  std::map<std::string, uint64_t> repairs_;                             // kind -> total
  std::map<std::string, int64_t> failing_repairs_;                      // kind -> records
};

// Escapes a label value for the text format: backslash, double quote and newline.
std::string EscapePrometheusLabelValue(const std::string& value);

}  // namespace flexcsi
