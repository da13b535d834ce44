#include "controller/served_drivers.h"

#include <map>

namespace flexcsi::controller {

Status CheckOneEntryPerProvisioner(const BridgeConfig& config) {
  std::map<std::string, const DriverConfig*> by_provisioner;
  for (const DriverConfig& d : config.drivers) {
    auto [it, first] = by_provisioner.emplace(d.provisioner, &d);
    if (first) continue;
    return InvalidArgument(
        "driver entries " + it->second->flex_driver + " and " + d.flex_driver +
        " both provision for " + d.provisioner + ", so a StorageClass could not say which: give "
        "one of them another `provisioner:`, or leave the one you do not provision with (e.g. "
        "a static, legacy driver's) out of flexcsi-controller's configuration");
  }
  return Status::Ok();
}

}  // namespace flexcsi::controller
