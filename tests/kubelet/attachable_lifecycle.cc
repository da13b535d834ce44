#include "tests/kubelet/attachable_lifecycle.h"

namespace flexcsi {
namespace kubelet {

const std::vector<Step>& AllSteps() {
  static const std::vector<Step> steps = {
      Step::kAttach,      Step::kWaitForAttach, Step::kMountDevice,
      Step::kMountPodA,   Step::kMountPodB,     Step::kUnmountPodA,
      Step::kUnmountPodB, Step::kUnmountDevice, Step::kDetach};
  return steps;
}

const char* StepName(Step step) {
  switch (step) {
    case Step::kAttach:
      return "attach";
    case Step::kWaitForAttach:
      return "waitforattach";
    case Step::kMountDevice:
      return "mountdevice";
    case Step::kMountPodA:
      return "mount_pod_a";
    case Step::kMountPodB:
      return "mount_pod_b";
    case Step::kUnmountPodA:
      return "unmount_pod_a";
    case Step::kUnmountPodB:
      return "unmount_pod_b";
    case Step::kUnmountDevice:
      return "unmountdevice";
    case Step::kDetach:
      return "detach";
  }
  return "?";
}

AttachableLifecycle::AttachableLifecycle(KubeletCaller* caller, FlexVolumeSource volume,
                                         PodInfo pod_a, PodInfo pod_b)
    : caller_(caller),
      volume_(std::move(volume)),
      pod_a_(std::move(pod_a)),
      pod_b_(std::move(pod_b)) {}

std::string AttachableLifecycle::PodDir(Step mount_step) const {
  const bool a = mount_step == Step::kMountPodA || mount_step == Step::kUnmountPodA;
  return caller_->PodVolumeDirFor(a ? pod_a_ : pod_b_, volume_);
}

DriverResult AttachableLifecycle::Run(Step step) {
  DriverResult r;
  switch (step) {
    case Step::kAttach:
      r = caller_->Attach(volume_);
      if (r.success() && r.reply.is_object()) device_path_ = r.reply.value("device", "");
      return r;
    case Step::kWaitForAttach:
      r = caller_->WaitForAttach(device_path_, volume_);
      if (r.success() && r.reply.is_object()) {
        device_path_ = r.reply.value("device", device_path_);
      }
      return r;
    case Step::kMountDevice:
      return caller_->MountDevice(volume_, device_path_);
    case Step::kMountPodA:
      return caller_->SetUp(volume_, pod_a_);
    case Step::kMountPodB:
      return caller_->SetUp(volume_, pod_b_);
    case Step::kUnmountPodA:
      return caller_->TearDown(volume_, pod_a_);
    case Step::kUnmountPodB:
      return caller_->TearDown(volume_, pod_b_);
    case Step::kUnmountDevice:
      return caller_->UnmountDevice(volume_);
    case Step::kDetach:
      return caller_->Detach(volume_);
  }
  return r;
}

}  // namespace kubelet
}  // namespace flexcsi
