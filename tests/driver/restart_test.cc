// The driver stops and starts again while volumes exist, are staged and are published.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;

// Whether the driver's log came to hold `text` within a bound generous for a loaded machine;
// polled fast, as the tests catch a call in the middle of its work.
bool WaitUntilLogged(const DriverProcess& driver, const std::string& text) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (driver.Log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class RestartTest : public DriverTest {};

TEST_F(RestartTest, WorkInFlightAtSigtermFinishesAndAnswers) {
  // A DaemonSet rollout sends SIGTERM whenever it likes: a NodeStage that is formatting the
  // volume must finish, answer OK, and be remembered by the next driver.
  const VolumeCapability cap = MountCapability("xfs");
  const std::string id = CreateVolume("pvc-sigterm", 512 * kMiB, cap);
  std::map<std::string, std::string> context = ControllerPublish(id, cap);
  const std::string staging = MakeDir("staging");
  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(staging);
  *stage.mutable_volume_capability() = cap;
  for (const auto& [key, value] : context) (*stage.mutable_publish_context())[key] = value;
  grpc::Status staged;
  std::thread call([&] { staged = Call(stage); });
  ASSERT_TRUE(WaitUntilLogged(*driver_, "formatting")) << driver_->Log();
  const int status = driver_->Stop();
  call.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << driver_->Log();
  ASSERT_TRUE(staged.ok()) << Describe(staged) << "\n" << driver_->Log();
  const std::vector<std::string> mounts = MountPointsBelow(test_dir());
  EXPECT_NE(std::find(mounts.begin(), mounts.end(), staging), mounts.end());

  // The next driver knows the staging: a repeat is recognised, and the unstage undoes it all.
  ASSERT_NO_FATAL_FAILURE(RestartDriver());
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

class NoStageRestartTest : public DriverTest {
 protected:
  std::vector<std::string> ExtraFlags() const override { return {"--no-stage-unstage"}; }
};

TEST_F(NoStageRestartTest, KilledPublishThenUnpublishLeavesNoDevice) {
  // Killed while NodePublish formats: the loop device is attached and no record names it. The
  // CO's pod is gone by the time the driver is back, so what comes next is the unpublish; it
  // must detach the device (the chaos suite once found one bound to the volume for good).
  const VolumeCapability cap = MountCapability("xfs");
  const std::string id = CreateVolume("pvc-killed-publish", 512 * kMiB, cap);
  std::map<std::string, std::string> context = ControllerPublish(id, cap);
  MakeDir("pods");
  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_target_path(PathIn("pods/t"));
  *publish.mutable_volume_capability() = cap;
  for (const auto& [key, value] : context) (*publish.mutable_publish_context())[key] = value;
  grpc::Status published;
  std::thread call([&] { published = Call(publish); });
  ASSERT_TRUE(WaitUntilLogged(*driver_, "formatting")) << driver_->Log();
  driver_->Kill();
  call.join();
  EXPECT_FALSE(published.ok());
  ASSERT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);  // attached, recorded nowhere

  ASSERT_NO_FATAL_FAILURE(RestartDriver());
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/t")));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  EXPECT_TRUE(MountPointsBelow(test_dir()).empty());
  ASSERT_NO_FATAL_FAILURE(ControllerUnpublish(id));
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

TEST_F(RestartTest, StateSurvivesARestart) {
  const VolumeCapability cap = MountCapability();
  const std::string id = CreateVolume("pvc-restart", 16 * kMiB, cap);
  std::map<std::string, std::string> context = ControllerPublish(id, cap);
  const std::string staging = MakeDir("staging");
  MakeDir("pods");
  const std::string target = PathIn("pods/m");
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
  WriteFile(target + "/f", "before restart");
  csi::v1::CreateSnapshotRequest snap;
  snap.set_name("snap-restart");
  snap.set_source_volume_id(id);
  csi::v1::CreateSnapshotResponse snap_out;
  ASSERT_TRUE(controller_->CreateSnapshot(NewContext().get(), snap, &snap_out).ok());

  ASSERT_NO_FATAL_FAILURE(RestartDriver());

  // Create is still idempotent by name, and returns the same volume.
  csi::v1::CreateVolumeResponse again;
  ASSERT_TRUE(Call(CreateRequest("pvc-restart", 16 * kMiB, cap), &again).ok());
  EXPECT_EQ(again.volume().volume_id(), id);
  csi::v1::ControllerGetVolumeRequest get;
  get.set_volume_id(id);
  csi::v1::ControllerGetVolumeResponse got;
  ASSERT_TRUE(controller_->ControllerGetVolume(NewContext().get(), get, &got).ok());
  ASSERT_EQ(got.status().published_node_ids_size(), 1);
  EXPECT_EQ(got.status().published_node_ids(0), node_id());
  EXPECT_FALSE(got.status().volume_condition().abnormal());
  csi::v1::ListSnapshotsRequest ls;
  ls.set_snapshot_id(snap_out.snapshot().snapshot_id());
  csi::v1::ListSnapshotsResponse ls_out;
  ASSERT_TRUE(controller_->ListSnapshots(NewContext().get(), ls, &ls_out).ok());
  EXPECT_EQ(ls_out.entries_size(), 1);

  // Repeats of node calls after the restart are recognised, not redone.
  ASSERT_NO_FATAL_FAILURE(Stage(id, staging, cap, context));
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, target, cap));
  EXPECT_EQ(ReadFile(target + "/f"), "before restart");
  EXPECT_EQ(LoopDevicesBelow(state_dir()).size(), 1u);

  // A second target after the restart, then a full teardown.
  ASSERT_NO_FATAL_FAILURE(Publish(id, staging, PathIn("pods/m2"), cap));
  EXPECT_EQ(ReadFile(PathIn("pods/m2/f")), "before restart");
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, target));
  ASSERT_NO_FATAL_FAILURE(Unpublish(id, PathIn("pods/m2")));
  ASSERT_NO_FATAL_FAILURE(Unstage(id, staging));
  EXPECT_TRUE(LoopDevicesBelow(state_dir()).empty());
  csi::v1::ControllerUnpublishVolumeRequest cu;
  cu.set_volume_id(id);
  cu.set_node_id(node_id());
  ASSERT_TRUE(Call(cu).ok());
  ASSERT_NO_FATAL_FAILURE(DeleteVolume(id));
}

TEST_F(RestartTest, NextStartReplacesCrashSocket) {
  const std::string socket = driver_->socket_path();
  const std::string id = CreateVolume("pvc-crash", 8 * kMiB, MountCapability());
  driver_->Kill();
  struct stat st;
  ASSERT_EQ(::stat(socket.c_str(), &st), 0) << "a killed driver leaves its socket";
  ASSERT_NO_FATAL_FAILURE(RestartDriver());
  csi::v1::GetPluginInfoResponse info;
  ASSERT_TRUE(
      identity_->GetPluginInfo(NewContext().get(), csi::v1::GetPluginInfoRequest(), &info).ok());
  EXPECT_EQ(info.name(), "loopback.csi.flexcsi.io");
  EXPECT_FALSE(info.vendor_version().empty());
  csi::v1::ControllerGetVolumeRequest get;
  get.set_volume_id(id);
  csi::v1::ControllerGetVolumeResponse got;
  EXPECT_TRUE(controller_->ControllerGetVolume(NewContext().get(), get, &got).ok());
}

TEST_F(RestartTest, SigtermRemovesTheSocket) {
  const std::string socket = driver_->socket_path();
  int status = driver_->Stop();
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream gone(socket);
  EXPECT_FALSE(gone.good());
}

TEST_F(RestartTest, SecondDriverOnStateDirRefused) {
  DriverProcess second(PathIn("second.sock"), state_dir(), PathIn("second.log"), {});
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.Log().find("in use"), std::string::npos) << second.Log();
}

TEST_F(RestartTest, CorruptStateRefusesStart) {
  driver_->Stop();
  { std::ofstream(state_dir() + "/state.json") << "{ broken"; }
  DriverProcess broken(PathIn("other.sock"), state_dir(), PathIn("broken.log"), {});
  EXPECT_FALSE(broken.Start());
  EXPECT_NE(broken.Log().find("DATA_LOSS"), std::string::npos) << broken.Log();
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
