// DriverProbeCache: every configured driver's CSI Probe, run in the background at a fixed
// interval, and the last answer of each. /healthz (the kubelet readiness probe) answers from
// here, so that no HTTP request ever waits on a driver: a driver that accepts connections and
// never answers used to hold the metrics server's only thread for 5 s per driver, long enough
// for kubelet's liveness `GET /metrics` to time out and restart the bridge.
//
// One thread per driver, so that a stuck driver delays only its own result. Each Probe is
// bounded by `probe_timeout`; a result older than `stale_after` (a probe that has not come back
// since) counts as not ready, as does a driver not probed yet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bridge/bridge_config.h"
#include "bridge/deadline.h"
#include "common/status.h"

namespace flexcsi {

class DriverProbeCache {
 public:
  using Clock = std::chrono::steady_clock;
  // Asks one driver whether it is ready. Called from the cache's threads, one call per driver
  // at a time; REQUIRES: thread-safe across drivers, and returns by `deadline` (CsiClient::Probe
  // does) — Stop() waits for calls in progress.
  using ProbeFn = std::function<Status(const DriverConfig&, const Deadline&)>;

  struct Options {
    std::chrono::milliseconds interval{std::chrono::seconds(5)};  // from one answer to the next ask
    std::chrono::milliseconds probe_timeout{std::chrono::seconds(5)};
    // interval + probe_timeout is the oldest a result gets while probes answer; twice that
    // leaves room for a slow node.
    std::chrono::milliseconds stale_after{std::chrono::seconds(20)};
  };

  // The last answer for one driver.
  struct Result {
    std::string flex_driver;
    std::string endpoint;
    bool probed = false;                // false until the first Probe answered
    bool ready = false;                 // the last Probe answered ready
    Code code = Code::kUnavailable;     // the last Probe's code (kOk when ready)
    std::string message;                // "ready", or the last Probe's error
    Clock::time_point answered_at{};    // when the last Probe answered (valid when probed)
    bool probing = false;               // a Probe is in progress
    Clock::time_point probing_since{};  // valid when probing
  };

  // REQUIRES: `drivers` outlives the cache and does not change.
  DriverProbeCache(const std::vector<DriverConfig>& drivers, ProbeFn probe, Options options);
  ~DriverProbeCache();  // Stop()s.
  DriverProbeCache(const DriverProbeCache&) = delete;
  DriverProbeCache& operator=(const DriverProbeCache&) = delete;

  // Starts one thread per driver; the first Probe goes out at once. Only the first call does
  // anything, and none after Stop().
  void Start();
  // Stops the threads: waits for Probes in progress (at most probe_timeout). Idempotent.
  void Stop();

  // A copy of every driver's last answer, in configuration order. Never waits on a driver.
  std::vector<Result> Snapshot() const;
  // True when every driver's last Probe answered ready at most stale_after ago (true with no
  // drivers). Never waits on a driver.
  bool AllReady() const;
  // One line per driver for /healthz, with the age of its answer: "flexcsi/nfs: ready (probed
  // 2s ago)", "... not ready (DEADLINE_EXCEEDED, probed 1s ago)", "... no answer for 31s (stale
  // after 20s); probe in progress for 26s". Error codes only, not the messages: /healthz
  // answers anyone who reaches the port, bridge.health has the rest.
  std::string Describe() const;
  // Whether `r` counts as ready at `now`: answered ready, and not older than stale_after.
  bool Fresh(const Result& r, Clock::time_point now) const;

  const Options& options() const { return options_; }

 private:
  void ProbeLoop(size_t index);

  const std::vector<DriverConfig>& drivers_;
  const ProbeFn probe_;
  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;      // signalled by Stop()
  std::vector<Result> results_;       // guarded by mu_, one per driver
  bool stopping_ = false;             // guarded by mu_
  bool started_ = false;              // guarded by mu_
  std::vector<std::thread> threads_;  // written by Start() before any thread runs; joined by Stop()
};

}  // namespace flexcsi
