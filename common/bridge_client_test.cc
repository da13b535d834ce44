#include "common/bridge_client.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

using std::chrono::milliseconds;

// A one-connection fake bridge: listens on a socket in a fresh temp dir and runs `handler` on
// the accepted connection in a thread. Only the client is under test here; the real bridge is
// exercised by tests/kubelet.
class FakeBridge {
 public:
  explicit FakeBridge(std::function<void(int)> handler) {
    char tmpl[] = "/tmp/bridge_client_test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/bridge.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(0, ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    EXPECT_EQ(0, ::listen(listen_fd_, 4));
    thread_ = std::thread([this, handler] {
      int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c < 0) return;
      handler(c);
      ::close(c);
    });
  }
  ~FakeBridge() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // unblocks accept() if no client came
    thread_.join();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  int listen_fd_ = -1;
  std::thread thread_;
};

std::string ReadFrame(int fd) {
  unsigned char h[4];
  if (::recv(fd, h, 4, MSG_WAITALL) != 4) return "";
  uint32_t n = (uint32_t{h[0]} << 24) | (uint32_t{h[1]} << 16) | (uint32_t{h[2]} << 8) | h[3];
  std::string body(n, '\0');
  if (::recv(fd, body.data(), n, MSG_WAITALL) != static_cast<ssize_t>(n)) return "";
  return body;
}

void WriteRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(static_cast<ssize_t>(bytes.size()), ::send(fd, bytes.data(), bytes.size(), 0));
}

BridgeRequest MountRequest() {
  BridgeRequest r;
  r.driver = "flexcsi/loopback";
  r.call = "mount";
  r.args = {"/var/lib/kubelet/pods/u/volumes/flexcsi~loopback/pv", "{\"volumeID\":\"v\"}"};
  r.timeout_ms = 118000;
  return r;
}

TEST(BridgeClientTest, SendsRequestFrameAndReturnsFlexReply) {
  std::string received;
  FakeBridge bridge([&](int fd) {
    received = ReadFrame(fd);
    WriteRaw(fd,
             EncodeFrame(MakeBridgeReply({{"status", "Success"}, {"device", "/dev/x"}}).dump()));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(5000));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ("Success", (*reply)["status"]);
  EXPECT_EQ("/dev/x", (*reply)["device"]);
  auto req = BridgeRequest::FromJson(nlohmann::json::parse(received));
  ASSERT_TRUE(req.ok());
  EXPECT_EQ("mount", req->call);
  EXPECT_EQ("flexcsi/loopback", req->driver);
  EXPECT_EQ(MountRequest().args, req->args);
  EXPECT_EQ(118000, req->timeout_ms);
}

TEST(BridgeClientTest, RawVariantKeepsWholeEnvelope) {
  FakeBridge bridge([&](int fd) {
    ReadFrame(fd);
    nlohmann::json env = MakeBridgeReply({{"status", "Success"}, {"attachments", {1, 2}}});
    WriteRaw(fd, EncodeFrame(env.dump()));
  });
  BridgeRequest r;
  r.call = "bridge.state";
  auto env = CallBridgeRaw(bridge.path(), r, milliseconds(1000), milliseconds(5000));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(1, (*env)["version"]);
  EXPECT_EQ(2u, (*env)["reply"]["attachments"].size());
}

TEST(BridgeClientTest, MissingSocketSaysBridgeIsNotRunning) {
  const std::string path = "/tmp/bridge_client_test_no_such_dir/bridge.sock";
  auto reply = CallBridge(path, MountRequest(), milliseconds(200), milliseconds(1000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kUnavailable, reply.status().code());
  EXPECT_EQ("flexcsi-bridge is not running: " + path +
                " does not exist; start it with systemctl start flexcsi-bridge or check the "
                "flexcsi DaemonSet",
            reply.status().message());
}

TEST(BridgeClientTest, ZeroConnectTimeoutMakesOneAttempt) {
  auto reply = CallBridge("/tmp/bridge_client_test_none.sock", MountRequest(), milliseconds(0),
                          milliseconds(1000));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.status().message().find("does not exist"));
}

TEST(BridgeClientTest, StaleSocketIsConnectionRefused) {
  char tmpl[] = "/tmp/bridge_client_test.XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/bridge.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(0, ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  ::close(fd);  // the file stays, nobody listens: what a killed bridge leaves behind
  auto reply = CallBridge(path, MountRequest(), milliseconds(100), milliseconds(1000));
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kUnavailable, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("refused"))
      << reply.status().message();
  EXPECT_NE(std::string::npos, reply.status().message().find("systemctl start flexcsi-bridge"));
}

TEST(BridgeClientTest, RootOnlySocketIsPermissionDeniedForOtherUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  FakeBridge bridge([](int) {});
  ASSERT_EQ(0, ::chmod(bridge.path().c_str(), 0600));
  // Switching user is per process, so the unprivileged attempt runs in a child.
  int pipefd[2];
  ASSERT_EQ(0, ::pipe(pipefd));
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(100), milliseconds(100));
    std::string out = reply.ok() ? "ok" : reply.status().ToString();
    (void)!::write(pipefd[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Let the fake bridge's accept() return.
  auto ignored = CallBridge(bridge.path(), MountRequest(), milliseconds(100), milliseconds(100));
  (void)ignored;
  EXPECT_NE(std::string::npos, out.find("PERMISSION_DENIED")) << out;
  EXPECT_NE(std::string::npos, out.find("must run as root")) << out;
}

TEST(BridgeClientTest, SilentBridgeTimesOutNamingTheCall) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    char c;
    ::recv(fd, &c, 1, 0);  // hold the connection until the client gives up and closes
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(300));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kDeadlineExceeded, reply.status().code());
  EXPECT_EQ("flexcsi-bridge did not answer mount within 0.3 s", reply.status().message());
}

TEST(BridgeClientTest, BridgeClosingWithoutReplyIsRetryable) {
  FakeBridge bridge([](int fd) { ReadFrame(fd); });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kUnavailable, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("without answering mount"));
}

TEST(BridgeClientTest, NonJsonReplyIsMalformed) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    WriteRaw(fd, EncodeFrame("panic: oops"));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kDataLoss, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("malformed reply to mount"));
}

TEST(BridgeClientTest, EnvelopeWithoutStatusIsMalformed) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    WriteRaw(fd, EncodeFrame(R"({"version":1,"reply":{"device":"/dev/x"}})"));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kDataLoss, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("no status"));
}

TEST(BridgeClientTest, WrongProtocolVersionIsReported) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    WriteRaw(fd, EncodeFrame(R"({"version":2,"reply":{"status":"Success"}})"));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(std::string::npos, reply.status().message().find("protocol version"));
}

TEST(BridgeClientTest, OversizedFrameLengthIsMalformed) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    WriteRaw(fd, std::string("\xff\xff\xff\xff", 4));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kDataLoss, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("exceeds the limit"));
}

TEST(BridgeClientTest, TruncatedReplyIsMalformed) {
  FakeBridge bridge([](int fd) {
    ReadFrame(fd);
    std::string frame = EncodeFrame(R"({"version":1,"reply":{"status":"Success"}})");
    WriteRaw(fd, frame.substr(0, frame.size() - 5));
  });
  auto reply = CallBridge(bridge.path(), MountRequest(), milliseconds(1000), milliseconds(3000));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kDataLoss, reply.status().code());
  EXPECT_NE(std::string::npos, reply.status().message().find("truncated"));
}

TEST(BridgeClientTest, OverlongSocketPathIsRejected) {
  auto reply =
      CallBridge("/" + std::string(200, 'x'), MountRequest(), milliseconds(100), milliseconds(100));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(Code::kInvalidArgument, reply.status().code());
}

TEST(BridgeClientTest, FormatSecondsTrimsZeros) {
  EXPECT_EQ("120 s", FormatSeconds(milliseconds(120000)));
  EXPECT_EQ("1.5 s", FormatSeconds(milliseconds(1500)));
  EXPECT_EQ("0.25 s", FormatSeconds(milliseconds(250)));
  EXPECT_EQ("0.005 s", FormatSeconds(milliseconds(5)));
}

}  // namespace
}  // namespace flexcsi
