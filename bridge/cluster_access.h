// The bridge's own access to the cluster: its configuration's kubeconfig, else the in-cluster
// configuration when it runs in a pod. Node registration and the rules' Secret reads use it.
#pragma once

#include <memory>
#include <string>

#include "bridge/bridge_config.h"
#include "kube/kube_client.h"

namespace flexcsi {

struct ClusterAccess {
  std::unique_ptr<kube::KubeClient> client;  // null: none, for the reason why_not
  std::string why_not;
};
ClusterAccess ResolveClusterAccess(const BridgeConfig& config);

}  // namespace flexcsi
