// Test helper: a stand-in flexcsi-bridge on a real Unix socket that answers every request
// with one fixed reply envelope, speaking the real frame format (common/bridge_protocol.h).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/bridge_protocol.h"

namespace flexcsi {

class FakeBridge {
 public:
  // Serves `flex_reply` wrapped in the bridge envelope; records the last request's call name.
  FakeBridge(const std::string& socket_path, nlohmann::json flex_reply)
      : path_(socket_path), reply_(MakeBridgeReply(flex_reply)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    unlink(path_.c_str());
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd_, 8) == 0;
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeBridge() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  std::string last_call() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_call_;
  }

 private:
  bool ReadExactly(int fd, char* buf, size_t n) {
    while (n > 0) {
      const ssize_t r = read(fd, buf, n);
      if (r <= 0) return false;
      buf += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  void Serve() {
    while (!stop_) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      unsigned char header[4];
      if (ReadExactly(c, reinterpret_cast<char*>(header), 4)) {
        auto len = DecodeFrameLength(header);
        std::string payload(len.ok() ? *len : 0, '\0');
        if (len.ok() && ReadExactly(c, payload.data(), payload.size())) {
          std::lock_guard<std::mutex> lock(mu_);
          last_call_ = nlohmann::json::parse(payload, nullptr, false).value("call", "");
          const std::string frame = EncodeFrame(reply_.dump());
          if (write(c, frame.data(), frame.size()) < 0) {
            // The client went away; nothing to do in a test stand-in.
          }
        }
      }
      close(c);
    }
  }

  std::string path_;
  nlohmann::json reply_;
  int fd_ = -1;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::string last_call_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace flexcsi
