#include "tests/kubelet/test_environment.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "common/bridge_client.h"
#include "csi.grpc.pb.h"

extern char** environ;

namespace flexcsi {
namespace kubelet {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

// Undoes the octal escapes of /proc/self/mountinfo ("\040" for a space).
std::string UnescapeMountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + i + 1, s.begin() + i + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string> MountPoints() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    fields >> id >> parent >> devno >> root >> mount_point;
    out.push_back(UnescapeMountinfo(mount_point));
  }
  return out;
}

bool HasPrefixDir(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

bool CanConnect(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string RowString(const nlohmann::json& row, const char* snake, const char* camel) {
  for (const char* k : {snake, camel}) {
    auto it = row.find(k);
    if (it != row.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// The binary built with the test, or the one the environment variable names (to run the same
// scenarios against an older build, e.g. to show a regression test fails without its fix).
std::string BinaryOrOverride(const char* built, const char* variable) {
  const char* override_path = std::getenv(variable);
  return override_path && *override_path ? override_path : built;
}

}  // namespace

bool InPrivateMountNamespace() {
  auto ns_of = [](const std::string& pid) {
    char buf[64];
    ssize_t n = ::readlink(("/proc/" + pid + "/ns/mnt").c_str(), buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  const std::string self = ns_of("self");
  if (self.empty()) return false;
  // PID 1's namespace is the host's; in a sandbox it may be unreadable, and then the parent's
  // (ctest or the shell that ran unshare) stands for it.
  std::string host = ns_of("1");
  if (host.empty()) host = ns_of(std::to_string(::getppid()));
  return !host.empty() && host != self;
}

::testing::AssertionResult ChildProcess::Start(const std::vector<std::string>& argv,
                                               const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = ::posix_spawnp(&pid_, copy[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    return ::testing::AssertionFailure() << "cannot start " << argv[0] << ": " << strerror(rc);
  }
  return ::testing::AssertionSuccess();
}

void ChildProcess::Kill(int sig) {
  if (pid_ <= 0) return;
  int early;
  if (::waitpid(pid_, &early, WNOHANG) == pid_) {
    // It died on its own before being stopped: worth a line next to the test's failure.
    exit_report_ = WIFSIGNALED(early) ? "killed by signal " + std::to_string(WTERMSIG(early))
                                      : "exited with status " + std::to_string(WEXITSTATUS(early));
    std::fprintf(stderr, "note: pid %d had %s before the test stopped it\n", pid_,
                 exit_report_.c_str());
    pid_ = -1;
    return;
  }
  ::kill(pid_, sig);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int status;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) break;
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  pid_ = -1;
}

TestEnvironment::TestEnvironment(EnvOptions options) : options_(options) {}

TestEnvironment::~TestEnvironment() { Cleanup(); }

::testing::AssertionResult TestEnvironment::Start() {
  if (!InPrivateMountNamespace()) {
    return ::testing::AssertionFailure()
           << "refusing to mount in the host mount namespace; run this test as "
              "unshare -m --propagation private <test binary> (ctest does)";
  }
  char tmpl[] = "/tmp/flexcsi-kubelet.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return ::testing::AssertionFailure() << "mkdtemp: " << strerror(errno);
  }
  root_ = tmpl;
  kubelet_root_ = root_ + "/kubelet";
  plugin_dir_ = root_ + "/volume-plugins";
  bridge_socket_ = root_ + "/run/bridge.sock";
  csi_socket_ = root_ + "/run/csi.sock";
  state_db_ = root_ + "/bridge/state.db";
  bridge_config_ = root_ + "/bridge.yaml";
  bridge_log_ = root_ + "/logs/flexcsi-bridge.log";
  driver_log_ = root_ + "/logs/csi-loopback.log";
  csi_state_dir_ = root_ + "/csi-state";
  // pods/ and plugins/: what kubelet makes in its root dir at start, and what the bridge checks.
  for (const std::string& d : {kubelet_root_ + "/pods", kubelet_root_ + "/plugins", plugin_dir_,
                               root_ + "/run", root_ + "/bridge",
                               root_ + "/logs", csi_state_dir_}) {
    fs::create_directories(d);
  }

  caller_ = std::make_unique<KubeletCaller>(plugin_dir_, kubelet_root_, kTestDriver, kTestNode);
  flexcsi_json_ = {
      {"capabilities",
       {{"attach", options_.flex_attach},
        {"selinuxRelabel", true},
        {"supportsMetrics", true},
        {"fsGroup", true},
        {"requiresFSResize", true}}},
      {"bridgeSocket", bridge_socket_},
      {"timeoutSeconds", {{"default", 60}, {"isattached", 30}, {"waitforattach", 120}}}};
  auto installed = InstallFlexexec(options_.flexexec_binary.empty() ? FLEXEXEC_BINARY
                                                                    : options_.flexexec_binary);
  if (!installed) return installed;

  nlohmann::json config = {{"kubeletRoot", kubelet_root_},
                           {"socket", bridge_socket_},
                           {"stateDatabase", state_db_},
                           {"metricsAddress", options_.metrics ? "127.0.0.1:0" : ""},
                           {"reconcileIntervalSeconds", 2},
                           {"unavailableRetrySeconds", options_.unavailable_retry_seconds},
                           // No API server here: the caller plays kubelet, and every call is
                           // taken as the admin's (the checks: tests/cluster/tenancy_suite),
                           // unless EnvOptions::kubeconfig names one.
                           {"trustPodAuthors", options_.kubeconfig.empty()},
                           {"drivers",
                            {{{"flexDriver", kTestDriver},
                              {"csiEndpoint", "unix://" + csi_socket_},
                              {"controllerEndpoint", options_.controller_endpoint},
                              {"attach", options_.flex_attach},
                              {"accessMode", "ReadWriteOnce"},
                              {"rule",
                               {{"csiDriver", kTestCsiDriver},
                                {"volumeHandle", {{"fromOption", "volumeID"}}},
                                {"defaultFsType", "ext4"}}}}}}};
  if (!options_.kubeconfig.empty()) {
    config["kubeconfig"] = options_.kubeconfig;
    config["nodeName"] = kTestNode;     // whose pods may have a PV attached and staged here
    config["registerDrivers"] = false;  // the drivers' registration is not what is tested
  }
  std::ofstream(bridge_config_) << config.dump(2) << "\n";  // JSON is YAML

  auto started = StartDriver();
  if (!started) return started;
  return StartBridge();
}

::testing::AssertionResult TestEnvironment::WaitForSocket(const std::string& path,
                                                          const ChildProcess& child,
                                                          const std::string& log,
                                                          const std::string& what) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    int status;
    if (::waitpid(child.pid(), &status, WNOHANG) == child.pid()) {
      return ::testing::AssertionFailure() << what << " exited during start-up; its log:\n"
                                           << Tail(ReadFile(log));
    }
    if (CanConnect(path)) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(milliseconds(20));
  }
  return ::testing::AssertionFailure()
         << what << " did not listen on " << path << " within 30 s; its log:\n"
         << Tail(ReadFile(log));
}

::testing::AssertionResult TestEnvironment::StartBridge() {
  ++bridge_starts_;
  const std::string binary =
      options_.bridge_binary.empty()
          ? BinaryOrOverride(FLEXCSI_BRIDGE_BINARY, "FLEXCSI_TEST_BRIDGE_BINARY")
          : options_.bridge_binary;
  std::ofstream(bridge_log_, std::ios::app)
      << "=== test: bridge start #" << bridge_starts_ << " (" << binary << ") ===\n";
  std::vector<std::string> argv;
  // FLEXCSI_BRIDGE_WRAPPER="gdb -batch -ex run -ex bt --args" runs the bridge under a debugger
  // (its output lands in the bridge log).
  if (const char* wrapper = std::getenv("FLEXCSI_BRIDGE_WRAPPER"); wrapper && *wrapper) {
    std::istringstream words(wrapper);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  argv.insert(argv.end(), {binary, "--config", bridge_config_});
  auto r = bridge_.Start(argv, bridge_log_);
  if (!r) return r;
  return WaitForSocket(bridge_socket_, bridge_, bridge_log_, "flexcsi-bridge");
}

void TestEnvironment::KillBridge(int sig) { bridge_.Kill(sig); }

::testing::AssertionResult TestEnvironment::InstallFlexexec(const std::string& binary) {
  std::string error;
  if (!caller_->InstallDriver(binary, flexcsi_json_, &error)) {
    return ::testing::AssertionFailure() << error;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult TestEnvironment::RestartBridge(int sig) {
  KillBridge(sig);
  return StartBridge();
}

::testing::AssertionResult TestEnvironment::StartDriver() {
  ++driver_starts_;
  std::vector<std::string> argv = {BinaryOrOverride(CSI_LOOPBACK_BINARY, "FLEXCSI_TEST_CSI_BINARY"),
                                   "--endpoint",
                                   "unix://" + csi_socket_,
                                   "--nodeid",
                                   kTestNode,
                                   "--state-dir",
                                   csi_state_dir_};
  if (!options_.csi_controller_attach) argv.push_back("--no-attach");
  if (!options_.csi_stage_unstage) argv.push_back("--no-stage-unstage");
  if (options_.csi_stage_without_mount) argv.push_back("--stage-without-mount");
  if (!options_.csi_volume_mount_group) argv.push_back("--no-volume-mount-group");
  if (!options_.csi_expand) argv.push_back("--no-expand");
  auto r = driver_.Start(argv, driver_log_);
  if (!r) return r;
  return WaitForSocket(csi_socket_, driver_, driver_log_, "csi-loopback");
}

void TestEnvironment::KillDriver(int sig) { driver_.Kill(sig); }

::testing::AssertionResult TestEnvironment::RestartDriver(int sig) {
  KillDriver(sig);
  return StartDriver();
}

std::string TestEnvironment::CreateVolume(const std::string& name, int64_t bytes,
                                          const std::string& fs_type) {
  auto channel = grpc::CreateChannel("unix://" + csi_socket_, grpc::InsecureChannelCredentials());
  auto stub = csi::v1::Controller::NewStub(channel);
  csi::v1::CreateVolumeRequest req;
  req.set_name(name);
  req.mutable_capacity_range()->set_required_bytes(bytes);
  auto* cap = req.add_volume_capabilities();
  cap->mutable_mount()->set_fs_type(fs_type);
  cap->mutable_access_mode()->set_mode(csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  if (!fs_type.empty()) (*req.mutable_parameters())["fsType"] = fs_type;
  csi::v1::CreateVolumeResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = stub->CreateVolume(&ctx, req, &resp);
  if (!s.ok()) {
    ADD_FAILURE() << "CreateVolume " << name << ": " << s.error_code() << " " << s.error_message();
    return "";
  }
  return resp.volume().volume_id();
}

::testing::AssertionResult TestEnvironment::NodeUnpublish(const std::string& volume_id,
                                                          const std::string& target_path) {
  auto channel = grpc::CreateChannel("unix://" + csi_socket_, grpc::InsecureChannelCredentials());
  auto stub = csi::v1::Node::NewStub(channel);
  csi::v1::NodeUnpublishVolumeRequest req;
  req.set_volume_id(volume_id);
  req.set_target_path(target_path);
  csi::v1::NodeUnpublishVolumeResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = stub->NodeUnpublishVolume(&ctx, req, &resp);
  if (!s.ok()) {
    return ::testing::AssertionFailure() << "NodeUnpublishVolume " << target_path << ": "
                                         << s.error_code() << " " << s.error_message();
  }
  return ::testing::AssertionSuccess();
}

FlexVolumeSource TestEnvironment::VolumeSource(const std::string& pv_name,
                                               const std::string& volume_id) const {
  FlexVolumeSource v;
  v.volume_name = pv_name;
  v.fs_type = "ext4";
  v.options["volumeID"] = volume_id;
  return v;
}

PodInfo TestEnvironment::Pod(const std::string& name) const {
  PodInfo p;
  p.name = name;
  p.namespace_name = "default";
  // Deterministic, UID-shaped: pods/<uid> must be unique per pod name.
  std::string hex;
  for (char c : name) {
    char b[3];
    std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(c));
    hex += b;
  }
  hex.resize(32, '0');
  p.uid = hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
          hex.substr(16, 4) + "-" + hex.substr(20, 12);
  return p;
}

nlohmann::json TestEnvironment::BridgeCall(const std::string& call, std::string* error) const {
  BridgeRequest req;
  req.call = call;
  req.timeout_ms = 9000;
  auto env = CallBridgeRaw(bridge_socket_, req, milliseconds(2000), milliseconds(10000));
  if (!env.ok()) {
    if (error) *error = env.status().ToString();
    return nullptr;
  }
  return (*env)["reply"];
}

nlohmann::json TestEnvironment::BridgeState(std::string* error) const {
  return BridgeCall("bridge.state", error);
}

nlohmann::json TestEnvironment::BridgeHealth(std::string* error) const {
  return BridgeCall("bridge.health", error);
}

std::string TestEnvironment::ScrapeMetrics() const {
  // The bridge logs the port it bound: "metrics on http://127.0.0.1:<port>/metrics".
  const std::string log = ReadBridgeLog();
  const std::string marker = "metrics on http://127.0.0.1:";
  const size_t at = log.rfind(marker);
  if (at == std::string::npos) {
    ADD_FAILURE() << "the bridge log names no metrics port";
    return "";
  }
  const int port = std::atoi(log.c_str() + at + marker.size());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "connect to metrics port " << port << ": " << std::strerror(errno);
    ::close(fd);
    return "";
  }
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    ADD_FAILURE() << "writing the metrics request failed";
  }
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
  ::close(fd);
  return response;
}

size_t TestEnvironment::BridgeRecordCount() const {
  nlohmann::json state = BridgeState();
  size_t n = 0;
  for (const char* table : {"attachments", "stagings", "publications"}) {
    if (state.is_object() && state.contains(table) && state[table].is_array()) {
      n += state[table].size();
    }
  }
  return state.is_object() ? n : static_cast<size_t>(-1);
}

std::vector<std::string> TestEnvironment::MountsUnderRoot() const {
  std::vector<std::string> out;
  if (root_.empty()) return out;
  for (const std::string& m : MountPoints()) {
    if (HasPrefixDir(m, root_)) out.push_back(m);
  }
  return out;
}

std::vector<std::string> TestEnvironment::LoopDevicesUnderRoot() const {
  std::vector<std::string> out;
  if (root_.empty()) return out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename();
    if (name.rfind("loop", 0) != 0) continue;
    std::ifstream in(entry.path() / "loop" / "backing_file");
    std::string backing;
    if (!std::getline(in, backing)) continue;
    if (HasPrefixDir(backing, root_)) out.push_back("/dev/" + name + " (" + backing + ")");
  }
  return out;
}

std::string TestEnvironment::RecordsVersusMountTable() const {
  std::string error;
  nlohmann::json state = BridgeState(&error);
  if (!state.is_object()) return "bridge.state failed: " + error;
  std::set<std::string> mounts;
  for (const std::string& m : MountPoints()) {
    if (HasPrefixDir(m, kubelet_root_)) mounts.insert(m);
  }
  std::set<std::string> recorded;
  std::string diff;
  auto check = [&](const char* table, const char* snake, const char* camel) {
    if (!state.contains(table)) return;
    for (const auto& row : state[table]) {
      std::string path = RowString(row, snake, camel);
      recorded.insert(path);
      // A staging expects a mount only when the driver mounted there or the bridge put its
      // marker there (state_store.h StagingShape).
      const bool expects_mount =
          !row.contains("shape") || row["shape"] == "driver-mount" || row.value("marker", false);
      if (expects_mount && !mounts.count(path)) {
        diff += std::string(table) + " record without a mount: " + row.dump() + "\n";
      }
    }
  };
  check("stagings", "staging_path", "stagingPath");
  check("publications", "target_path", "targetPath");
  for (const std::string& m : mounts) {
    if (!recorded.count(m)) diff += "mount without a bridge record: " + m + "\n";
  }
  return diff;
}

std::string TestEnvironment::DriverLeftovers() const {
  const std::string text = ReadFile(csi_state_dir_ + "/state.json");
  nlohmann::json state = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!state.is_object()) return "csi-loopback state.json unreadable: " + Tail(text, 200);
  std::string out;
  for (const auto& v : state.value("volumes", nlohmann::json::array())) {
    const std::string id = v.value("id", "?");
    for (const char* key : {"controller_publications", "node_publications"}) {
      if (v.contains(key) && !v[key].empty()) {
        out += id + " " + key + ": " + v[key].dump() + "\n";
      }
    }
    for (const char* key : {"staging_path", "device"}) {
      if (!v.value(key, std::string()).empty()) out += id + " " + key + ": " + v[key].dump() + "\n";
    }
  }
  return out;
}

::testing::AssertionResult TestEnvironment::ControllerExpand(const std::string& volume_id,
                                                             int64_t bytes) {
  auto channel = grpc::CreateChannel("unix://" + csi_socket_, grpc::InsecureChannelCredentials());
  auto stub = csi::v1::Controller::NewStub(channel);
  csi::v1::ControllerExpandVolumeRequest req;
  req.set_volume_id(volume_id);
  req.mutable_capacity_range()->set_required_bytes(bytes);
  csi::v1::ControllerExpandVolumeResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = stub->ControllerExpandVolume(&ctx, req, &resp);
  if (!s.ok()) {
    return ::testing::AssertionFailure()
           << "ControllerExpandVolume " << volume_id << ": " << s.error_message();
  }
  return ::testing::AssertionSuccess();
}

std::string TestEnvironment::ReadFile(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TestEnvironment::ReadBridgeLog() const { return ReadFile(bridge_log_); }

void TestEnvironment::Cleanup() {
  bridge_.Kill(SIGTERM);
  driver_.Kill(SIGTERM);
  if (root_.empty()) return;
  // Deepest first; a busy mount is detached lazily rather than left behind.
  std::vector<std::string> mounts = MountsUnderRoot();
  std::reverse(mounts.begin(), mounts.end());
  for (int pass = 0; pass < 3 && !mounts.empty(); ++pass) {
    std::sort(mounts.begin(), mounts.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& m : mounts) {
      if (::umount2(m.c_str(), 0) != 0) ::umount2(m.c_str(), MNT_DETACH);
    }
    mounts = MountsUnderRoot();
  }
  for (const std::string& dev : LoopDevicesUnderRoot()) {
    const std::string path = dev.substr(0, dev.find(' '));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::ioctl(fd, LOOP_CLR_FD, 0);
      ::close(fd);
    }
  }
  if (!MountsUnderRoot().empty()) {
    // Never recurse into a mounted filesystem.
    ADD_FAILURE() << "could not unmount everything below " << root_ << "; left it in place";
  } else if (const char* keep = std::getenv("FLEXCSI_KEEP_TEST_DIR"); keep && *keep) {
    std::fprintf(stderr, "keeping %s\n", root_.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  root_.clear();
}

}  // namespace kubelet
}  // namespace flexcsi
