// A driver entry as the bridge loads it, for the controller's unit tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"

namespace flexcsi::controller {

inline BridgeConfig TestBridgeConfig(nlohmann::json rule = {
                                         {"csiDriver", "loopback.csi.flexcsi.io"},
                                         {"volumeHandle", {{"fromOption", "volumeID"}}},
                                         {"defaultFsType", "ext4"}}) {
  nlohmann::json j = {{"drivers",
                       {{{"flexDriver", "flexcsi/loopback"},
                         {"csiEndpoint", "unix:///run/csi.sock"},
                         {"rule", rule}}}}};
  auto config = BridgeConfig::FromJson(j);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return *config;
}

}  // namespace flexcsi::controller
