#include "tests/driver/driver_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/command_runner.h"
#include "common/mount_table.h"

namespace flexcsi {
namespace driver_test {

namespace {

bool InPrivateMountNamespace() {
  // Under `unshare -m` our mount namespace differs from init's.
  char ours[64] = {0};
  char inits[64] = {0};
  if (::readlink("/proc/self/ns/mnt", ours, sizeof(ours) - 1) < 0) return false;
  if (::readlink("/proc/1/ns/mnt", inits, sizeof(inits) - 1) < 0) return true;  // cannot tell
  return std::string(ours) != std::string(inits);
}

bool IsBelow(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

}  // namespace

std::unique_ptr<grpc::ClientContext> NewContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return context;
}

std::string Describe(const grpc::Status& status) {
  return std::to_string(status.error_code()) + ": " + status.error_message();
}

// ---------------------------------------------------------------------------------------------

DriverProcess::DriverProcess(std::string socket_path, std::string state_dir, std::string log_path,
                             std::vector<std::string> extra_flags, std::string node_id)
    : socket_path_(std::move(socket_path)),
      state_dir_(std::move(state_dir)),
      log_path_(std::move(log_path)),
      extra_flags_(std::move(extra_flags)),
      node_id_(std::move(node_id)) {}

DriverProcess::~DriverProcess() { Stop(); }

::testing::AssertionResult DriverProcess::Start() {
  std::vector<std::string> args = {CSI_LOOPBACK_BINARY, "--endpoint",  "unix://" + socket_path_,
                                   "--nodeid",          node_id_,      "--state-dir",
                                   state_dir_,          "--log-level", "debug"};
  args.insert(args.end(), extra_flags_.begin(), extra_flags_.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork: " << strerror(errno);
  if (pid == 0) {
    int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;

  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return ::testing::AssertionFailure() << "csi-loopback exited during start:\n" << Log();
    }
    struct stat st;
    if (::stat(socket_path_.c_str(), &st) == 0) {
      // A fresh channel each time: a channel that met a stale socket (after a crash) backs off
      // for seconds before it tries again.
      auto channel =
          grpc::CreateChannel("unix://" + socket_path_, grpc::InsecureChannelCredentials());
      auto identity = csi::v1::Identity::NewStub(channel);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      csi::v1::ProbeResponse probe;
      if (identity->Probe(&context, csi::v1::ProbeRequest(), &probe).ok() &&
          probe.ready().value()) {
        return ::testing::AssertionSuccess();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ::testing::AssertionFailure() << "csi-loopback not ready after 30 s:\n" << Log();
}

int DriverProcess::Stop() {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGTERM);
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return status;
}

void DriverProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string DriverProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------

std::vector<std::string> LoopDevicesBelow(const std::string& dir) {
  std::vector<std::string> devices;
  StatusOr<std::string> out = RunCommand({"losetup", "--list", "--json"});
  if (!out.ok() || out->empty()) return devices;
  try {
    nlohmann::json root = nlohmann::json::parse(*out);
    for (const auto& device : root.at("loopdevices")) {
      std::string file = device.value("back-file", "");
      if (IsBelow(file, dir)) devices.push_back(device.at("name").get<std::string>());
    }
  } catch (const nlohmann::json::exception&) {
  }
  return devices;
}

std::vector<std::string> MountPointsBelow(const std::string& dir) {
  std::vector<std::string> targets;
  StatusOr<std::vector<MountEntry>> table = ReadMountTable();
  if (!table.ok()) return {"<mount table unreadable: " + table.status().ToString() + ">"};
  for (const MountEntry& e : *table) {
    if (IsBelow(e.target, dir)) targets.push_back(e.target);
  }
  return targets;
}

int CreateFileErrno(const std::string& dir) {
  const std::string path = dir + "/.probe-" + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(path.c_str());
  return 0;
}

bool GroupCanCreateFile(const std::string& dir, gid_t gid) {
  const std::string path = dir + "/.group-probe-" + std::to_string(gid);
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls here: the test process has gRPC threads.
    const gid_t groups[] = {gid};
    if (::setgroups(1, groups) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  if (pid < 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::unlink(path.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void CleanUpTestDirectory(const std::string& dir) {
  if (dir.empty()) return;
  // Deepest mounts first; repeat because mounts can be stacked.
  for (int round = 0; round < 8; ++round) {
    StatusOr<std::vector<MountEntry>> table = ReadMountTable();
    if (!table.ok()) break;
    std::vector<std::string> targets;
    for (const MountEntry& e : *table) {
      if (IsBelow(e.target, dir)) targets.push_back(e.target);
    }
    if (targets.empty()) break;
    std::sort(targets.begin(), targets.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& target : targets) Unmount(target);
  }
  for (const std::string& device : LoopDevicesBelow(dir)) {
    RunCommand({"losetup", "--detach", device});
  }
  boost::system::error_code ec;
  boost::filesystem::remove_all(dir, ec);
}

// ---------------------------------------------------------------------------------------------

void DriverTest::SetUp() {
  ASSERT_TRUE(InPrivateMountNamespace())
      << "driver tests mount for real; run them via ctest (unshare -m --propagation private)";
  // The test's pid in the name: the leftover sweep (detach_leftover_loop_devices.sh) leaves the
  // devices of a test binary still running, e.g. another checkout's ctest beside this one.
  std::string templ = "/tmp/flexcsi-driver-test-" + std::to_string(::getpid()) + "-XXXXXX";
  ASSERT_NE(::mkdtemp(templ.data()), nullptr);
  dir_ = templ;
  state_dir_ = dir_ + "/state";
  driver_ = std::make_unique<DriverProcess>(dir_ + "/csi.sock", state_dir_, dir_ + "/driver.log",
                                            ExtraFlags());
  ASSERT_TRUE(driver_->Start());
  Connect();
}

void DriverTest::TearDown() {
  // Close our connection first: the driver's graceful shutdown waits for open connections.
  identity_.reset();
  controller_.reset();
  node_.reset();
  if (driver_) {
    driver_->Stop();
    if (HasFailure()) std::cerr << "---- csi-loopback log ----\n" << driver_->Log();
  }
  CleanUpTestDirectory(dir_);
  EXPECT_TRUE(LoopDevicesBelow(dir_).empty()) << "loop devices left behind";
}

void DriverTest::Connect() {
  auto channel =
      grpc::CreateChannel("unix://" + driver_->socket_path(), grpc::InsecureChannelCredentials());
  identity_ = csi::v1::Identity::NewStub(channel);
  controller_ = csi::v1::Controller::NewStub(channel);
  node_ = csi::v1::Node::NewStub(channel);
}

void DriverTest::RestartDriver(bool crash) {
  identity_.reset();
  controller_.reset();
  node_.reset();
  if (crash) {
    driver_->Kill();
  } else {
    driver_->Stop();
  }
  driver_ = std::make_unique<DriverProcess>(dir_ + "/csi.sock", state_dir_, dir_ + "/driver.log",
                                            ExtraFlags());
  ASSERT_TRUE(driver_->Start());
  Connect();
}

csi::v1::VolumeCapability DriverTest::MountCapability(
    const std::string& fs_type, csi::v1::VolumeCapability::AccessMode::Mode mode) {
  csi::v1::VolumeCapability c;
  c.mutable_mount()->set_fs_type(fs_type);
  c.mutable_access_mode()->set_mode(mode);
  return c;
}

csi::v1::VolumeCapability DriverTest::BlockCapability(
    csi::v1::VolumeCapability::AccessMode::Mode mode) {
  csi::v1::VolumeCapability c;
  c.mutable_block();
  c.mutable_access_mode()->set_mode(mode);
  return c;
}

csi::v1::CreateVolumeRequest DriverTest::CreateRequest(
    const std::string& name, int64_t bytes, const csi::v1::VolumeCapability& capability) {
  csi::v1::CreateVolumeRequest r;
  r.set_name(name);
  r.mutable_capacity_range()->set_required_bytes(bytes);
  *r.add_volume_capabilities() = capability;
  return r;
}

grpc::Status DriverTest::Call(const csi::v1::CreateVolumeRequest& r,
                              csi::v1::CreateVolumeResponse* out) {
  return controller_->CreateVolume(NewContext().get(), r, out);
}
grpc::Status DriverTest::Call(const csi::v1::DeleteVolumeRequest& r) {
  csi::v1::DeleteVolumeResponse out;
  return controller_->DeleteVolume(NewContext().get(), r, &out);
}
grpc::Status DriverTest::Call(const csi::v1::ControllerPublishVolumeRequest& r,
                              csi::v1::ControllerPublishVolumeResponse* out) {
  return controller_->ControllerPublishVolume(NewContext().get(), r, out);
}
grpc::Status DriverTest::Call(const csi::v1::ControllerUnpublishVolumeRequest& r) {
  csi::v1::ControllerUnpublishVolumeResponse out;
  return controller_->ControllerUnpublishVolume(NewContext().get(), r, &out);
}
grpc::Status DriverTest::Call(const csi::v1::NodeStageVolumeRequest& r) {
  csi::v1::NodeStageVolumeResponse out;
  return node_->NodeStageVolume(NewContext().get(), r, &out);
}
grpc::Status DriverTest::Call(const csi::v1::NodeUnstageVolumeRequest& r) {
  csi::v1::NodeUnstageVolumeResponse out;
  return node_->NodeUnstageVolume(NewContext().get(), r, &out);
}
grpc::Status DriverTest::Call(const csi::v1::NodePublishVolumeRequest& r) {
  csi::v1::NodePublishVolumeResponse out;
  return node_->NodePublishVolume(NewContext().get(), r, &out);
}
grpc::Status DriverTest::Call(const csi::v1::NodeUnpublishVolumeRequest& r) {
  csi::v1::NodeUnpublishVolumeResponse out;
  return node_->NodeUnpublishVolume(NewContext().get(), r, &out);
}

std::string DriverTest::CreateVolume(const std::string& name, int64_t bytes,
                                     const csi::v1::VolumeCapability& capability,
                                     const std::map<std::string, std::string>& parameters) {
  csi::v1::CreateVolumeRequest r = CreateRequest(name, bytes, capability);
  r.mutable_parameters()->insert(parameters.begin(), parameters.end());
  csi::v1::CreateVolumeResponse out;
  grpc::Status s = Call(r, &out);
  EXPECT_TRUE(s.ok()) << "CreateVolume " << name << ": " << Describe(s);
  return out.volume().volume_id();
}

std::map<std::string, std::string> DriverTest::ControllerPublish(
    const std::string& volume_id, const csi::v1::VolumeCapability& capability) {
  csi::v1::ControllerPublishVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_node_id(node_id_);
  *r.mutable_volume_capability() = capability;
  csi::v1::ControllerPublishVolumeResponse out;
  grpc::Status s = Call(r, &out);
  EXPECT_TRUE(s.ok()) << "ControllerPublishVolume: " << Describe(s);
  return {out.publish_context().begin(), out.publish_context().end()};
}

void DriverTest::Stage(const std::string& volume_id, const std::string& staging_path,
                       const csi::v1::VolumeCapability& capability,
                       const std::map<std::string, std::string>& publish_context) {
  csi::v1::NodeStageVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_staging_target_path(staging_path);
  *r.mutable_volume_capability() = capability;
  r.mutable_publish_context()->insert(publish_context.begin(), publish_context.end());
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "NodeStageVolume: " << Describe(s);
}

void DriverTest::Publish(const std::string& volume_id, const std::string& staging_path,
                         const std::string& target_path,
                         const csi::v1::VolumeCapability& capability, bool readonly) {
  csi::v1::NodePublishVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_staging_target_path(staging_path);
  r.set_target_path(target_path);
  *r.mutable_volume_capability() = capability;
  r.set_readonly(readonly);
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "NodePublishVolume: " << Describe(s);
}

void DriverTest::ControllerUnpublish(const std::string& volume_id) {
  csi::v1::ControllerUnpublishVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_node_id(node_id_);
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "ControllerUnpublishVolume: " << Describe(s);
}

void DriverTest::Unpublish(const std::string& volume_id, const std::string& target_path) {
  csi::v1::NodeUnpublishVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_target_path(target_path);
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "NodeUnpublishVolume: " << Describe(s);
}

void DriverTest::Unstage(const std::string& volume_id, const std::string& staging_path) {
  csi::v1::NodeUnstageVolumeRequest r;
  r.set_volume_id(volume_id);
  r.set_staging_target_path(staging_path);
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "NodeUnstageVolume: " << Describe(s);
}

void DriverTest::DeleteVolume(const std::string& volume_id) {
  csi::v1::DeleteVolumeRequest r;
  r.set_volume_id(volume_id);
  grpc::Status s = Call(r);
  ASSERT_TRUE(s.ok()) << "DeleteVolume: " << Describe(s);
}

std::string DriverTest::MakeDir(const std::string& name) {
  std::string path = dir_ + "/" + name;
  boost::filesystem::create_directories(path);
  return path;
}

void DriverTest::WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
  out.close();
  EXPECT_TRUE(out.good()) << "writing " << path;
}

std::string DriverTest::ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t DriverTest::FilesystemBytes(const std::string& path) {
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
}

}  // namespace driver_test
}  // namespace flexcsi
