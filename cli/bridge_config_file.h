// The parts of the bridge configuration (/etc/flexcsi/bridge.yaml, bridge-interfaces.md
// section 3) that the CLI needs: where the socket, state database and kubelet root are, and
// which drivers are configured. The bridge owns the full schema and its validation; this reader
// ignores what it does not use, so the two cannot disagree on anything but these keys.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

inline constexpr const char* kDefaultBridgeConfigPath = "/etc/flexcsi/bridge.yaml";

struct CliDriverConfig {
  std::string flex_driver;   // "vendor/name"
  std::string csi_driver;    // rule.csiDriver, "" when absent
  std::string csi_endpoint;  // "unix:///..."
  bool attach = true;
};

struct CliBridgeConfig {
  std::string kubelet_root = "/var/lib/kubelet";
  std::string socket = "/run/flexcsi/bridge.sock";
  std::string state_database = "/var/lib/flexcsi/state.db";
  std::string metrics_address = "127.0.0.1:9809";
  std::vector<CliDriverConfig> drivers;

  // The entry for `flex_driver`, or nullptr.
  const CliDriverConfig* FindDriver(const std::string& flex_driver) const;
};

// Reads a YAML (or JSON, which is YAML) bridge configuration. NOT_FOUND when the file is
// missing, INVALID_ARGUMENT with the file and line when it does not parse.
StatusOr<CliBridgeConfig> LoadCliBridgeConfig(const std::string& path);
StatusOr<CliBridgeConfig> ParseCliBridgeConfig(const std::string& text, const std::string& path);

// "unix:///run/x.sock" -> "/run/x.sock"; "" for anything that is not a unix:// endpoint.
std::string UnixSocketPathOfEndpoint(const std::string& endpoint);

}  // namespace flexcsi
