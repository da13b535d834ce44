// Exec credential plugins (users[].user.exec): runs the plugin as client-go does, parses the
// ExecCredential it prints, and caches it until it expires or the server rejects it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "common/status.h"
#include "kube/kube_config.h"

namespace flexcsi::kube {

struct ExecCredential {
  std::string token;  // secret
  std::string client_cert_pem;
  std::string client_key_pem;  // secret
  std::optional<std::chrono::system_clock::time_point> expiry;
  uint64_t generation = 0;  // which run of the plugin produced it
};

// Parses an RFC 3339 timestamp ("2026-11-23T16:00:00Z", fractions and offsets allowed).
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text);

// The ExecCredential JSON a plugin receives in KUBERNETES_EXEC_INFO.
std::string ExecInfoJson(const ExecPluginConfig& plugin, const ClientConfig& cluster);

// Turns a plugin's stdout into a credential, with client-go's checks (apiVersion must match the
// configuration, a status with a token or a certificate and key pair).
StatusOr<ExecCredential> ParseExecCredential(const std::string& stdout_text,
                                             const std::string& expected_api_version);

// Thread-safe. The plugin runs under the provider's mutex, so concurrent callers wait for one run
// instead of starting several.
class ExecCredentialProvider {
 public:
  ExecCredentialProvider(ExecPluginConfig plugin, ClientConfig cluster,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // The cached credential while it has not expired, else a fresh one from the plugin.
  StatusOr<ExecCredential> Get();

  // The server answered 401 to a request made with `generation`'s credential: forget it, unless
  // a newer one has already replaced it (several requests may fail with the same old one).
  void Invalidate(uint64_t generation);

 private:
  StatusOr<ExecCredential> RunPlugin();

  const ExecPluginConfig plugin_;
  const ClientConfig cluster_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::optional<ExecCredential> cached_;  // REQUIRES mutex_
  uint64_t runs_ = 0;                     // REQUIRES mutex_
};

}  // namespace flexcsi::kube
