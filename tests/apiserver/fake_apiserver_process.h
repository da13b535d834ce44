// FakeApiServerProcess: runs tests/apiserver/fake_apiserver.py (the strict local stand-in for
// kube-apiserver and the controllers flexcsi depends on) as a child process for C++ tests.
//
// Start() launches it on 127.0.0.1 with a state directory, waits until it has written its port,
// and exposes the kubeconfig files it wrote (client certificate, bearer token). Talk to it with
// the project's kube client; see tests/apiserver/README.md for the /_fake/ test controls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi::testing {

struct FakeApiServerOptions {
  int port = 0;                     // 0: any free port (Restart() keeps the one it got)
  std::vector<std::string> tokens;  // accepted bearer tokens; empty: "fake-token"
  bool snapshot_crds = false;       // serve snapshot.storage.k8s.io/v1
  bool leases = true;               // serve coordination.k8s.io/v1 (false: a pre-1.14 cluster)
  bool persist_state = true;        // journal writes to DIR/state.jsonl, so Restart() keeps them
  bool controllers = true;          // run the PV, protection, workload... controllers
  int delay_ms = 0;                 // latency added to every API request
  int pod_termination_ms = 300;     // kubelet stand-in: how long a deleted pod takes to stop
  int detach_ms = 300;              // how long a volume stays attached after its last pod
  std::string version;              // /version gitVersion; empty: v1.28.0
  std::vector<std::string> extra_args;
  std::chrono::milliseconds start_timeout = std::chrono::seconds(60);
};

class FakeApiServerProcess {
 public:
  FakeApiServerProcess() = default;
  ~FakeApiServerProcess();  // Stop()s a running server
  FakeApiServerProcess(const FakeApiServerProcess&) = delete;
  FakeApiServerProcess& operator=(const FakeApiServerProcess&) = delete;

  // Launches the server with state directory `dir` (created if missing; certificates made on
  // first use) and waits until it serves. REQUIRES: not running.
  Status Start(const std::string& dir, FakeApiServerOptions options = {});
  // SIGTERM, then waits for exit (SIGKILL after 10 s). A no-op when not running.
  Status Stop();
  // SIGKILL at once, like a crashed API server; reaps the child.
  Status Kill();
  // Stop() then Start() with the same directory, options and port, so clients built from the
  // old kubeconfig reach the new server. With persist_state the objects survive.
  Status Restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string kubeconfig_path() const { return dir_ + "/kubeconfig"; }
  std::string token_kubeconfig_path() const { return dir_ + "/kubeconfig-token"; }
  std::string ca_path() const { return dir_ + "/ca.crt"; }
  // https://127.0.0.1:<port>
  std::string server_url() const;

 private:
  Status Launch(int port);
  Status WaitForPortFile();
  Status Reap(std::chrono::milliseconds timeout);

  std::string dir_;
  FakeApiServerOptions options_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A loopback port nobody listens on right now, for --port, so that a restarted server comes back
// on the same port and kubeconfigs written earlier stay valid.
int FreeLoopbackPort();

}  // namespace flexcsi::testing
