#include "bridge/cluster_access.h"

#include <cstdlib>

#include "kube/kube_config.h"

namespace flexcsi {

ClusterAccess ResolveClusterAccess(const BridgeConfig& config) {
  ClusterAccess access;
  StatusOr<kube::ClientConfig> client_config = Unavailable("");
  if (!config.kubeconfig.empty()) {
    kube::ConfigFlags flags;
    flags.kubeconfig = config.kubeconfig;
    client_config = kube::LoadClientConfig(flags);
  } else if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    client_config = kube::LoadInClusterConfig();
  } else {
    access.why_not =
        "no cluster access: no kubeconfig in the configuration and not running in a pod";
    return access;
  }
  if (client_config.ok()) {
    client_config->user_agent = "flexcsi-bridge";
    auto client = kube::KubeClient::Create(*client_config);
    if (client.ok()) {
      access.client = std::move(*client);
      return access;
    }
    client_config = client.status();
  }
  access.why_not = "cannot reach the cluster: " + client_config.status().ToString();
  return access;
}

}  // namespace flexcsi
