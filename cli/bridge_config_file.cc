#include "cli/bridge_config_file.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace flexcsi {

const CliDriverConfig* CliBridgeConfig::FindDriver(const std::string& flex_driver) const {
  for (const auto& d : drivers) {
    if (d.flex_driver == flex_driver) return &d;
  }
  return nullptr;
}

StatusOr<CliBridgeConfig> ParseCliBridgeConfig(const std::string& text, const std::string& path) {
  CliBridgeConfig config;
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return InvalidArgument(path + ": the bridge configuration is not a map");
    auto read = [&root](const char* key, std::string* into) {
      if (root[key] && root[key].IsScalar()) *into = root[key].as<std::string>();
    };
    read("kubeletRoot", &config.kubelet_root);
    read("socket", &config.socket);
    read("stateDatabase", &config.state_database);
    if (root["metricsAddress"]) {
      config.metrics_address =
          root["metricsAddress"].IsNull() ? "" : root["metricsAddress"].as<std::string>();
    }
    if (root["drivers"]) {
      if (!root["drivers"].IsSequence()) return InvalidArgument(path + ": drivers is not a list");
      for (const auto& d : root["drivers"]) {
        CliDriverConfig driver;
        if (!d.IsMap() || !d["flexDriver"]) {
          return InvalidArgument(path + ": a drivers entry has no flexDriver");
        }
        driver.flex_driver = d["flexDriver"].as<std::string>();
        if (d["csiEndpoint"]) driver.csi_endpoint = d["csiEndpoint"].as<std::string>();
        if (d["attach"]) driver.attach = d["attach"].as<bool>();
        if (d["rule"] && d["rule"]["csiDriver"]) {
          driver.csi_driver = d["rule"]["csiDriver"].as<std::string>();
        }
        config.drivers.push_back(std::move(driver));
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": " + e.what());
  }
  return config;
}

StatusOr<CliBridgeConfig> LoadCliBridgeConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read bridge configuration " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseCliBridgeConfig(text.str(), path);
}

std::string UnixSocketPathOfEndpoint(const std::string& endpoint) {
  const std::string prefix = "unix://";
  if (endpoint.compare(0, prefix.size(), prefix) != 0) return "";
  return endpoint.substr(prefix.size());
}

}  // namespace flexcsi
