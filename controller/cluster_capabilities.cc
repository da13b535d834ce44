#include "controller/cluster_capabilities.h"

namespace flexcsi::controller {
namespace {

const char* YesNo(bool b) { return b ? "yes" : "no"; }

}  // namespace

std::string ClusterCapabilities::Summary() const {
  return std::string("Kubernetes ") + version.Describe() +
         ": CSINode (storage.k8s.io/v1) " + YesNo(csinodes) +
         ", Lease (coordination.k8s.io/v1) " + YesNo(leases) +
         ", snapshot.storage.k8s.io/v1 " + YesNo(snapshots) +
         ", WaitForFirstConsumer provisioning " + YesNo(ProvisionsDelayedBinding()) +
         ", FlexVolume expansion " + YesNo(ExpandsFlexVolumes());
}

StatusOr<ClusterCapabilities> DiscoverCapabilities(kube::KubeClient& client) {
  ClusterCapabilities caps;
  auto version = kube::GetServerVersion(client);
  if (!version.ok()) return version.status().WithContext("discovery");
  caps.version = *version;
  struct Probe {
    const char* group_version;
    const char* resource;
    bool* out;
  };
  bool snapshots = false, contents = false;
  for (const Probe& p : {Probe{"storage.k8s.io/v1", "csinodes", &caps.csinodes},
                         Probe{"coordination.k8s.io/v1", "leases", &caps.leases},
                         Probe{"snapshot.storage.k8s.io/v1", "volumesnapshots", &snapshots},
                         Probe{"snapshot.storage.k8s.io/v1", "volumesnapshotcontents", &contents}}) {
    auto served = kube::ServesResource(client, p.group_version, p.resource);
    if (!served.ok()) return served.status().WithContext("discovery");
    *p.out = *served;
  }
  caps.snapshots = snapshots && contents;
  return caps;
}

}  // namespace flexcsi::controller
