// MetricsHttpServer: a deliberately small HTTP/1.0-style server for Prometheus scrapes and
// liveness probes. It answers
//   GET /metrics -> 200, text/plain; version=0.0.4, Metrics::RenderPrometheusText()
//   GET /healthz -> 200 "ok" when the health check answers healthy, 503 "unhealthy" otherwise,
//                   each followed by the check's detail lines
// and 404/405 to anything else, then closes the connection. It runs Boost.Asio on its own
// thread, so a slow scraper never holds up a FlexVolume call; that thread is the only one, so
// the health check must never wait on anything slow (the bridge answers from
// DriverProbeCache, never from a live CSI call).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "bridge/metrics.h"
#include "common/status.h"

namespace flexcsi {

// Splits "127.0.0.1:9809", "[::1]:9809", "localhost:0" or ":9809" (all interfaces) into host
// and port. INVALID_ARGUMENT on a missing or out-of-range port.
Status ParseListenAddress(const std::string& address, std::string* host, int* port);

// What /healthz answers: the status, and lines that say why (may be empty).
struct HealthAnswer {
  bool healthy = true;
  std::string detail;
};

class MetricsHttpServer {
 public:
  // `metrics` must outlive the server. `health_check` runs on the server thread for every
  // /healthz request; it must be thread-safe and must not block: while it runs, no other
  // request (kubelet's liveness GET /metrics included) is answered. Null: always healthy.
  MetricsHttpServer(const Metrics& metrics, std::function<HealthAnswer()> health_check);
  MetricsHttpServer(const Metrics& metrics, std::function<bool()> health_check);
  MetricsHttpServer(const Metrics& metrics, std::nullptr_t)
      : MetricsHttpServer(metrics, std::function<HealthAnswer()>()) {}
  ~MetricsHttpServer();  // Stops the server.
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds and starts serving. "host:port"; port 0 picks an ephemeral port (see port()).
  // FAILED_PRECONDITION when already started; UNAVAILABLE when the address cannot be bound.
  Status Start(const std::string& address);
  // The bound port, or 0 before Start() succeeded.
  int port() const;
  // Closes the listener and open connections and joins the thread. Idempotent.
  void Stop();

 private:
  struct Impl;  // Asio state, kept out of the header so users need not compile Asio.
  const Metrics& metrics_;
  std::function<HealthAnswer()> health_check_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::atomic<int> port_{0};
};

}  // namespace flexcsi
