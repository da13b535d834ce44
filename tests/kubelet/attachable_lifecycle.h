// The attachable FlexVolume life cycle of one volume used by two pods on one node, as the
// attach/detach controller and kubelet run it (flexvolume.md section 6), one step at a time so
// that tests can restart or kill things between (or during) any two calls.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tests/kubelet/kubelet_caller.h"

namespace flexcsi {
namespace kubelet {

enum class Step {
  kAttach,
  kWaitForAttach,
  kMountDevice,
  kMountPodA,
  kMountPodB,
  kUnmountPodA,
  kUnmountPodB,
  kUnmountDevice,
  kDetach,
};

const std::vector<Step>& AllSteps();
const char* StepName(Step step);
// For GoogleTest's messages about parametrised tests.
inline void PrintTo(Step step, std::ostream* os) { *os << StepName(step); }

class AttachableLifecycle {
 public:
  AttachableLifecycle(KubeletCaller* caller, FlexVolumeSource volume, PodInfo pod_a, PodInfo pod_b);

  // Runs one step with kubelet's surrounding work; remembers the device path that attach and
  // waitforattach return, as the node status and kubelet do.
  DriverResult Run(Step step);

  const std::string& device_path() const { return device_path_; }
  std::string PodDir(Step mount_step) const;
  const FlexVolumeSource& volume() const { return volume_; }

 private:
  KubeletCaller* caller_;
  FlexVolumeSource volume_;
  PodInfo pod_a_, pod_b_;
  std::string device_path_;
};

}  // namespace kubelet
}  // namespace flexcsi
