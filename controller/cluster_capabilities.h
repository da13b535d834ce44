// ClusterCapabilities: what the API server flexcsi-controller talks to serves, and which
// Kubernetes version it is, found once at start through discovery (kube/discovery.h). The
// controller asks here instead of meeting a 404 on a watch or a 422 on a write, and refuses what
// the cluster's own components cannot do (a claim they would never finish, an expansion kubelet
// never completes) once, with an event, instead of leaving the user to wonder.
//
// Served APIs are probed; behaviour of the cluster's components (scheduler, kubelet) has no API
// to probe and is judged by the version, from reading each version's code:
//   - WaitForFirstConsumer provisioning: the scheduler names a selected node from 1.11 on. In
//     1.10 (VolumeScheduling beta, on by default) the PV controller only emits
//     WaitForFirstConsumer and never asks a provisioner, and the scheduler's volume binder only
//     matches existing PVs ("didn't find available persistent volumes to bind").
//   - FlexVolume PV expansion: from 1.13 (kube-controller-manager's FlexVolume expander and
//     kubelet's expandfs call); before, the claim's request is immutable unless the alpha
//     ExpandPersistentVolumes gate is on, and even then nothing grows a FlexVolume's file system.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/discovery.h"
#include "kube/kube_client.h"

namespace flexcsi::controller {

struct ClusterCapabilities {
  kube::ServerVersion version;  // unknown (major 0) counts as current
  bool csinodes = true;         // storage.k8s.io/v1 csinodes (1.17+); without: node labels only
  bool leases = true;           // coordination.k8s.io/v1 leases (1.14+); without: ConfigMap lock
  bool snapshots = false;       // snapshot.storage.k8s.io/v1 volumesnapshots and contents

  bool ProvisionsDelayedBinding() const { return version.AtLeast(1, 11); }
  bool ExpandsFlexVolumes() const { return version.AtLeast(1, 13); }
  // One log line: "Kubernetes v1.10.6: CSINode no, Lease no, snapshot.storage.k8s.io/v1 no, ...".
  std::string Summary() const;
};

// /version and the APIResourceLists of the group versions the controller uses. A group the
// server does not serve is an answer (false), not an error; an unreachable server or missing
// discovery permission is.
StatusOr<ClusterCapabilities> DiscoverCapabilities(kube::KubeClient& client);

}  // namespace flexcsi::controller
