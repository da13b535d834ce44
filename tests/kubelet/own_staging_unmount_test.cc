// The last unmount of a volume behind an attach:false FlexVolume driver, where the bridge unstages
// its own staging: kubelet calls nothing more for the volume once an unmount has succeeded (and a
// retried unmount finds the pod dir gone and skips the call), so whatever is left of the staging
// is the bridge's to finish, promptly and on its own.
//
// Before issue 26 an unstage that failed there (the driver down, the staging busy) was neither
// handed to the repair backoff nor finished by the periodic reconciler: a pass found the record
// "unstaging" with its mount still there and promoted it back to staged, and it stayed so until
// the bridge restarted. Here the staging is kept busy by an open directory, deterministically.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMiB = 1024 * 1024;
// Generous: the bridge's repair backoff starts at 1 s and a loaded machine is slow.
constexpr std::chrono::seconds kRepairBound(60);

// Polls `condition` every 50 ms until it holds or `bound` has passed; whether it held.
bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds bound) {
  const auto deadline = Clock::now() + bound;
  for (;;) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// A file descriptor closed when it goes out of scope (or earlier by Close()).
class HeldOpen {
 public:
  explicit HeldOpen(const std::string& path, int flags = O_RDONLY)
      : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {}
  ~HeldOpen() { Close(); }
  bool ok() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class OwnStagingUnmountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnvOptions o;
    o.flex_attach = false;
    o.csi_controller_attach = false;
    env_ = std::make_unique<TestEnvironment>(o);
    ASSERT_TRUE(env_->Start());
    ASSERT_DRIVER_OK(env_->caller().Init());
    const std::string id = env_->CreateVolume("vol-own-unmount", 64 * kMiB, "ext4");
    ASSERT_FALSE(id.empty());
    volume_ = env_->VolumeSource("pv-own-unmount", id);
    pod_ = env_->Pod("own-unmount");
    ASSERT_DRIVER_OK(env_->caller().SetUp(volume_, pod_));
  }

  // The one staging record ("" when there is not exactly one).
  nlohmann::json OnlyStaging() const {
    nlohmann::json state = env_->BridgeState();
    if (!state.is_object() || !state.contains("stagings") || state["stagings"].size() != 1) {
      return nullptr;
    }
    return state["stagings"][0];
  }

  std::unique_ptr<TestEnvironment> env_;
  FlexVolumeSource volume_;
  PodInfo pod_;
};

TEST_F(OwnStagingUnmountTest, FailedUnstageIsRetriedByTheBridgeUntilItIsGone) {
  const nlohmann::json staged = OnlyStaging();
  ASSERT_TRUE(staged.is_object());
  const std::string staging_path = staged.value("stagingPath", "");
  // An open directory on the staging's filesystem, reached through the staging path: the pod's
  // bind mount can go, the staging mount is busy.
  HeldOpen busy(staging_path, O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(busy.ok()) << staging_path;

  const DriverResult failed = env_->caller().TearDown(volume_, pod_);
  EXPECT_FALSE(failed.success()) << "unstaging a busy staging succeeded?";
  // kubelet retries the unmount; the pod's volume is gone, so the retry succeeds, and kubelet
  // calls nothing more for this volume: the rest is the bridge's own work.
  ASSERT_DRIVER_OK(env_->caller().TearDown(volume_, pod_));
  const nlohmann::json health = env_->BridgeHealth();
  bool scheduled = false;
  for (const auto& r : health.value("failingRepairs", nlohmann::json::array())) {
    scheduled |= r.value("record", "") == "staging " + staging_path;
  }
  EXPECT_TRUE(scheduled) << "the failed unstage is not among the bridge's repairs: "
                         << health.dump();

  busy.Close();
  const bool gone = WaitFor(
      [&] {
        const nlohmann::json state = env_->BridgeState();
        return state.is_object() && state["stagings"].empty() &&
               env_->MountsUnderRoot().empty() && env_->LoopDevicesUnderRoot().empty();
      },
      kRepairBound);
  EXPECT_TRUE(gone) << "the bridge did not finish unstaging within " << kRepairBound.count()
                    << " s: " << env_->BridgeState().dump();
  ExpectNothingLeaked(*env_);
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
