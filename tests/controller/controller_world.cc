#include "tests/controller/controller_world.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bridge/bridge_config.h"
#include "bridge/csi_client.h"
#include "kube/kube_config.h"

namespace flexcsi::controller_test {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long the test waits for its own calls to the driver: on a machine at load 50 a fresh
// channel and the answer took over 10 s.
constexpr std::chrono::seconds kDriverCallBound{60};

ControllerWorld::ControllerWorld() = default;

ControllerWorld::~ControllerWorld() {
  for (auto& [i, c] : controllers_) c->Kill(SIGKILL);
  controllers_.clear();
  client_.reset();
  (void)api_server_.Stop();
  env_.reset();  // unmounts, detaches loop devices, removes its dir
  if (!root_.empty() && !std::getenv("FLEXCSI_KEEP_TEST_DIR")) fs::remove_all(root_);
}

::testing::AssertionResult ControllerWorld::Start(bool snapshot_crds) {
  testing::FakeApiServerOptions options;
  options.snapshot_crds = snapshot_crds;
  return Start(std::move(options));
}

::testing::AssertionResult ControllerWorld::Start(testing::FakeApiServerOptions options) {
  char tmpl[] = "/tmp/flexcsi-controller.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return ::testing::AssertionFailure() << "mkdtemp failed";
  root_ = tmpl;
  fs::create_directories(root_ + "/logs");
  env_ = std::make_unique<kubelet::TestEnvironment>();
  auto started = env_->Start();
  if (!started) return started;

  options.persist_state = false;
  Status s = api_server_.Start(root_ + "/api", options);
  if (!s.ok()) return ::testing::AssertionFailure() << "fake API server: " << s.ToString();
  kube::ConfigFlags flags;
  flags.kubeconfig = api_server_.kubeconfig_path();
  auto config = kube::LoadClientConfig(flags);
  if (!config.ok()) return ::testing::AssertionFailure() << config.status().ToString();
  auto client = kube::KubeClient::Create(*config);
  if (!client.ok()) return ::testing::AssertionFailure() << client.status().ToString();
  client_ = std::move(*client);

  // The node the csi-loopback instance serves, labelled with the driver's topology key (in a
  // FlexVolume cluster no CSINode registration does that; the operator labels nodes).
  auto node = client_->Create(kube::ResourcePath::Core("nodes"),
                              {{"apiVersion", "v1"},
                               {"kind", "Node"},
                               {"metadata",
                                {{"name", kubelet::kTestNode},
                                 {"labels", {{kTopologyKey, kubelet::kTestNode},
                                             {"kubernetes.io/hostname", kubelet::kTestNode}}}}}});
  if (!node.ok()) return ::testing::AssertionFailure() << node.status().ToString();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ControllerWorld::StartController(int index, ControllerFlags flags) {
  const std::string binary = flags.binary.empty() ? FLEXCSI_CONTROLLER_BINARY : flags.binary;
  std::vector<std::string> argv = {binary,
                                   "--kubeconfig", api_server_.kubeconfig_path(),
                                   "--bridge-config", env_->bridge_config_path(),
                                   "--journal", JournalPath(),
                                   "--resync-period", "1",
                                   "--timeout", "30",
                                   "--worker-threads", "4",
                                   "--identity", "controller-" + std::to_string(index),
                                   "--metrics-address", "127.0.0.1:0"};
  argv.insert(argv.end(), flags.extra.begin(), flags.extra.end());
  for (const auto& [k, v] : flags.env) ::setenv(k.c_str(), v.c_str(), 1);
  auto child = std::make_unique<kubelet::ChildProcess>();
  auto r = child->Start(argv, ControllerLogPath(index));
  for (const auto& [k, v] : flags.env) ::unsetenv(k.c_str());
  if (!r) return r;
  controllers_[index] = std::move(child);
  return ::testing::AssertionSuccess();
}

void ControllerWorld::KillController(int index, int sig) {
  auto it = controllers_.find(index);
  if (it != controllers_.end()) it->second->Kill(sig);
}

bool ControllerWorld::WaitControllerExit(int index, std::chrono::milliseconds timeout) {
  auto it = controllers_.find(index);
  if (it == controllers_.end()) return true;
  // Looks for the zombie without reaping it: ChildProcess reaps (and reports) it when it is
  // replaced, and must never signal a pid that was reaped behind its back.
  const std::string stat = "/proc/" + std::to_string(it->second->pid()) + "/stat";
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::ifstream in(stat);
    std::string line;
    std::getline(in, line);
    const auto paren = line.rfind(')');
    if (line.empty() || (paren != std::string::npos && paren + 2 < line.size() &&
                         line[paren + 2] == 'Z')) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

pid_t ControllerWorld::ControllerPid(int index) const {
  auto it = controllers_.find(index);
  return it == controllers_.end() ? -1 : it->second->pid();
}

std::string ControllerWorld::ControllerLogPath(int index) const {
  return root_ + "/logs/controller-" + std::to_string(index) + ".log";
}

std::string ControllerWorld::ControllerLog(int index) const {
  std::ifstream in(ControllerLogPath(index));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ControllerWorld::CreateNamespace(const std::string& ns) {
  auto r = client_->Create(kube::ResourcePath::Core("namespaces"),
                           {{"apiVersion", "v1"}, {"kind", "Namespace"},
                            {"metadata", {{"name", ns}}}});
  ASSERT_TRUE(r.ok() || kube::IsAlreadyExists(r.status())) << r.status().ToString();
}

void ControllerWorld::CreateStorageClass(const std::string& name, nlohmann::json extra) {
  nlohmann::json sc = {{"apiVersion", "storage.k8s.io/v1"},
                       {"kind", "StorageClass"},
                       {"metadata", {{"name", name}}},
                       {"provisioner", kProvisioner},
                       {"reclaimPolicy", "Delete"},
                       {"volumeBindingMode", "Immediate"},
                       {"allowVolumeExpansion", true}};
  sc.merge_patch(extra);
  auto r = client_->Create(kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses"), sc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

void ControllerWorld::CreateClaim(const std::string& ns, const std::string& name,
                                  const std::string& size, const std::string& storage_class,
                                  nlohmann::json extra_spec) {
  nlohmann::json claim = {{"apiVersion", "v1"},
                          {"kind", "PersistentVolumeClaim"},
                          {"metadata", {{"name", name}, {"namespace", ns}}},
                          {"spec",
                           {{"accessModes", {"ReadWriteOnce"}},
                            {"storageClassName", storage_class},
                            {"resources", {{"requests", {{"storage", size}}}}}}}};
  claim["spec"].merge_patch(extra_spec);
  auto r = client_->Create(kube::ResourcePath::Core("persistentvolumeclaims", ns), claim);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

nlohmann::json ControllerWorld::GetClaim(const std::string& ns, const std::string& name) {
  auto r = client_->Get(kube::ResourcePath::Core("persistentvolumeclaims", ns).Named(name));
  return r.ok() ? *r : nlohmann::json();
}

nlohmann::json ControllerWorld::GetPV(const std::string& name) {
  auto r = client_->Get(kube::ResourcePath::Core("persistentvolumes").Named(name));
  return r.ok() ? *r : nlohmann::json();
}

bool ControllerWorld::WaitFor(const std::function<bool()>& done,
                              std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

bool ControllerWorld::WaitBound(const std::string& ns, const std::string& name,
                                std::chrono::milliseconds timeout) {
  return WaitFor([&] {
    auto c = GetClaim(ns, name);
    return c.is_object() && c["status"].value("phase", "") == "Bound";
  }, timeout);
}

std::vector<std::string> ControllerWorld::EventsFor(const std::string& ns,
                                                    const std::string& name) {
  std::vector<std::string> out;
  auto list = client_->List(kube::ResourcePath::Core("events", ns));
  if (!list.ok()) return out;
  for (const auto& e : (*list)["items"]) {
    if (e["involvedObject"].value("name", "") != name) continue;
    out.push_back(e.value("type", "") + " " + e.value("reason", "") + ": " +
                  e.value("message", "") + " [" + e["source"].value("component", "") + "]");
  }
  return out;
}

bool ControllerWorld::HasEvent(const std::string& ns, const std::string& name,
                               const std::string& reason, const std::string& message_part) {
  for (const auto& e : EventsFor(ns, name)) {
    if (e.find(" " + reason + ": ") != std::string::npos &&
        e.find(message_part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string ControllerWorld::CsiEndpoint() const {
  auto config = BridgeConfig::LoadFile(env_->bridge_config_path());
  return config.ok() ? config->drivers.front().csi_endpoint : "";
}

std::map<std::string, int64_t> ControllerWorld::DriverVolumes() {
  CsiClient csi(CsiEndpoint(), nullptr);
  std::map<std::string, int64_t> out;
  csi::v1::ListVolumesRequest req;
  auto resp = csi.ListVolumes(req, Deadline::In(kDriverCallBound));
  EXPECT_TRUE(resp.ok()) << resp.status().ToString();
  if (!resp.ok()) return out;
  for (const auto& e : resp->entries()) out[e.volume().volume_id()] = e.volume().capacity_bytes();
  return out;
}

std::vector<std::string> ControllerWorld::DriverSnapshots() {
  CsiClient csi(CsiEndpoint(), nullptr);
  std::vector<std::string> out;
  auto resp = csi.ListSnapshots(csi::v1::ListSnapshotsRequest(),
                                Deadline::In(kDriverCallBound));
  EXPECT_TRUE(resp.ok()) << resp.status().ToString();
  if (!resp.ok()) return out;
  for (const auto& e : resp->entries()) out.push_back(e.snapshot().snapshot_id());
  return out;
}

}  // namespace flexcsi::controller_test
