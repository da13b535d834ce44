// Test-only: a strict fake API server (tests/apiserver) with the objects a migration needs, the
// real `flexcsi-migrate` binary run as a child process (so kill -9 is real), and the invariants
// every migration test checks afterwards from the server's audit log.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"
#include "tests/apiserver/fake_apiserver_process.h"

namespace flexcsi::migrate::testing {

using nlohmann::json;

// What a finished flexcsi-migrate run left.
struct ToolRun {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// The FlexVolume rules the tests use (acme/lvm -> lvm.csi.acme.io).
constexpr const char* kRulesYaml =
    "flexVolumeRules:\n"
    "- flexDriver: acme/lvm\n"
    "  csiDriver: lvm.csi.acme.io\n"
    "  volumeHandle: {fromOption: volumeID}\n";

// The volume sources of the eight in-tree plugins and FlexVolume, keyed by spec field.
std::vector<std::pair<std::string, json>> AllSources();
// `source` naming a different disk: its id fields get "-<n>" (two PVs never share storage).
json DistinctSource(json source, int n);

// The test binary's path to flexcsi-migrate (compile definition).
const char* MigrateBinary();

class MigrateEnv {
 public:
  // Starts the fake (controllers on, quick pod termination and detach), node-1, and CSIDriver
  // objects for every driver the sources map to. `port` fixed so Restart() keeps clients.
  Status Start();
  ~MigrateEnv();

  flexcsi::testing::FakeApiServerProcess& server() { return server_; }
  kube::KubeClient& client() { return *client_; }
  Status Reconnect();
  const std::string& dir() const { return dir_; }
  std::string rules_path() const { return dir_ + "/rules.yaml"; }

  Status CreateNamespace(const std::string& ns);
  // A PV with `source` pre-bound to a new claim ns/name; waits until both are Bound.
  // Returns the PV as read once Bound.
  // wait=false: returns the PV as created, at once (WaitBound later).
  StatusOr<json> CreateBoundVolume(const std::string& ns, const std::string& pv_name,
                                   const std::string& claim, const std::string& source_field,
                                   const json& source, const std::string& reclaim_policy,
                                   bool wait = true);
  StatusOr<json> WaitBound(const std::string& ns, const std::string& pv_name,
                           const std::string& claim);
  // A Deployment with `replicas` pods mounting `claims` (the first is waited for: until the pods
  // run, unless !wait).
  Status CreateDeployment(const std::string& ns, const std::string& name,
                          const std::vector<std::string>& claims, int replicas, bool wait = true);
  Status CreateDeployment(const std::string& ns, const std::string& name, const std::string& claim,
                          int replicas, bool wait = true) {
    return CreateDeployment(ns, name, std::vector<std::string>{claim}, replicas, wait);
  }
  // A StatefulSet (Parallel pod management) with `replicas` pods and one volumeClaimTemplate
  // per entry of `templates`: pod i mounts claim <template>-<name>-<i>, which the caller creates
  // beforehand (bound to a PV of its choosing) so the controller creates none. Does not wait.
  Status CreateStatefulSet(const std::string& ns, const std::string& name,
                           const std::vector<std::string>& templates, int replicas);
  Status WaitRunningPods(const std::string& ns, const std::string& claim, size_t count);
  StatusOr<json> Get(const kube::ResourcePath& path) { return client_->Get(path); }

  // Runs flexcsi-migrate with the kubeconfig, the given words and extra environment.
  ToolRun Run(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  // Starts it without waiting; Wait() collects it. `binary`: another build of flexcsi-migrate
  // (a previous release's, tests/upgrade).
  pid_t Spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
              const std::string& out_prefix, const std::string& binary = MigrateBinary());
  static ToolRun Wait(pid_t pid, const std::string& out_prefix);

  // GET/POST a /_fake/ control endpoint.
  StatusOr<json> Control(const std::string& method, const std::string& path,
                         const json& body = json::object());
  StatusOr<json> Audit();

 private:
  std::string dir_;
  flexcsi::testing::FakeApiServerProcess server_;
  std::unique_ptr<kube::KubeClient> client_;
};

inline kube::ResourcePath Pv(const std::string& name) {
  return kube::ResourcePath::Core("persistentvolumes").Named(name);
}
inline kube::ResourcePath Claim(const std::string& ns, const std::string& name) {
  return kube::ResourcePath::Core("persistentvolumeclaims", ns).Named(name);
}

// A suite sharing one MigrateEnv (one fake API server start per suite). Each test gets its own
// namespace "t-<test name, lower case>" and journal directory.
class MigrateEnvTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static MigrateEnv* env_;
  std::string ns_;
  std::string journal_;
};

// Asserts (gtest) what every test must leave true: no storage-delete in the audit log, no
// successful non-dry-run DELETE of a PV whose stored policy was not Retain, no DELETE of a
// claim, and every listed PV and claim exists and is Bound to each other.
void ExpectNothingLost(MigrateEnv& env, const std::string& ns,
                       const std::vector<std::pair<std::string, std::string>>& pv_and_claim);

}  // namespace flexcsi::migrate::testing
