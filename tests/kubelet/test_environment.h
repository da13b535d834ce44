// The world a kubelet scenario runs in: a temp dir holding a kubelet root, a volume plugin dir
// with flexexec installed as flexcsi~loopback/loopback, a real csi-loopback driver and a real
// flexcsi-bridge daemon, all children of the test process and so inside its private mount
// namespace. Everything it creates (processes, mounts, loop devices, files) is removed by
// Cleanup(), which the destructor calls, so a failing test leaks nothing either.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/kubelet/kubelet_caller.h"

namespace flexcsi {
namespace kubelet {

inline constexpr const char* kTestDriver = "flexcsi/loopback";
inline constexpr const char* kTestCsiDriver = "loopback.csi.flexcsi.io";
inline constexpr const char* kTestNode = "node-1";

struct EnvOptions {
  bool flex_attach = true;               // capability attach of the FlexVolume driver
  bool csi_controller_attach = true;     // false: csi-loopback --no-attach
  bool csi_stage_unstage = true;         // false: csi-loopback --no-stage-unstage
  bool csi_stage_without_mount = false;  // true: csi-loopback --stage-without-mount
  bool csi_volume_mount_group = true;    // false: csi-loopback --no-volume-mount-group
  bool csi_expand = true;                // false: csi-loopback --no-expand
  // The bridge's controllerEndpoint for the driver: "" (the CSI socket) or "none" (node-only).
  std::string controller_endpoint;
  bool metrics = false;                // serve the bridge's metrics on 127.0.0.1:<any port>
  int unavailable_retry_seconds = 10;  // the bridge's unavailableRetrySeconds
  // Other builds of flexexec and flexcsi-bridge, e.g. a previous release's for the version skew
  // tests; "" runs the ones built with the test (the bridge: or FLEXCSI_TEST_BRIDGE_BINARY's).
  std::string flexexec_binary;
  std::string bridge_binary;
  // Cluster access for the bridge: with a kubeconfig the bridge identifies each call's volume
  // and pod with that API server (trustPodAuthors: false, registerDrivers: false), as on a node;
  // "" keeps trustPodAuthors: true and no cluster (nothing here has an API server).
  // bench/caller_checks_bench.py runs bridge_bench so against a real kube-apiserver.
  std::string kubeconfig;
};

// A child process with its output going to a log file.
class ChildProcess {
 public:
  ~ChildProcess() { Kill(SIGKILL); }
  ::testing::AssertionResult Start(const std::vector<std::string>& argv,
                                   const std::string& log_path);
  // Sends `sig` and reaps the child (SIGKILL after 5 s if `sig` did not end it).
  void Kill(int sig);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // How the child ended if it died on its own ("killed by signal 11"); empty otherwise.
  const std::string& exit_report() const { return exit_report_; }

 private:
  pid_t pid_ = -1;
  std::string exit_report_;
};

class TestEnvironment {
 public:
  explicit TestEnvironment(EnvOptions options = {});
  ~TestEnvironment();

  // Creates the temp dir, installs flexexec, starts csi-loopback and the bridge, waits for
  // both sockets. Refuses to run in the host's mount namespace.
  ::testing::AssertionResult Start();
  void Cleanup();

  ::testing::AssertionResult StartBridge();
  void KillBridge(int sig = SIGKILL);
  ::testing::AssertionResult RestartBridge(int sig = SIGKILL);
  ::testing::AssertionResult StartDriver();
  void KillDriver(int sig = SIGKILL);
  ::testing::AssertionResult RestartDriver(int sig = SIGKILL);
  // The two halves of a DaemonSet rollout, each on its own: the next StartBridge runs `binary`
  // (on the same config, state database and socket); `binary` replaces the installed flexexec,
  // copied beside it and renamed over it as `flexcsi install-driver` does.
  void UseBridgeBinary(const std::string& binary) { options_.bridge_binary = binary; }
  ::testing::AssertionResult InstallFlexexec(const std::string& binary);

  // CreateVolume straight to csi-loopback over gRPC; returns the volume id or "" with a
  // test failure recorded.
  std::string CreateVolume(const std::string& name, int64_t bytes, const std::string& fs_type);
  // A FlexVolume source for a created volume (options.volumeID set).
  FlexVolumeSource VolumeSource(const std::string& pv_name, const std::string& volume_id) const;
  PodInfo Pod(const std::string& name) const;

  // The bridge's bridge.state reply (the FlexVolume reply object, with the record arrays).
  nlohmann::json BridgeState(std::string* error = nullptr) const;
  size_t BridgeRecordCount() const;
  // The bridge's bridge.health reply (what `flexcsi doctor` reads), null on error.
  nlohmann::json BridgeHealth(std::string* error = nullptr) const;
  // GET /metrics of the bridge (EnvOptions::metrics), "" with a test failure on error.
  std::string ScrapeMetrics() const;
  // Mount points below the temp dir (deepest last), from /proc/self/mountinfo.
  std::vector<std::string> MountsUnderRoot() const;
  // Loop devices whose backing file lies below the temp dir.
  std::vector<std::string> LoopDevicesUnderRoot() const;
  // Every published/staged record of the bridge is a mount point and every mount below the
  // kubelet root has a record. Empty string when consistent, otherwise what differs.
  std::string RecordsVersusMountTable() const;
  // What csi-loopback still holds for any volume (controller or node publications, a staging, an
  // attached loop device), from its state file; empty when it holds nothing.
  std::string DriverLeftovers() const;
  // NodeUnpublishVolume straight to csi-loopback: what the bridge does for unmount, for tests that
  // recreate the moment a bridge dies between two of its steps.
  ::testing::AssertionResult NodeUnpublish(const std::string& volume_id,
                                           const std::string& target_path);
  // ControllerExpandVolume straight to csi-loopback, as flexcsi-controller would cluster-side.
  ::testing::AssertionResult ControllerExpand(const std::string& volume_id, int64_t bytes);

  std::string ReadBridgeLog() const;
  std::string ReadFile(const std::string& path) const;

  KubeletCaller& caller() { return *caller_; }
  const std::string& root() const { return root_; }
  const std::string& kubelet_root() const { return kubelet_root_; }
  const std::string& bridge_socket() const { return bridge_socket_; }
  const std::string& state_db() const { return state_db_; }
  const std::string& bridge_config_path() const { return bridge_config_; }
  const std::string& csi_state_dir() const { return csi_state_dir_; }
  // What a soak samples: the two daemons (-1 when not running) and their logs.
  pid_t bridge_pid() const { return bridge_.pid(); }
  pid_t driver_pid() const { return driver_.pid(); }
  const std::string& bridge_log_path() const { return bridge_log_; }
  const std::string& driver_log_path() const { return driver_log_; }

 private:
  // One bridge.* call over the socket; its reply, or null with *error set.
  nlohmann::json BridgeCall(const std::string& call, std::string* error) const;
  ::testing::AssertionResult WaitForSocket(const std::string& path, const ChildProcess& child,
                                           const std::string& log, const std::string& what);

  EnvOptions options_;
  std::string root_, kubelet_root_, plugin_dir_, bridge_socket_, csi_socket_, state_db_;
  std::string bridge_config_, bridge_log_, driver_log_, csi_state_dir_;
  ChildProcess bridge_, driver_;
  std::unique_ptr<KubeletCaller> caller_;
  nlohmann::json flexcsi_json_;  // installed beside flexexec
  int bridge_starts_ = 0, driver_starts_ = 0;
};

// True when this process runs in a mount namespace other than the host's (PID 1's, or the
// parent's when PID 1 is not visible); the tests mount for real
// and must never do so in the host namespace.
bool InPrivateMountNamespace();

}  // namespace kubelet
}  // namespace flexcsi
