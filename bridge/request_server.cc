#include "bridge/request_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/bridge_protocol.h"

namespace flexcsi {
namespace {

// A request is a few KiB written at once by flexexec; a peer that dawdles longer is broken.
constexpr int kRequestReadTimeoutMs = 5000;
constexpr int kReplyWriteTimeoutMs = 5000;

// Reads exactly n bytes before the deadline.
bool ReadFully(int fd, char* buf, size_t n, std::chrono::steady_clock::time_point deadline) {
  size_t got = 0;
  while (got < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return false;
    got += static_cast<size_t>(k);
  }
  return true;
}

bool WriteFully(int fd, const std::string& data) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kReplyWriteTimeoutMs);
  size_t sent = 0;
  while (sent < data.size()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t k = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return false;
    sent += static_cast<size_t>(k);
  }
  return true;
}

Status MakeParentDirectory(const std::string& socket_path) {
  const auto slash = socket_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  const std::string dir = socket_path.substr(0, slash);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Internal("cannot create " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status RequestServer::Start(const std::string& socket_path) {
  socket_path_ = socket_path;
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument("socket path " + socket_path + " is too long for a Unix socket");
  }
  FLEXCSI_RETURN_IF_ERROR(MakeParentDirectory(socket_path));
  // A socket file left by a killed bridge would make bind fail; nobody else may own this path.
  unlink(socket_path.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Internal(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  // Bind under a restrictive umask so the socket is never reachable by others, not even briefly.
  const mode_t old_umask = umask(0177);
  const int bound = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old_umask);
  if (bound != 0) {
    return Internal("cannot bind " + socket_path + ": " + std::strerror(errno));
  }
  chmod(socket_path.c_str(), 0600);
  if (listen(listen_fd_, 256) != 0) {
    return Internal("cannot listen on " + socket_path + ": " + std::strerror(errno));
  }
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) return Internal("pipe2 failed");
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  spdlog::info("serving FlexVolume calls on {}", socket_path);
  return Status::Ok();
}

void RequestServer::Stop() {
  if (!accept_thread_.joinable()) return;
  const char byte = 0;
  (void)!write(stop_pipe_[1], &byte, 1);
  accept_thread_.join();
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return in_flight_ == 0; });
  }
  close(listen_fd_);
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
  unlink(socket_path_.c_str());
}

void RequestServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on the request socket failed: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return in_flight_ < max_concurrent_; });
      ++in_flight_;
    }
    std::thread([this, fd] {
      Serve(fd);
      close(fd);
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      changed_.notify_all();
    }).detach();
  }
}

void RequestServer::Serve(int fd) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      (peer.uid != 0 && peer.uid != geteuid())) {
    spdlog::warn("refused a request from uid {} pid {}: only root may call the bridge", peer.uid,
                 peer.pid);
    WriteFully(fd, EncodeBridgeReplyFrame(
                       FlexFailure("permission denied: only root may call flexcsi-bridge")));
    return;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestReadTimeoutMs);
  unsigned char header[4];
  if (!ReadFully(fd, reinterpret_cast<char*>(header), 4, deadline)) return;
  auto length = DecodeFrameLength(header);
  nlohmann::json reply;
  if (!length.ok()) {
    reply = FlexFailure("malformed request: " + length.status().message());
  } else {
    std::string payload(*length, '\0');
    if (!ReadFully(fd, payload.data(), payload.size(), deadline)) return;
    auto request = ParseBridgeRequest(payload);
    if (!request.ok()) {
      reply = FlexFailure("malformed request: " + request.status().message());
    } else {
      spdlog::debug("call {} driver={} from pid {}", request->call, request->driver, peer.pid);
      reply = dispatcher_.Dispatch(*request);
    }
  }
  if (!WriteFully(fd, EncodeBridgeReplyFrame(reply))) {
    spdlog::warn("could not deliver a reply to pid {} (flexexec gone?)", peer.pid);
  }
}

}  // namespace flexcsi
