// The scenario matrix of issue #8: every CSI driver shape csi-loopback imitates x attachable and
// non-attachable FlexVolume drivers x four pods that differ (read-write with fsGroup, read-only,
// another fsGroup, no fsGroup) x a PVC resize (during mount or online) x a bridge restart and a
// repeated call at one step per cell. Dimensions are combined per cell instead of multiplied, so
// that every value of every dimension is met in a few cells (see kCells).
//
// The caller follows kubelet's rules (kubelet_caller.h): waitforattach for every pod,
// mountdevice only when the device mount path is not a mount point, unmountdevice only when it
// is one and after the GetDeviceMountRefs check, fsGroup ownership after mount, rmdir after
// teardown. A PVC resize is what a real cluster does: kube-controller-manager never runs
// expandvolume for FlexVolume, it only raises the PV's capacity; kubelet then calls expandfs.
// Afterwards nothing may be left: no mounts, no loop devices, no bridge records, nothing staged
// or published in csi-loopback.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <optional>

#include "tests/kubelet/attachable_lifecycle.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// xfs (its minimum is 300 MiB) grows online without CAP_SYS_RESOURCE, which CI lacks.
constexpr int64_t kOldBytes = 320 * kMiB;
constexpr int64_t kNewBytes = 480 * kMiB;

enum class Resize { kDuringMount, kOnline };

struct Cell {
  const char* name;
  EnvOptions env;
  bool ro_first;   // the read-only pod mounts first (its mountdevice carries "ro")
  Resize resize;   // pending before the pods mount, or of the mounted volume
  int disrupt_at;  // step index (modulo the step count) to restart the bridge before and repeat
  bool node_only;  // no controller for the bridge: flexcsi-controller grows the volume
};

EnvOptions Shape(bool flex_attach, bool csi_attach, bool stage, bool stage_without_mount,
                 bool mount_group) {
  EnvOptions o;
  o.flex_attach = flex_attach;
  o.csi_controller_attach = csi_attach;
  o.csi_stage_unstage = stage;
  o.csi_stage_without_mount = stage_without_mount;
  o.csi_volume_mount_group = mount_group;
  return o;
}

EnvOptions NodeOnly(EnvOptions o) {
  o.controller_endpoint = "none";
  return o;
}

// Shape(flex attach, csi attach, stage, stage without mount, volume mount group)
const Cell kCells[] = {
    {"MountAtt", Shape(true, true, true, false, true), false, Resize::kOnline, 4, false},
    {"MountNonAtt", Shape(false, false, true, false, true), true, Resize::kDuringMount, 2, false},
    {"RecordAtt", Shape(true, true, true, true, true), true, Resize::kDuringMount, 3, false},
    {"RecordNonAtt", Shape(false, false, true, true, true), false, Resize::kOnline, 5, false},
    {"NoStageAtt", Shape(true, true, false, false, true), false, Resize::kDuringMount, 7, false},
    {"NoStageNonAtt", Shape(false, false, false, false, true), true, Resize::kDuringMount, 6,
     false},
    {"NoGroupAtt", Shape(true, true, true, false, false), true, Resize::kDuringMount, 11, false},
    {"NoGroupRecNonAtt", Shape(false, false, true, true, false), false, Resize::kOnline, 9, false},
    {"RecordNoCsiAtt", Shape(true, false, true, true, true), false, Resize::kDuringMount, 13,
     false},
    {"NodeOnlyAtt", NodeOnly(Shape(true, true, true, false, true)), true, Resize::kOnline, 10,
     true},
};

// A step that had nothing to call (kubelet skipped it, or a check of the test's own).
DriverResult Done() {
  DriverResult r;
  r.outcome = DriverResult::Outcome::kSuccess;
  return r;
}

// For GoogleTest's messages: the cell's name instead of its bytes.
void PrintTo(const Cell& cell, std::ostream* os) { *os << cell.name; }

struct PodUse {
  PodInfo pod;
  bool read_only = false;
};

struct NamedStep {
  std::string name;
  std::function<DriverResult()> run;     // with kubelet's surrounding work
  std::function<DriverResult()> repeat;  // the same driver call again, without kubelet's checks
};

class ShapeTest : public ::testing::TestWithParam<Cell> {
 protected:
  void SetUp() override {
    env_ = std::make_unique<TestEnvironment>(GetParam().env);
    ASSERT_TRUE(env_->Start());
    ASSERT_DRIVER_OK(env_->caller().Init());
    ASSERT_EQ(GetParam().env.flex_attach, env_->caller().CapabilityAttach());
  }

  KubeletCaller& caller() { return env_->caller(); }

  FlexVolumeSource SourceFor(const PodUse& use) const {
    FlexVolumeSource v = volume_;
    v.read_only = use.read_only;  // kubernetes.io/readwrite comes from the pod's claim
    return v;
  }

  // kubelet's SetUp plus what a pod would see right after it.
  DriverResult MountPod(const PodUse& use) {
    FlexVolumeSource v = SourceFor(use);
    DriverResult r = env_->caller().SetUp(v, use.pod);
    if (!r.success()) return r;
    const std::string dir = env_->caller().PodVolumeDirFor(use.pod, v);
    EXPECT_TRUE(IsLikelyMountPoint(dir)) << dir;
    struct stat st {};
    if (use.pod.fs_group && !use.read_only && ::stat(dir.c_str(), &st) == 0) {
      EXPECT_EQ(static_cast<gid_t>(*use.pod.fs_group), st.st_gid)
          << use.pod.name << ": the volume root is not group-owned by the pod's fsGroup";
    }
    return r;
  }

  // The resize as kube-controller-manager leaves it: only the PV's capacity has grown. With no
  // controller reachable from the bridge, flexcsi-controller grows the volume cluster-side.
  DriverResult ExpandFs(const FlexVolumeSource& v, const std::string& path) {
    if (GetParam().node_only && !controller_grown_) {
      EXPECT_TRUE(env_->ControllerExpand(volume_id_, kNewBytes));
      controller_grown_ = true;
    }
    return env_->caller().ExpandFs(v, device_path_, path, kNewBytes, kOldBytes);
  }

  std::vector<NamedStep> Steps() {
    std::vector<NamedStep> steps;
    const bool attachable = GetParam().env.flex_attach;
    const bool during_mount = GetParam().resize == Resize::kDuringMount;
    auto pending = std::make_shared<bool>(during_mount);
    if (attachable) {
      steps.push_back({"attach",
                       [&] {
                         DriverResult r = caller().Attach(volume_);
                         if (r.success()) device_path_ = r.reply.value("device", "");
                         return r;
                       },
                       [&] { return caller().Attach(volume_); }});
    }
    for (const PodUse& use : pods_) {
      const FlexVolumeSource v = SourceFor(use);
      const std::string dir = caller().PodVolumeDirFor(use.pod, v);
      const std::string dmp = caller().DeviceMountPathFor(v);
      if (attachable) {
        steps.push_back({"waitforattach " + use.pod.name,
                         [&, v] { return caller().WaitForAttach(device_path_, v); },
                         [&, v] { return caller().WaitForAttach(device_path_, v); }});
        steps.push_back(
            {"mountdevice " + use.pod.name,
             [&, v] { return caller().MountDevice(v, device_path_); },
             [&, v, dmp] {
               return caller().Exec({"mountdevice", dmp, device_path_, BaseOptionsJson(v)});
             }});
        // expandVolumeDuringMount: right after MountDevice, with the device mount path, unless
        // the pod's claim is read-only (kubelet only warns then).
        if (during_mount && !use.read_only) {
          steps.push_back({"expandfs after mountdevice " + use.pod.name,
                           [&, v, dmp, pending] {
                             if (!*pending) return Done();
                             DriverResult r = ExpandFs(v, dmp);
                             if (r.success()) *pending = false;
                             return r;
                           },
                           [&, v, dmp] { return ExpandFs(v, dmp); }});
        }
      }
      steps.push_back({"mount " + use.pod.name, [&, use] { return MountPod(use); },
                       [&, v, use, dir] {
                         return caller().Exec({"mount", dir, MountOptionsJson(v, use.pod)});
                       }});
      if (!attachable && during_mount && !use.read_only) {
        steps.push_back({"expandfs after mount " + use.pod.name,
                         [&, v, dir, pending] {
                           if (!*pending) return Done();
                           DriverResult r = ExpandFs(v, dir);
                           if (r.success()) *pending = false;
                           return r;
                         },
                         [&, v, dir] { return ExpandFs(v, dir); }});
      }
    }
    if (!during_mount) {
      // The in-use resize: kubelet passes a read-write pod's volume dir.
      const PodUse& rw = pods_[0].read_only ? pods_[1] : pods_[0];
      const FlexVolumeSource v = SourceFor(rw);
      const std::string dir = caller().PodVolumeDirFor(rw.pod, v);
      steps.push_back({"expandfs online", [&, v, dir] { return ExpandFs(v, dir); },
                       [&, v, dir] { return ExpandFs(v, dir); }});
    }
    steps.push_back({"check pods", [&] { return CheckPods(); }, [&] { return CheckPods(); }});
    for (const PodUse& use : pods_) {
      const FlexVolumeSource v = SourceFor(use);
      const std::string dir = caller().PodVolumeDirFor(use.pod, v);
      steps.push_back({"unmount " + use.pod.name,
                       [&, v, use] { return caller().TearDown(v, use.pod); },
                       [&, dir] {
                         return caller().Exec({"unmount", dir});
                       }});
    }
    if (attachable) {
      const std::string dmp = caller().DeviceMountPathFor(volume_);
      steps.push_back({"unmountdevice", [&] { return caller().UnmountDevice(volume_); },
                       [&, dmp] {
                         return caller().Exec({"unmountdevice", dmp});
                       }});
      steps.push_back({"detach", [&] { return caller().Detach(volume_); },
                       [&] { return caller().Detach(volume_); }});
    }
    return steps;
  }

  // Every pod sees the same grown filesystem; the read-only one cannot write.
  DriverResult CheckPods() {
    KubeletCaller& k = env_->caller();
    const std::string writer =
        k.PodVolumeDirFor(pods_[0].read_only ? pods_[1].pod : pods_[0].pod, volume_);
    EXPECT_TRUE(WriteTextFile(writer + "/shared", "from a writer"));
    for (const PodUse& use : pods_) {
      const std::string dir = k.PodVolumeDirFor(use.pod, volume_);
      EXPECT_TRUE(IsLikelyMountPoint(dir)) << dir;
      EXPECT_EQ("from a writer", ReadTextFile(dir + "/shared")) << use.pod.name;
      // xfs keeps its log out of statvfs' total: 480 MiB shows as about 416 MiB, 320 as 256.
      EXPECT_GT(TotalBytes(dir), static_cast<uint64_t>(kOldBytes + 64 * kMiB))
          << use.pod.name << ": the filesystem did not grow";
      if (use.read_only) {
        int fd = ::open((dir + "/nope").c_str(), O_WRONLY | O_CREAT, 0644);
        const int err = errno;
        if (fd >= 0) ::close(fd);
        EXPECT_EQ(-1, fd) << use.pod.name << " is read-only";
        EXPECT_EQ(EROFS, err) << strerror(err);
      }
    }
    if (GetParam().env.flex_attach) {
      // Every driver shape leaves a mount point there, or kubelet never calls unmountdevice.
      EXPECT_TRUE(IsLikelyMountPoint(k.DeviceMountPathFor(volume_)));
    }
    EXPECT_EQ("", env_->RecordsVersusMountTable());
    return Done();
  }

  std::unique_ptr<TestEnvironment> env_;
  std::string volume_id_;
  FlexVolumeSource volume_;
  std::vector<PodUse> pods_;
  std::string device_path_;
  bool controller_grown_ = false;
};

TEST_P(ShapeTest, Lifecycle) {
  const Cell& cell = GetParam();
  volume_id_ = env_->CreateVolume(std::string("vol-") + cell.name, kOldBytes, "xfs");
  ASSERT_FALSE(volume_id_.empty());
  volume_ = env_->VolumeSource("pv-matrix", volume_id_);
  volume_.fs_type = "xfs";
  PodUse rw_group{env_->Pod("rw-group"), false}, ro{env_->Pod("read-only"), true};
  PodUse other_group{env_->Pod("other-group"), false}, no_group{env_->Pod("no-group"), false};
  rw_group.pod.fs_group = 2000;
  other_group.pod.fs_group = 3000;
  pods_ = cell.ro_first ? std::vector<PodUse>{ro, rw_group, other_group, no_group}
                        : std::vector<PodUse>{rw_group, ro, other_group, no_group};

  const std::vector<NamedStep> steps = Steps();
  const size_t disrupt = static_cast<size_t>(cell.disrupt_at) % steps.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i == disrupt) {
      ASSERT_TRUE(env_->RestartBridge(SIGKILL)) << "before " << steps[i].name;
    }
    ASSERT_DRIVER_OK(steps[i].run()) << steps[i].name;
    if (i == disrupt) {
      ASSERT_DRIVER_OK(steps[i].repeat()) << "repeated " << steps[i].name;
    }
  }
  for (const PodUse& use : pods_) {
    const std::string dir = env_->caller().PodVolumeDirFor(use.pod, volume_);
    EXPECT_NE(0, ::access(dir.c_str(), F_OK)) << dir << " is left";
  }
  EXPECT_NE(0, ::access(env_->caller().DeviceMountPathFor(volume_).c_str(), F_OK));
  ExpectNothingLeaked(*env_);
}

// Failure 2 of issue #8 on its own: a driver whose NodeStageVolume mounts nothing (or that has no
// STAGE_UNSTAGE) must still leave a mount point at kubelet's device mount path; otherwise kubelet
// skips unmountdevice and the volume stays staged in the bridge and in the driver.
class DeviceMountPathTest : public ::testing::TestWithParam<bool> {};  // true: record-only

TEST_P(DeviceMountPathTest, UnmountDeviceIsCalled) {
  EnvOptions options;
  options.csi_stage_without_mount = GetParam();
  options.csi_stage_unstage = GetParam();
  TestEnvironment env(options);
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  const std::string id = env.CreateVolume("vol-dmp", 64 * kMiB, "ext4");
  ASSERT_FALSE(id.empty());
  AttachableLifecycle life(&env.caller(), env.VolumeSource("pv-dmp", id), env.Pod("dmp-0"),
                           env.Pod("dmp-1"));
  for (Step s : {Step::kAttach, Step::kWaitForAttach, Step::kMountDevice}) {
    ASSERT_DRIVER_OK(life.Run(s)) << StepName(s);
  }
  EXPECT_TRUE(IsLikelyMountPoint(env.caller().DeviceMountPathFor(life.volume())));
  for (Step s : {Step::kMountPodA, Step::kMountPodB}) ASSERT_DRIVER_OK(life.Run(s)) << StepName(s);
  ASSERT_TRUE(WriteTextFile(life.PodDir(Step::kMountPodA) + "/f", "shared"));
  EXPECT_EQ("shared", ReadTextFile(life.PodDir(Step::kMountPodB) + "/f"));
  EXPECT_EQ("", env.RecordsVersusMountTable());
  for (Step s : {Step::kUnmountPodA, Step::kUnmountPodB}) {
    ASSERT_DRIVER_OK(life.Run(s)) << StepName(s);
  }
  DriverResult unmounted = life.Run(Step::kUnmountDevice);
  ASSERT_DRIVER_OK(unmounted);
  EXPECT_TRUE(unmounted.called) << "kubelet skipped unmountdevice: nothing mounted there";
  ASSERT_DRIVER_OK(life.Run(Step::kDetach));
  ExpectNothingLeaked(env);
}

INSTANTIATE_TEST_SUITE_P(Shape, DeviceMountPathTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "RecordOnly" : "NoStage");
                         });

INSTANTIATE_TEST_SUITE_P(Matrix, ShapeTest, ::testing::ValuesIn(kCells),
                         [](const ::testing::TestParamInfo<Cell>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
