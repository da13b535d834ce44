#include "bridge/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

// A real HTTP GET over loopback with plain sockets, independent of the server's own code.
// Returns the whole response (status line, headers, body), or "" when nothing came back.
std::string HttpRequest(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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

std::string Get(int port, const std::string& path) {
  return HttpRequest(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

std::string Body(const std::string& response) {
  const size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

TEST(ParseListenAddressTest, HostPortFormsAndBadPorts) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(ParseListenAddress("127.0.0.1:9809", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 9809);
  ASSERT_TRUE(ParseListenAddress("[::1]:0", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(ParseListenAddress(":9809", &host, &port).ok());
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_FALSE(ParseListenAddress("127.0.0.1", &host, &port).ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:", &host, &port).ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:70000", &host, &port).ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:9a", &host, &port).ok());
}

TEST(MetricsHttpServerTest, ServesMetricsTextOverLoopback) {
  Metrics metrics;
  metrics.RecordFlexCall("mount", "Success");
  MetricsHttpServer server(metrics, [] { return true; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);

  const std::string response = Get(server.port(), "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(Body(response), metrics.RenderPrometheusText());

  // Later recordings show in the next scrape: the server renders per request.
  metrics.RecordFlexCall("mount", "Success");
  EXPECT_NE(
      Body(Get(server.port(), "/metrics?x=1")).find("{operation=\"mount\",status=\"Success\"} 2\n"),
      std::string::npos);
  server.Stop();
}

TEST(MetricsHttpServerTest, HealthzFollowsTheHealthCheck) {
  Metrics metrics;
  std::atomic<bool> healthy{true};
  MetricsHttpServer server(metrics, [&healthy] { return healthy.load(); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::string r = Get(server.port(), "/healthz");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_EQ(Body(r), "ok\n");
  healthy = false;
  r = Get(server.port(), "/healthz");
  EXPECT_EQ(r.rfind("HTTP/1.1 503 ", 0), 0u) << r;
}

TEST(MetricsHttpServerTest, HealthzCarriesTheCheckDetail) {
  Metrics metrics;
  HealthAnswer answer{true, "acme/nfs: ready (probed 2s ago)\n"};
  MetricsHttpServer server(metrics, [&answer] { return answer; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::string r = Get(server.port(), "/healthz");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_EQ(Body(r), "ok\nacme/nfs: ready (probed 2s ago)\n");
  server.Stop();
  answer = {false, "acme/nfs: not ready (UNAVAILABLE, probed 1s ago)\n"};
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  r = Get(server.port(), "/healthz");
  EXPECT_EQ(r.rfind("HTTP/1.1 503 ", 0), 0u) << r;
  EXPECT_EQ(Body(r), "unhealthy\nacme/nfs: not ready (UNAVAILABLE, probed 1s ago)\n");
  // HEAD gets the status alone.
  r = HttpRequest(server.port(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 503 ", 0), 0u) << r;
  EXPECT_EQ(Body(r), "");
}

TEST(MetricsHttpServerTest, UnknownPathsMethodsAndGarbageGetErrors) {
  Metrics metrics;
  MetricsHttpServer server(metrics, nullptr);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  EXPECT_EQ(Get(server.port(), "/nope").rfind("HTTP/1.1 404 ", 0), 0u);
  EXPECT_EQ(HttpRequest(server.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405 ", 0),
            0u);
  EXPECT_EQ(HttpRequest(server.port(), "garbage\r\n\r\n").rfind("HTTP/1.1 400 ", 0), 0u);
  // An oversized request head is refused rather than buffered without bound.
  EXPECT_EQ(HttpRequest(server.port(), "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n")
                .rfind("HTTP/1.1 400 ", 0),
            0u);
  // The server still serves after all that.
  EXPECT_EQ(Get(server.port(), "/healthz").rfind("HTTP/1.1 200 ", 0), 0u);
}

TEST(MetricsHttpServerTest, StopReleasesThePortAndStartTwiceFails) {
  Metrics metrics;
  MetricsHttpServer server(metrics, nullptr);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const int port = server.port();
  EXPECT_EQ(server.Start("127.0.0.1:0").code(), Code::kFailedPrecondition);
  server.Stop();
  server.Stop();  // idempotent
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(Get(port, "/metrics"), "");  // nobody listens any more

  // The same port can be bound again by a new server.
  MetricsHttpServer again(metrics, nullptr);
  EXPECT_TRUE(again.Start("127.0.0.1:" + std::to_string(port)).ok());
}

TEST(MetricsHttpServerTest, BusyPortIsReportedUnavailable) {
  Metrics metrics;
  MetricsHttpServer first(metrics, nullptr);
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  MetricsHttpServer second(metrics, nullptr);
  EXPECT_EQ(second.Start("127.0.0.1:" + std::to_string(first.port())).code(), Code::kUnavailable);
  EXPECT_FALSE(second.Start("127.0.0.1:99999").ok());
}

TEST(MetricsHttpServerTest, ScrapedTextPassesPromtool) {
  ASSERT_EQ(std::system("command -v promtool >/dev/null 2>&1"), 0) << "promtool missing";
  Metrics metrics;
  metrics.RecordCsiRpc("NodePublishVolume", Code::kOk, 0.01);
  metrics.RecordFlexCall("mount", "Success");
  MetricsHttpServer server(metrics, nullptr);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const std::string body = Body(Get(server.port(), "/metrics"));
  ASSERT_FALSE(body.empty());
  FILE* promtool = popen("promtool check metrics >/dev/null 2>&1", "w");
  ASSERT_NE(promtool, nullptr);
  fwrite(body.data(), 1, body.size(), promtool);
  const int status = pclose(promtool);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << body;
}

}  // namespace
}  // namespace flexcsi
