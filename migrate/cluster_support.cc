#include "migrate/cluster_support.h"

#include <string>

namespace flexcsi::migrate {

Status CheckCsiPvsMountable(const kube::ServerVersion& server) {
  if (server.AtLeast(1, kFirstMinorMountingCsiPvs)) return Status::Ok();
  const std::string version =
      server.git_version.empty()
          ? std::to_string(server.major) + "." + std::to_string(server.minor)
          : server.git_version;
  return FailedPrecondition(
      "this cluster runs Kubernetes " + version +
      ": its kubelet cannot mount CSI PVs from today's CSI drivers (kubelet speaks CSI 1.x "
      "and VolumeAttachment is storage.k8s.io/v1 from 1.13; CSINode comes with 1.14), so a "
      "moved volume could not be mounted again. Nothing was written. Keep the FlexVolume PVs "
      "(flexcsi-bridge serves them through the CSI driver) and migrate after upgrading the "
      "cluster to 1.13 or later.");
}

}  // namespace flexcsi::migrate
