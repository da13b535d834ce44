// flexcsi.json, the file the installer writes beside the executable (bridge-interfaces.md
// section 2). It is what lets `init` answer without the daemon, and it names the socket and
// the per-call deadlines. Nothing else is ever read from, or written to, the driver directory:
// every change there makes kubelet run `init` again.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

inline constexpr const char* kFlexexecConfigFile = "flexcsi.json";

// Deadlines flexexec waits for the bridge when flexcsi.json names none.
inline constexpr std::chrono::seconds kDefaultCallTimeout{120};
inline constexpr std::chrono::seconds kDefaultIsAttachedTimeout{30};
// kubelet kills waitforattach after 10 minutes; flexexec must give up, and answer, before that.
inline constexpr std::chrono::seconds kDefaultWaitForAttachTimeout{540};
inline constexpr std::chrono::seconds kKubeletWaitForAttachKill{600};

struct FlexexecConfig {
  // The `capabilities` object, reported by `init` as is. Every value is a boolean.
  nlohmann::json capabilities = nlohmann::json::object();
  std::string bridge_socket;
  // `timeoutSeconds`: "default" plus optional per-call entries ("isattached", ...).
  std::map<std::string, std::chrono::milliseconds> timeouts;

  // How long flexexec waits for the bridge to answer `call`.
  std::chrono::milliseconds TimeoutFor(const std::string& call) const;
};

// Parses the file's text. `path` is only used in messages. Validation is strict, because a
// mistake here shows up only as a driver that kubelet silently refuses to load.
StatusOr<FlexexecConfig> ParseFlexexecConfig(const std::string& text, const std::string& path);

// Reads `<directory>/flexcsi.json`.
StatusOr<FlexexecConfig> LoadFlexexecConfig(const std::string& directory);

}  // namespace flexcsi
