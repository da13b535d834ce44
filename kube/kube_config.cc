#include "kube/kube_config.h"

namespace flexcsi::kube {

StatusOr<ClientConfig> LoadClientConfig(const ConfigFlags&) {
  return Unimplemented("kube: LoadClientConfig");
}
StatusOr<ClientConfig> LoadInClusterConfig(const std::string&) {
  return Unimplemented("kube: LoadInClusterConfig");
}

}  // namespace flexcsi::kube
