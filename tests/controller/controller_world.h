// The world a flexcsi-controller test runs in: the strict fake API server (real TLS,
// snapshot CRDs), the kubelet test environment (a real csi-loopback on loop devices, a real
// flexcsi-bridge, flexexec installed for the kubelet-faithful caller), and flexcsi-controller
// processes started and killed by the test. Everything lives in temp dirs inside the test's
// private mount namespace and is removed by the destructor, also when a test fails.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kube/kube_client.h"
#include "tests/apiserver/fake_apiserver_process.h"
#include "tests/kubelet/test_environment.h"

namespace flexcsi::controller_test {

inline constexpr const char* kProvisioner = "loopback.csi.flexcsi.io";
inline constexpr const char* kTopologyKey = "topology.loopback.csi.flexcsi.io/node";

struct ControllerFlags {
  std::vector<std::string> extra;        // more flags
  std::map<std::string, std::string> env;  // e.g. FLEXCSI_CONTROLLER_CRASH_AFTER
  // Another build of flexcsi-controller (a previous release's); empty: this tree's.
  std::string binary;
};

class ControllerWorld {
 public:
  ControllerWorld();
  ~ControllerWorld();

  ::testing::AssertionResult Start(bool snapshot_crds = true);
  // With the API server's options (an old cluster: version, --no-leases, --without ...).
  ::testing::AssertionResult Start(testing::FakeApiServerOptions options);

  // Starts controller number `index` (separate logs; shared journal unless flags say otherwise).
  ::testing::AssertionResult StartController(int index = 0, ControllerFlags flags = {});
  void KillController(int index = 0, int sig = SIGKILL);
  // Waits for a controller to exit on its own (a crash point); true when it did.
  bool WaitControllerExit(int index, std::chrono::milliseconds timeout);
  std::string ControllerLog(int index) const;
  // What a soak samples: a controller's process (-1 when not running), its log and the journal
  // the controllers share.
  pid_t ControllerPid(int index) const;
  std::string ControllerLogPath(int index) const;
  std::string JournalPath() const { return root_ + "/journal.db"; }

  kube::KubeClient& api() { return *client_; }
  kubelet::TestEnvironment& env() { return *env_; }
  const std::string& root() const { return root_; }

  // Objects.
  void CreateNamespace(const std::string& ns);
  void CreateStorageClass(const std::string& name, nlohmann::json extra = nlohmann::json::object());
  void CreateClaim(const std::string& ns, const std::string& name, const std::string& size,
                   const std::string& storage_class, nlohmann::json extra_spec = nlohmann::json::object());
  nlohmann::json GetClaim(const std::string& ns, const std::string& name);
  nlohmann::json GetPV(const std::string& name);  // null when absent
  // Polls `done` every 50 ms up to `timeout`; true when it returned true.
  bool WaitFor(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(30));
  bool WaitBound(const std::string& ns, const std::string& name,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Events whose involvedObject is the named object, as "Type Reason: message" lines.
  std::vector<std::string> EventsFor(const std::string& ns, const std::string& name);
  bool HasEvent(const std::string& ns, const std::string& name, const std::string& reason,
                const std::string& message_part = "");

  // csi-loopback's volumes (ListVolumes over the real socket): id -> capacity bytes.
  std::map<std::string, int64_t> DriverVolumes();
  std::vector<std::string> DriverSnapshots();
  std::string CsiEndpoint() const;

 private:
  std::string root_;
  testing::FakeApiServerProcess api_server_;
  std::unique_ptr<kubelet::TestEnvironment> env_;
  std::unique_ptr<kube::KubeClient> client_;
  std::map<int, std::unique_ptr<kubelet::ChildProcess>> controllers_;
};

}  // namespace flexcsi::controller_test
