// Runs the real csi-loopback binary as a child process on a Unix socket in a private temp dir
// and talks CSI to it. Each test gets a fresh driver, state dir and temp dir; TearDown removes
// every mount and loop device the test produced, even when the test failed half-way, because
// loop devices are global to the machine.
//
// Tests must run inside a private mount namespace (ctest wraps them in
// `unshare -m --propagation private`); the fixture refuses to run otherwise.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "csi.grpc.pb.h"

namespace flexcsi {
namespace driver_test {

constexpr int64_t kMiB = 1024 * 1024;

// One csi-loopback process.
class DriverProcess {
 public:
  DriverProcess(std::string socket_path, std::string state_dir, std::string log_path,
                std::vector<std::string> extra_flags, std::string node_id = "node-test");
  ~DriverProcess();  // stops it

  // Starts the binary and waits until Probe answers ready (or it dies / 30 s pass).
  ::testing::AssertionResult Start();
  // SIGTERM, then waits for exit; SIGKILL if it lingers. Returns the exit status as waitpid.
  int Stop();
  // SIGKILL: no cleanup at all, as after a crash (the socket file stays behind).
  void Kill();
  bool running() const { return pid_ > 0; }
  std::string Log() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::string state_dir_;
  std::string log_path_;
  std::vector<std::string> extra_flags_;
  std::string node_id_;
  pid_t pid_ = -1;
};

// Removes everything of a test from the machine: unmounts all mounts below `dir` (deepest
// first), detaches every loop device whose backing file lies below `dir`, deletes `dir`.
void CleanUpTestDirectory(const std::string& dir);

// Loop devices whose backing file lies below `dir`.
std::vector<std::string> LoopDevicesBelow(const std::string& dir);

// Mount points below `dir`.
std::vector<std::string> MountPointsBelow(const std::string& dir);

// 0 when a new file can be created (and is removed again) in directory `dir` by this process,
// else the errno of the attempt (EROFS on a read-only mount).
int CreateFileErrno(const std::string& dir);

// Whether an unprivileged user (uid and gid 65534) whose one supplementary group is `gid` can
// create a file in `dir`: what a non-root pod with fsGroup `gid` can do there. REQUIRES: the
// directories above `dir` are searchable by others (the test dir is 0700 until chmod'ed).
bool GroupCanCreateFile(const std::string& dir, gid_t gid);

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Flags beyond --endpoint/--nodeid/--state-dir; override to test switches.
  virtual std::vector<std::string> ExtraFlags() const { return {}; }

  // Restarts the driver (same state dir, same flags); keeps mounts and loop devices. With
  // `crash`, the old process is SIGKILLed instead of stopped.
  void RestartDriver(bool crash = false);

  // ---- request builders ----
  static csi::v1::VolumeCapability MountCapability(
      const std::string& fs_type = "",
      csi::v1::VolumeCapability::AccessMode::Mode mode =
          csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  static csi::v1::VolumeCapability BlockCapability(
      csi::v1::VolumeCapability::AccessMode::Mode mode =
          csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  static csi::v1::CreateVolumeRequest CreateRequest(const std::string& name, int64_t bytes,
                                                    const csi::v1::VolumeCapability& capability);

  // ---- calls; each returns the gRPC status, filling the response ----
  grpc::Status Call(const csi::v1::CreateVolumeRequest& r, csi::v1::CreateVolumeResponse* out);
  grpc::Status Call(const csi::v1::DeleteVolumeRequest& r);
  grpc::Status Call(const csi::v1::ControllerPublishVolumeRequest& r,
                    csi::v1::ControllerPublishVolumeResponse* out);
  grpc::Status Call(const csi::v1::ControllerUnpublishVolumeRequest& r);
  grpc::Status Call(const csi::v1::NodeStageVolumeRequest& r);
  grpc::Status Call(const csi::v1::NodeUnstageVolumeRequest& r);
  grpc::Status Call(const csi::v1::NodePublishVolumeRequest& r);
  grpc::Status Call(const csi::v1::NodeUnpublishVolumeRequest& r);

  // ---- one-step helpers that assert success (use inside ASSERT_NO_FATAL_FAILURE) ----
  // Creates a volume and returns its id.
  std::string CreateVolume(const std::string& name, int64_t bytes,
                           const csi::v1::VolumeCapability& capability,
                           const std::map<std::string, std::string>& parameters = {});
  std::map<std::string, std::string> ControllerPublish(const std::string& volume_id,
                                                       const csi::v1::VolumeCapability& cap);
  void Stage(const std::string& volume_id, const std::string& staging_path,
             const csi::v1::VolumeCapability& capability,
             const std::map<std::string, std::string>& publish_context = {});
  void Publish(const std::string& volume_id, const std::string& staging_path,
               const std::string& target_path, const csi::v1::VolumeCapability& capability,
               bool readonly = false);
  void ControllerUnpublish(const std::string& volume_id);
  void Unpublish(const std::string& volume_id, const std::string& target_path);
  void Unstage(const std::string& volume_id, const std::string& staging_path);
  void DeleteVolume(const std::string& volume_id);

  // A new directory below the test dir (CO-style: staging dirs and target parents exist).
  std::string MakeDir(const std::string& name);
  std::string PathIn(const std::string& name) const { return dir_ + "/" + name; }

  static void WriteFile(const std::string& path, const std::string& content);
  static std::string ReadFile(const std::string& path);
  // statvfs total bytes of the filesystem at path.
  static int64_t FilesystemBytes(const std::string& path);

  const std::string& test_dir() const { return dir_; }
  const std::string& node_id() const { return node_id_; }
  const std::string& state_dir() const { return state_dir_; }

  std::unique_ptr<csi::v1::Identity::Stub> identity_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::unique_ptr<DriverProcess> driver_;

 private:
  void Connect();

  std::string dir_;
  std::string state_dir_;
  std::string node_id_ = "node-test";
};

// A fresh client context with a deadline, so that a hung driver fails a test instead of
// hanging the suite.
std::unique_ptr<grpc::ClientContext> NewContext();

// "INVALID_ARGUMENT: message" for failure messages.
std::string Describe(const grpc::Status& status);

}  // namespace driver_test
}  // namespace flexcsi
