// Whether the cluster can run what `flexcsi migrate apply` makes: CSI PVs that kubelet mounts
// through a CSI 1.x driver. kubelet speaks CSI 1.0 and VolumeAttachment is storage.k8s.io/v1
// from Kubernetes 1.13 on; before that a moved PV could never be mounted again, so apply is
// refused before anything is written. Decided from the server's /version (discovery).
#pragma once

#include "common/status.h"
#include "kube/discovery.h"

namespace flexcsi::migrate {

constexpr int kFirstMinorMountingCsiPvs = 13;

// Ok, or FailedPrecondition saying why the cluster cannot take CSI PVs.
Status CheckCsiPvsMountable(const kube::ServerVersion& server);

}  // namespace flexcsi::migrate
