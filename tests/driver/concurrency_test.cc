// Many volumes living at once: loop devices are global and numbered, so one volume's detach and
// another's attach race for the same device numbers, and the driver's child processes (losetup,
// blkid, mkfs) run side by side. Every lifecycle must succeed as it does serially.
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "common/mount_table.h"
#include "tests/driver/driver_harness.h"

namespace flexcsi {
namespace driver_test {
namespace {

using csi::v1::VolumeCapability;

class ConcurrencyTest : public DriverTest {};

TEST_F(ConcurrencyTest, ManyVolumesAtOnce) {
  constexpr int kVolumes = 6;
  constexpr auto kDuration = std::chrono::seconds(6);
  const VolumeCapability cap =
      MountCapability("ext4", VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER);

  struct Volume {
    std::string id;
    std::string staging;
    std::string target1;
    std::string target2;
  };
  std::vector<Volume> volumes;
  for (int v = 0; v < kVolumes; ++v) {
    const std::string name = "vol" + std::to_string(v);
    Volume volume;
    ASSERT_NO_FATAL_FAILURE(volume.id = CreateVolume("pvc-churn-" + name, 16 * kMiB, cap));
    volume.staging = PathIn(name + "/staging");
    volume.target1 = PathIn(name + "/pods/a/mount");
    volume.target2 = PathIn(name + "/pods/b/mount");
    MakeDir(name + "/pods/a");
    MakeDir(name + "/pods/b");
    volumes.push_back(volume);
  }

  // Failures are collected, not asserted, in the workers: an ASSERT there would only end its own
  // thread. A worker stops at its first failure, leaving the rest to TearDown.
  std::mutex failures_mu;
  std::vector<std::string> failures;
  std::atomic<int> lifecycles{0};
  const auto deadline = std::chrono::steady_clock::now() + kDuration;

  auto live = [&](int v) {
    const Volume& volume = volumes[v];
    auto fail = [&](const std::string& what) {
      std::lock_guard<std::mutex> lock(failures_mu);
      failures.push_back("volume " + std::to_string(v) + " (" + volume.id + "): " + what);
    };
    auto check = [&](const char* rpc, const grpc::Status& s) {
      if (!s.ok()) fail(std::string(rpc) + ": " + Describe(s));
      return s.ok();
    };
    std::string last_written;
    for (int round = 0; std::chrono::steady_clock::now() < deadline; ++round) {
      // CO style: the staging directory exists before NodeStage and is removed after
      // NodeUnstage, which fails with EBUSY if anything is left mounted there.
      if (::mkdir(volume.staging.c_str(), 0750) != 0) {
        return fail("mkdir " + volume.staging + ": " + strerror(errno));
      }
      csi::v1::NodeStageVolumeRequest stage;
      stage.set_volume_id(volume.id);
      stage.set_staging_target_path(volume.staging);
      *stage.mutable_volume_capability() = cap;
      if (!check("NodeStageVolume", Call(stage))) return;

      for (const std::string& target : {volume.target1, volume.target2}) {
        csi::v1::NodePublishVolumeRequest publish;
        publish.set_volume_id(volume.id);
        publish.set_staging_target_path(volume.staging);
        publish.set_target_path(target);
        *publish.mutable_volume_capability() = cap;
        if (!check("NodePublishVolume", Call(publish))) return;
      }
      // The volume's own data, never another volume's: what the last round wrote is still
      // there, and a write through one target is read back through the other.
      if (!last_written.empty() && ReadFile(volume.target2 + "/data.txt") != last_written) {
        return fail("round " + std::to_string(round) + ": data.txt is '" +
                    ReadFile(volume.target2 + "/data.txt") + "', expected '" + last_written + "'");
      }
      const std::string content = volume.id + " round " + std::to_string(round);
      WriteFile(volume.target1 + "/data.txt", content);
      if (ReadFile(volume.target2 + "/data.txt") != content) {
        return fail("round " + std::to_string(round) + ": target 2 does not show target 1");
      }
      last_written = content;

      for (const std::string& target : {volume.target1, volume.target2}) {
        csi::v1::NodeUnpublishVolumeRequest unpublish;
        unpublish.set_volume_id(volume.id);
        unpublish.set_target_path(target);
        if (!check("NodeUnpublishVolume", Call(unpublish))) return;
      }
      csi::v1::NodeUnstageVolumeRequest unstage;
      unstage.set_volume_id(volume.id);
      unstage.set_staging_target_path(volume.staging);
      if (!check("NodeUnstageVolume", Call(unstage))) return;
      if (::rmdir(volume.staging.c_str()) != 0) {
        return fail("rmdir " + volume.staging + " after NodeUnstageVolume: " + strerror(errno));
      }
      ++lifecycles;
    }
  };

  std::vector<std::thread> workers;
  for (int v = 0; v < kVolumes; ++v) workers.emplace_back(live, v);
  for (std::thread& worker : workers) worker.join();

  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  EXPECT_GE(lifecycles.load(), kVolumes) << "every volume completes at least one lifecycle";
  std::cerr << lifecycles.load() << " lifecycles of " << kVolumes << " volumes\n";

  if (failures.empty()) {
    for (const Volume& volume : volumes) {
      EXPECT_FALSE(IsMountPoint(volume.staging)) << volume.staging;
      EXPECT_FALSE(IsMountPoint(volume.target1)) << volume.target1;
      EXPECT_FALSE(IsMountPoint(volume.target2)) << volume.target2;
    }
    std::string test_dir = PathIn("");
    test_dir.pop_back();
    EXPECT_TRUE(LoopDevicesBelow(test_dir).empty()) << "loop devices left attached";
  }
}

}  // namespace
}  // namespace driver_test
}  // namespace flexcsi
