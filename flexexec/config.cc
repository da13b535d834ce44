#include "flexexec/config.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/bridge_protocol.h"

namespace flexcsi {
namespace {

Status ConfigError(const std::string& path, const std::string& what) {
  return InvalidArgument("invalid " + path + ": " + what +
                         " (the file is written by flexcsi install-driver; re-run it)");
}

}  // namespace

std::chrono::milliseconds FlexexecConfig::TimeoutFor(const std::string& call) const {
  auto it = timeouts.find(call);
  if (it != timeouts.end()) return it->second;
  if (call == "isattached") return kDefaultIsAttachedTimeout;
  if (call == "waitforattach") return kDefaultWaitForAttachTimeout;
  it = timeouts.find("default");
  return it != timeouts.end() ? it->second : kDefaultCallTimeout;
}

StatusOr<FlexexecConfig> ParseFlexexecConfig(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ConfigError(path, "not valid JSON");
  if (!j.is_object()) return ConfigError(path, "not a JSON object");

  FlexexecConfig config;
  auto caps = j.find("capabilities");
  if (caps == j.end()) return ConfigError(path, "no \"capabilities\" object");
  if (!caps->is_object()) return ConfigError(path, "\"capabilities\" is not an object");
  for (auto it = caps->begin(); it != caps->end(); ++it) {
    // kubelet rejects the whole init reply when a capability is not a JSON boolean.
    if (!it.value().is_boolean()) {
      return ConfigError(path, "capability \"" + it.key() + "\" must be true or false");
    }
  }
  config.capabilities = *caps;

  config.bridge_socket = kDefaultBridgeSocket;
  auto socket = j.find("bridgeSocket");
  if (socket != j.end()) {
    if (!socket->is_string() || socket->get<std::string>().empty() ||
        socket->get<std::string>()[0] != '/') {
      return ConfigError(path, "\"bridgeSocket\" must be an absolute path");
    }
    config.bridge_socket = socket->get<std::string>();
  }

  auto timeouts = j.find("timeoutSeconds");
  if (timeouts != j.end()) {
    if (!timeouts->is_object()) return ConfigError(path, "\"timeoutSeconds\" is not an object");
    for (auto it = timeouts->begin(); it != timeouts->end(); ++it) {
      const nlohmann::json& v = it.value();
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 ||
          v.get<double>() > 24 * 3600) {
        return ConfigError(path, "timeoutSeconds." + it.key() +
                                     " must be a number of seconds between 0 and 86400");
      }
      auto ms = std::chrono::milliseconds(static_cast<long long>(v.get<double>() * 1000));
      if (it.key() == "waitforattach" && ms >= kKubeletWaitForAttachKill) {
        return ConfigError(path,
                           "timeoutSeconds.waitforattach must stay below 600: kubelet kills "
                           "waitforattach after 10 minutes and the reply would be lost");
      }
      config.timeouts[it.key()] = ms;
    }
  }
  return config;
}

StatusOr<FlexexecConfig> LoadFlexexecConfig(const std::string& directory) {
  const std::string path = directory + "/" + kFlexexecConfigFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return FailedPrecondition("cannot read " + path + ": " + std::strerror(err) +
                              "; install the driver with flexcsi install-driver, which writes it");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseFlexexecConfig(text.str(), path);
}

}  // namespace flexcsi
