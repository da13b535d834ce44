// PVC resize as a real cluster drives it (issue #8, failures 3 and 4). kube-controller-manager
// never calls expandvolume for a FlexVolume PV: its expand controller answers with a no-op
// expander, raises the PV's capacity and leaves the rest to kubelet's expandfs. So expandfs must
// grow the volume itself where the node reaches the driver's controller service, or say clearly
// that flexcsi-controller must; and a read-only pod's path must never make it fail.
#include <string>

#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// xfs grows online without CAP_SYS_RESOURCE; its minimum size is 300 MiB.
constexpr int64_t kOldBytes = 320 * kMiB;
constexpr int64_t kNewBytes = 480 * kMiB;

class ExpandFsTest : public ::testing::Test {
 protected:
  void StartWith(EnvOptions options) {
    env_ = std::make_unique<TestEnvironment>(options);
    ASSERT_TRUE(env_->Start());
    ASSERT_DRIVER_OK(env_->caller().Init());
    volume_id_ = env_->CreateVolume("vol-resize", kOldBytes, "xfs");
    ASSERT_FALSE(volume_id_.empty());
    volume_ = env_->VolumeSource("pv-resize", volume_id_);
    volume_.fs_type = "xfs";
  }

  // attach, waitforattach, mountdevice and mount of `pod` (read-only claim if `read_only`).
  void MountPod(const PodInfo& pod, bool read_only) {
    FlexVolumeSource v = volume_;
    v.read_only = read_only;
    AttachableLifecycle life(&env_->caller(), v, pod, pod);
    if (device_path_.empty()) {
      ASSERT_DRIVER_OK(life.Run(Step::kAttach));
      device_path_ = life.device_path();
    }
    ASSERT_DRIVER_OK(env_->caller().WaitForAttach(device_path_, v));
    ASSERT_DRIVER_OK(env_->caller().MountDevice(v, device_path_));
    ASSERT_DRIVER_OK(env_->caller().SetUp(v, pod));
  }

  void TearDownAll(const std::vector<PodInfo>& pods) {
    for (const PodInfo& pod : pods) EXPECT_DRIVER_OK(env_->caller().TearDown(volume_, pod));
    EXPECT_DRIVER_OK(env_->caller().UnmountDevice(volume_));
    EXPECT_DRIVER_OK(env_->caller().Detach(volume_));
    ExpectNothingLeaked(*env_);
  }

  DriverResult ExpandFs(const std::string& path) {
    return env_->caller().ExpandFs(volume_, device_path_, path, kNewBytes, kOldBytes);
  }

  std::unique_ptr<TestEnvironment> env_;
  std::string volume_id_;
  FlexVolumeSource volume_;
  std::string device_path_;
};

// Failure 3: without any expandvolume, kubelet's expandfs alone grows volume and filesystem.
TEST_F(ExpandFsTest, GrowsVolumeWithoutExpandVolume) {
  StartWith(EnvOptions{});
  const PodInfo pod = env_->Pod("resize-0");
  MountPod(pod, false);
  const std::string dir = env_->caller().PodVolumeDirFor(pod, volume_);
  const uint64_t before = TotalBytes(dir);
  ASSERT_DRIVER_OK(ExpandFs(dir));
  EXPECT_GT(TotalBytes(dir), before + 64 * kMiB);
  // Repeated (kubelet retries until it has recorded the new size): still fine.
  ASSERT_DRIVER_OK(ExpandFs(dir));
  TearDownAll({pod});
}

// Failure 3, node-only deployment: the bridge reaches no controller service. expandfs says who
// must grow the volume, and succeeds once flexcsi-controller (here: a direct
// ControllerExpandVolume) has done so.
TEST_F(ExpandFsTest, NodeOnlyNamesFlexcsiController) {
  EnvOptions options;
  options.controller_endpoint = "none";
  StartWith(options);
  const PodInfo pod = env_->Pod("resize-1");
  MountPod(pod, false);
  const std::string dir = env_->caller().PodVolumeDirFor(pod, volume_);
  const uint64_t before = TotalBytes(dir);
  DriverResult refused = ExpandFs(dir);
  ASSERT_FALSE(refused.success());
  EXPECT_NE(std::string::npos, refused.error.find("flexcsi-controller")) << refused.error;
  EXPECT_EQ(before, TotalBytes(dir));
  ASSERT_TRUE(env_->ControllerExpand(volume_id_, kNewBytes));
  ASSERT_DRIVER_OK(ExpandFs(dir));
  EXPECT_GT(TotalBytes(dir), before + 64 * kMiB);
  TearDownAll({pod});
}

// A driver that cannot grow volumes at all gets a clear Failure, not a "Not supported" that
// would make kubelet run resize2fs on the bridge's device token. expandvolume keeps answering
// "Not supported" (kubelet's default is harmless there).
TEST_F(ExpandFsTest, DriverWithoutExpansionFailsClearly) {
  EnvOptions options;
  options.csi_expand = false;
  StartWith(options);
  const PodInfo pod = env_->Pod("resize-2");
  MountPod(pod, false);
  const std::string dir = env_->caller().PodVolumeDirFor(pod, volume_);
  DriverResult refused = ExpandFs(dir);
  ASSERT_EQ(DriverResult::Outcome::kFailure, refused.outcome) << refused.Describe();
  EXPECT_NE(std::string::npos, refused.error.find("cannot expand volumes")) << refused.error;
  DriverResult ev = env_->caller().ExpandVolume(volume_, kNewBytes, kOldBytes);
  EXPECT_EQ(DriverResult::Outcome::kNotSupported, ev.outcome) << ev.Describe();
  TearDownAll({pod});
}

// Failure 4: a read-only pod's volume dir handed to expandfs (an old kube-controller-manager
// path that does call expandvolume first, then kubelet with the read-only pod's dir) grows the
// filesystem through a read-write path instead of failing with a read-only file system.
TEST_F(ExpandFsTest, ReadOnlyPodPathGrowsThroughWritablePath) {
  StartWith(EnvOptions{});
  const PodInfo writer = env_->Pod("resize-rw"), reader = env_->Pod("resize-ro");
  MountPod(writer, false);
  MountPod(reader, true);
  const std::string ro_dir = env_->caller().PodVolumeDirFor(reader, volume_);
  const uint64_t before = TotalBytes(ro_dir);
  ASSERT_DRIVER_OK(env_->caller().ExpandVolume(volume_, kNewBytes, kOldBytes));
  ASSERT_DRIVER_OK(ExpandFs(ro_dir));
  EXPECT_GT(TotalBytes(ro_dir), before + 64 * kMiB);
  EXPECT_GT(TotalBytes(env_->caller().PodVolumeDirFor(writer, volume_)), before + 64 * kMiB);
  TearDownAll({writer, reader});
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
