// RequestServer: serves flexexec on a Unix stream socket, one request and one reply per
// connection (common/bridge_protocol.h). The socket is mode 0600 and every peer's credentials
// are checked (SO_PEERCRED): the bridge mounts and unmounts as root, so only root may ask.
//
// Each connection is served on its own thread, up to `max_concurrent` at once; calls for
// different volumes then run in parallel and calls for one volume queue on its VolumeLocks entry.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "bridge/call_dispatcher.h"
#include "common/status.h"

namespace flexcsi {

class RequestServer {
 public:
  RequestServer(CallDispatcher& dispatcher, int max_concurrent = 512)
      : dispatcher_(dispatcher), max_concurrent_(max_concurrent) {}
  ~RequestServer() { Stop(); }

  // Removes a stale socket file, binds, restricts it to root and starts accepting.
  Status Start(const std::string& socket_path);
  // Stops accepting, waits for the calls in flight to answer, removes the socket file.
  void Stop();

 private:
  void AcceptLoop();
  void Serve(int fd);

  CallDispatcher& dispatcher_;
  const int max_concurrent_;
  std::string socket_path_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread accept_thread_;

  std::mutex mu_;
  std::condition_variable changed_;
  int in_flight_ = 0;  // guarded by mu_
};

}  // namespace flexcsi
