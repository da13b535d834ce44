#include "bridge/driver_probe_cache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/call_dispatcher.h"
#include "bridge/metrics_http_server.h"

namespace flexcsi {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// Polls `done` until it holds or `limit` passes; the bounds are generous, the waits short.
bool EventuallyHolds(const std::function<bool()>& done, Clock::duration limit = seconds(20)) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

std::vector<DriverConfig> ProbeTestDrivers(const std::vector<std::string>& names) {
  std::vector<DriverConfig> drivers;
  for (const auto& n : names) {
    DriverConfig d;
    d.flex_driver = n;
    d.csi_endpoint = "unix:///nonexistent/" + n + ".sock";
    drivers.push_back(d);
  }
  return drivers;
}

// A real HTTP GET over loopback, as kubelet's probes send it. "" when nothing came back.
std::string HttpGetPath(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

// A CSI driver that is stuck: its unix socket accepts every connection and never reads or
// writes a byte, so every RPC waits for its deadline. Close() drops the connections.
class SilentDriverSocket {
 public:
  explicit SilentDriverSocket(const std::string& path) : path_(path) {
    listener_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    ok_ = listener_ >= 0 && bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          listen(listener_, 16) == 0;
    if (ok_) thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~SilentDriverSocket() { Close(); }

  bool ok() const { return ok_; }
  int accepted() const { return accepted_.load(); }

  void Close() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int fd : conns_) close(fd);
    conns_.clear();
    if (listener_ >= 0) close(listener_);
    listener_ = -1;
    unlink(path_.c_str());
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept(listener_, nullptr, nullptr);
      if (fd >= 0) {
        conns_.push_back(fd);  // held open, never read
        ++accepted_;
      }
    }
  }

  std::string path_;
  int listener_ = -1;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> conns_;  // AcceptLoop's until joined
  std::thread thread_;
};

TEST(DriverProbeCacheTest, AnswersFromTheLastBackgroundProbeOfEachDriver) {
  const auto drivers = ProbeTestDrivers({"acme/a", "acme/b"});
  std::mutex mu;
  std::map<std::string, int> calls;
  std::atomic<bool> b_ready{false};
  DriverProbeCache::Options options;
  options.interval = milliseconds(20);
  DriverProbeCache cache(
      drivers,
      [&](const DriverConfig& d, const Deadline&) -> Status {
        {
          std::lock_guard<std::mutex> lock(mu);
          ++calls[d.flex_driver];
        }
        if (d.flex_driver == "acme/b" && !b_ready) return FailedPrecondition("b is warming up");
        return Status::Ok();
      },
      options);
  EXPECT_FALSE(cache.AllReady());  // nothing probed yet
  EXPECT_NE(cache.Describe().find("acme/a: not probed yet"), std::string::npos);
  cache.Start();
  ASSERT_TRUE(EventuallyHolds([&] {
    auto s = cache.Snapshot();
    return s[0].probed && s[1].probed;
  }));
  EXPECT_FALSE(cache.AllReady());
  const auto snapshot = cache.Snapshot();
  EXPECT_TRUE(snapshot[0].ready);
  EXPECT_FALSE(snapshot[1].ready);
  EXPECT_EQ(snapshot[1].code, Code::kFailedPrecondition);
  // /healthz shows codes, not the drivers' messages.
  const std::string text = cache.Describe();
  EXPECT_NE(text.find("acme/a: ready (probed "), std::string::npos) << text;
  EXPECT_NE(text.find("acme/b: not ready (FAILED_PRECONDITION, probed "), std::string::npos)
      << text;
  EXPECT_EQ(text.find("warming up"), std::string::npos) << text;

  b_ready = true;  // the next round finds it ready, without anyone asking
  EXPECT_TRUE(EventuallyHolds([&] { return cache.AllReady(); }));
  // Each driver has its thread: acme/a is probed again at the interval too, whenever acme/b's
  // thread got there first.
  EXPECT_TRUE(EventuallyHolds([&] {
    std::lock_guard<std::mutex> lock(mu);
    return calls["acme/a"] >= 2;
  }));
  cache.Stop();
  cache.Stop();  // idempotent
}

TEST(DriverProbeCacheTest, AProbeThatNeverReturnsTurnsNotReadyAfterTheStaleBound) {
  const auto drivers = ProbeTestDrivers({"acme/stuck", "acme/fine"});
  std::mutex mu;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<int> stuck_calls{0};
  DriverProbeCache::Options options;
  options.interval = milliseconds(20);
  options.stale_after = seconds(1);
  DriverProbeCache cache(
      drivers,
      [&](const DriverConfig& d, const Deadline&) -> Status {
        // acme/stuck answers once, then hangs until released: a probe stuck past any bound.
        if (d.flex_driver == "acme/stuck" && stuck_calls++ > 0) {
          std::unique_lock<std::mutex> lock(mu);
          released_cv.wait(lock, [&] { return released; });
        }
        return Status::Ok();
      },
      options);
  auto release = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      released = true;
    }
    released_cv.notify_all();
  };
  // Releases the hung probe before the cache's destructor waits for it, also when an ASSERT
  // leaves early.
  std::unique_ptr<void, std::function<void(void*)>> release_on_exit(&released,
                                                                    [&](void*) { release(); });
  cache.Start();
  ASSERT_TRUE(EventuallyHolds([&] {
    auto s = cache.Snapshot();
    return s[0].probed && s[1].probed;
  }));
  ASSERT_TRUE(EventuallyHolds([&] { return cache.Snapshot()[0].probing && stuck_calls >= 2; }));

  // Readiness falls once the last answer is older than stale_after, while the probe still
  // hangs; asking never waits for it.
  EXPECT_TRUE(EventuallyHolds([&] {
    const auto asked = Clock::now();
    const bool ready = cache.AllReady();
    EXPECT_LT(Clock::now() - asked, seconds(5));
    return !ready;
  }));
  const auto s = cache.Snapshot();
  EXPECT_TRUE(s[0].probing);
  EXPECT_TRUE(s[0].ready);  // its last answer was ready, but that is too old now
  EXPECT_FALSE(cache.Fresh(s[0], Clock::now()));
  EXPECT_TRUE(cache.Fresh(s[1], Clock::now()));  // the other driver keeps answering
  const std::string text = cache.Describe();
  EXPECT_NE(text.find("acme/stuck: no answer for "), std::string::npos) << text;
  EXPECT_NE(text.find("; probe in progress for "), std::string::npos) << text;

  release();
  EXPECT_TRUE(EventuallyHolds([&] { return cache.AllReady(); }));  // answering again: ready again
  cache.Stop();
}

// The bridge's own wiring (the daemon's): /healthz from CallDispatcher::Ready(), with a driver
// whose socket accepts and never answers. Both /healthz and /metrics answer while its Probe is
// stuck; before the background probes, /healthz held the server's only thread for the Probe's
// 5 s, and kubelet's liveness GET /metrics timed out behind it.
TEST(DriverProbeCacheTest, HealthzAndMetricsAnswerWhileADriverProbeIsStuck) {
  char tmpl[] = "/tmp/flexcsi-probe-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  SilentDriverSocket driver(dir + "/csi.sock");
  ASSERT_TRUE(driver.ok());

  auto config = BridgeConfig::FromJson({{"unavailableRetrySeconds", 0},
                                        {"drivers",
                                         {{{"flexDriver", "acme/stalled"},
                                           {"csiEndpoint", "unix://" + dir + "/csi.sock"},
                                           {"rule",
                                            {{"csiDriver", "stalled.csi.example.com"},
                                             {"volumeHandle", {{"fromOption", "volumeID"}}}}}}}}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto store = StateStore::Open(dir + "/state.db");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Metrics metrics;
  VolumeLocks locks;
  RepairBackoff repairs(&metrics);
  CsiClients clients(&metrics, milliseconds(0));
  BridgeContext ctx{*config, **store, locks, metrics, clients, repairs};
  CallDispatcher dispatcher(ctx);
  MetricsHttpServer server(metrics, [&dispatcher] { return dispatcher.Ready(); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());

  // Not probed yet: not ready.
  EXPECT_EQ(HttpGetPath(server.port(), "/healthz").rfind("HTTP/1.1 503 ", 0), 0u);
  DriverProbeCache::Options options;
  options.interval = milliseconds(50);
  options.probe_timeout = seconds(60);  // stuck for the whole test
  options.stale_after = seconds(1);
  dispatcher.StartDriverProbes(options);
  ASSERT_TRUE(EventuallyHolds([&] { return driver.accepted() > 0; }));

  for (int i = 0; i < 3; ++i) {
    const auto asked = Clock::now();
    const std::string health = HttpGetPath(server.port(), "/healthz");
    const std::string scrape = HttpGetPath(server.port(), "/metrics");
    const auto took = Clock::now() - asked;
    // A live Probe here would take its whole 5 s deadline (the bridge before 0.3.0).
    EXPECT_LT(took, seconds(4)) << "the HTTP thread waited on the driver";
    EXPECT_EQ(health.rfind("HTTP/1.1 503 ", 0), 0u) << health;
    EXPECT_NE(health.find("acme/stalled: not probed yet; probe in progress for "),
              std::string::npos)
        << health;
    EXPECT_EQ(scrape.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << scrape;
  }
  // All of that happened while the one Probe was still hanging on the driver.
  const auto snapshot = dispatcher.Ready();
  EXPECT_FALSE(snapshot.healthy);
  EXPECT_NE(snapshot.detail.find("probe in progress"), std::string::npos);

  server.Stop();
  // Closing the driver's side ends the hung Probe (UNAVAILABLE, no retry budget), so stopping
  // does not wait for its 60 s.
  driver.Close();
  const auto stopping = Clock::now();
  dispatcher.StopDriverProbes();
  EXPECT_LT(Clock::now() - stopping, seconds(30));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace flexcsi
