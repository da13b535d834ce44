#include "common/bridge_client.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <utility>

namespace flexcsi {
namespace {

using Clock = std::chrono::steady_clock;

// How often a missing or refusing socket is retried while the connect deadline lasts. Short
// enough that a bridge coming back up is noticed quickly, long enough not to spin.
constexpr std::chrono::milliseconds kConnectRetryInterval(25);

Status DataLoss(std::string m) { return Status(Code::kDataLoss, std::move(m)); }

constexpr const char* kStartHint =
    "start it with systemctl start flexcsi-bridge or check the flexcsi DaemonSet";

// Owns one file descriptor; closes it on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Milliseconds left until `deadline`, clamped to [0, INT_MAX] for poll().
int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  if (left.count() > 0x7fffffff) return 0x7fffffff;
  return static_cast<int>(left.count());
}

// Waits until `fd` is ready for `events` or the deadline passes. EINTR is retried.
// Returns the revents, 0 on timeout, -1 on error (errno set).
int PollUntil(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, RemainingMs(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return rc;
    return p.revents;
  }
}

std::string NotRunningMessage(const std::string& path) {
  return "flexcsi-bridge is not running: " + path + " does not exist; " + kStartHint;
}

Status ConnectErrorStatus(int err, const std::string& path) {
  switch (err) {
    case ENOENT:
      return Unavailable(NotRunningMessage(path));
    case ENOTDIR:
      return Unavailable("flexcsi-bridge is not running: a parent of " + path +
                         " is not a directory; " + kStartHint);
    case ECONNREFUSED:
      return Unavailable("flexcsi-bridge is not running: connection to " + path +
                         " refused (a stale socket left by a stopped bridge); " + kStartHint);
    case EACCES:
    case EPERM:
      return PermissionDenied("permission denied connecting to flexcsi-bridge at " + path +
                              ": the socket is root-only (mode 0600); flexexec must run as root "
                              "like kubelet and kube-controller-manager do");
    case EAGAIN:
      return Unavailable("flexcsi-bridge at " + path +
                         " is not accepting connections (listen queue full); it is overloaded "
                         "or hung");
    default:
      return Unavailable("cannot connect to flexcsi-bridge at " + path + ": " + std::strerror(err));
  }
}

// One non-blocking connect attempt. Returns the connected fd or -1 with *err set.
int TryConnect(const sockaddr_un& addr, Clock::time_point deadline, int* err) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  // Unix sockets rarely report EINPROGRESS, but when they do the outcome comes via SO_ERROR.
  int revents = PollUntil(fd, POLLOUT, deadline);
  if (revents <= 0) {
    *err = revents == 0 ? ETIMEDOUT : errno;
    ::close(fd);
    return -1;
  }
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) < 0) so_error = errno;
  if (so_error != 0) {
    *err = so_error;
    ::close(fd);
    return -1;
  }
  return fd;
}

// Errors worth retrying while the connect deadline lasts: the bridge is (re)starting.
bool IsTransientConnectError(int err) {
  return err == ENOENT || err == ECONNREFUSED || err == EAGAIN;
}

StatusOr<int> Connect(const std::string& path, std::chrono::milliseconds connect_timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument("bridge socket path \"" + path + "\" is empty or longer than the " +
                           std::to_string(sizeof(addr.sun_path) - 1) +
                           " bytes a Unix socket address can hold");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());

  const Clock::time_point deadline = Clock::now() + connect_timeout;
  for (;;) {
    int err = 0;
    int fd = TryConnect(addr, deadline, &err);
    if (fd >= 0) return fd;
    if (err == ETIMEDOUT) {
      return DeadlineExceeded("flexcsi-bridge did not accept a connection on " + path + " within " +
                              FormatSeconds(connect_timeout) + "; it is overloaded or hung");
    }
    if (!IsTransientConnectError(err) || Clock::now() + kConnectRetryInterval >= deadline) {
      return ConnectErrorStatus(err, path);
    }
    std::this_thread::sleep_for(kConnectRetryInterval);
  }
}

Status SendAll(int fd, const std::string& data, Clock::time_point deadline, const std::string& call,
               std::chrono::milliseconds reply_timeout) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int revents = PollUntil(fd, POLLOUT, deadline);
      if (revents == 0) {
        return DeadlineExceeded("flexcsi-bridge did not answer " + call + " within " +
                                FormatSeconds(reply_timeout) + " (it did not read the request)");
      }
      if (revents < 0) return Unavailable(std::string("poll: ") + std::strerror(errno));
      continue;
    }
    return Unavailable("flexcsi-bridge closed the connection while " + call +
                       " was being sent: " + std::strerror(errno) +
                       "; it may have crashed or restarted, the call can be retried");
  }
  return Status::Ok();
}

// Reads exactly `len` bytes. *got_any tells whether any byte of the reply arrived yet, which
// separates "the bridge died before answering" (retryable) from a truncated reply.
Status RecvExactly(int fd, char* buf, size_t len, Clock::time_point deadline,
                   const std::string& call, std::chrono::milliseconds reply_timeout,
                   bool* got_any) {
  size_t off = 0;
  while (off < len) {
    int revents = PollUntil(fd, POLLIN, deadline);
    if (revents == 0) {
      return DeadlineExceeded("flexcsi-bridge did not answer " + call + " within " +
                              FormatSeconds(reply_timeout));
    }
    if (revents < 0) return Unavailable(std::string("poll: ") + std::strerror(errno));
    ssize_t n = ::recv(fd, buf + off, len - off, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) {
      if (!*got_any) {
        return Unavailable("flexcsi-bridge closed the connection without answering " + call +
                           (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : "") +
                           "; it may have crashed or restarted, the call can be retried");
      }
      return DataLoss("flexcsi-bridge sent a truncated reply to " + call + " (" +
                      std::to_string(off) + " of " + std::to_string(len) + " bytes)");
    }
    *got_any = true;
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

std::string FormatSeconds(std::chrono::milliseconds d) {
  const long long ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  std::string frac = std::to_string(ms % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(ms / 1000) + "." + frac + " s";
}

StatusOr<nlohmann::json> CallBridgeRaw(const std::string& socket_path, const BridgeRequest& req,
                                       std::chrono::milliseconds connect_timeout,
                                       std::chrono::milliseconds reply_timeout) {
  // Serialised first: invalid UTF-8 in an argument is replaced rather than thrown on, because
  // the bridge validates arguments and can then say what is wrong with them.
  const std::string payload =
      req.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (payload.size() > kMaxFrameBytes) {
    return InvalidArgument("request for " + req.call + " is " + std::to_string(payload.size()) +
                           " bytes, more than the " + std::to_string(kMaxFrameBytes) +
                           "-byte frame limit");
  }

  StatusOr<int> connected = Connect(socket_path, connect_timeout);
  if (!connected.ok()) return connected.status();
  Fd fd(*connected);

  const Clock::time_point deadline = Clock::now() + reply_timeout;
  FLEXCSI_RETURN_IF_ERROR(
      SendAll(fd.get(), EncodeFrame(payload), deadline, req.call, reply_timeout));

  bool got_any = false;
  unsigned char header[4];
  FLEXCSI_RETURN_IF_ERROR(RecvExactly(fd.get(), reinterpret_cast<char*>(header), sizeof(header),
                                      deadline, req.call, reply_timeout, &got_any));
  StatusOr<uint32_t> len = DecodeFrameLength(header);
  if (!len.ok()) {
    return DataLoss("flexcsi-bridge sent a malformed reply to " + req.call + ": " +
                    len.status().message());
  }
  std::string body(*len, '\0');
  FLEXCSI_RETURN_IF_ERROR(
      RecvExactly(fd.get(), body.data(), body.size(), deadline, req.call, reply_timeout, &got_any));

  nlohmann::json envelope = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (envelope.is_discarded()) {
    return DataLoss("flexcsi-bridge sent a malformed reply to " + req.call +
                    ": the frame is not valid JSON");
  }
  if (!envelope.is_object()) {
    return DataLoss("flexcsi-bridge sent a malformed reply to " + req.call + ": not a JSON object");
  }
  auto version = envelope.find("version");
  if (version == envelope.end() || !version->is_number_integer() ||
      version->get<long long>() != kBridgeProtocolVersion) {
    return DataLoss("flexcsi-bridge replied to " + req.call +
                    " with an unsupported protocol version (this flexexec speaks version " +
                    std::to_string(kBridgeProtocolVersion) +
                    "); install matching flexexec and flexcsi-bridge versions");
  }
  return envelope;
}

StatusOr<nlohmann::json> CallBridge(const std::string& socket_path, const BridgeRequest& req,
                                    std::chrono::milliseconds connect_timeout,
                                    std::chrono::milliseconds reply_timeout) {
  StatusOr<nlohmann::json> envelope =
      CallBridgeRaw(socket_path, req, connect_timeout, reply_timeout);
  if (!envelope.ok()) return envelope.status();
  StatusOr<nlohmann::json> reply = FlexReplyFromBridgeReply(*envelope);
  if (!reply.ok()) {
    return DataLoss("flexcsi-bridge sent a malformed reply to " + req.call + ": " +
                    reply.status().message());
  }
  return reply;
}

}  // namespace flexcsi
