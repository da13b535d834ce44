#include "kube/exec_credential.h"

#include <ctime>

#include <nlohmann/json.hpp>

#include "common/command_runner.h"
#include "common/base64.h"

namespace flexcsi::kube {
namespace {

using Json = nlohmann::json;

std::string TailForMessage(const std::string& text) {
  constexpr size_t kMax = 400;
  size_t e = text.find_last_not_of(" \t\r\n");
  std::string trimmed = e == std::string::npos ? "" : text.substr(0, e + 1);
  return trimmed.size() > kMax ? "..." + trimmed.substr(trimmed.size() - kMax) : trimmed;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  if (*rest == '.') {  // fraction of a second: irrelevant for expiry
    ++rest;
    while (*rest >= '0' && *rest <= '9') ++rest;
  }
  long offset_seconds = 0;
  if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else if (*rest == '+' || *rest == '-') {
    int sign = *rest == '-' ? -1 : 1;
    int hh = 0, mm = 0;
    if (std::sscanf(rest + 1, "%2d:%2d", &hh, &mm) != 2) return std::nullopt;
    offset_seconds = sign * (hh * 3600L + mm * 60L);
    rest += 6;
  } else {
    return std::nullopt;
  }
  if (*rest != '\0') return std::nullopt;
  time_t utc = timegm(&tm) - offset_seconds;
  return std::chrono::system_clock::from_time_t(utc);
}

std::string ExecInfoJson(const ExecPluginConfig& plugin, const ClientConfig& cluster) {
  Json info = {{"kind", "ExecCredential"},
               {"apiVersion", plugin.api_version},
               // We never hand the plugin a terminal (its stdin is /dev/null).
               {"spec", {{"interactive", false}}}};
  if (plugin.provide_cluster_info) {
    Json c = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    if (!cluster.ca_pem.empty()) c["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    if (!cluster.proxy_url.empty()) c["proxy-url"] = cluster.proxy_url;
    info["spec"]["cluster"] = c;
  }
  return info.dump();
}

StatusOr<ExecCredential> ParseExecCredential(const std::string& stdout_text,
                                             const std::string& expected_api_version) {
  Json doc = Json::parse(stdout_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return Status(Code::kUnauthenticated,
                  "exec plugin: output is not an ExecCredential JSON object");
  }
  if (doc.value("kind", "") != "ExecCredential") {
    return Status(Code::kUnauthenticated, "exec plugin: output has kind " +
                                              doc.value("kind", std::string("<none>")) +
                                              ", want ExecCredential");
  }
  std::string version = doc.value("apiVersion", "");
  if (version != expected_api_version) {
    return Status(Code::kUnauthenticated, "exec plugin is configured to use API version " +
                                              expected_api_version + ", plugin returned version " +
                                              version);
  }
  if (!doc.contains("status") || !doc["status"].is_object()) {
    return Status(Code::kUnauthenticated, "exec plugin didn't return a status field");
  }
  const Json& status = doc["status"];
  auto text = [&](const char* key) {
    return status.contains(key) && status[key].is_string() ? status[key].get<std::string>()
                                                           : std::string();
  };
  ExecCredential credential;
  credential.token = text("token");
  credential.client_cert_pem = text("clientCertificateData");
  credential.client_key_pem = text("clientKeyData");
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    return Status(Code::kUnauthenticated, "exec plugin returned only certificate or key, not both");
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    return Status(Code::kUnauthenticated, "exec plugin didn't return a token or cert/key pair");
  }
  std::string expiry = text("expirationTimestamp");
  if (!expiry.empty()) {
    credential.expiry = ParseRfc3339(expiry);
    if (!credential.expiry) {
      return Status(Code::kUnauthenticated,
                    "exec plugin: expirationTimestamp is not an RFC 3339 time: " + expiry);
    }
  }
  return credential;
}

ExecCredentialProvider::ExecCredentialProvider(ExecPluginConfig plugin, ClientConfig cluster,
                                               std::chrono::milliseconds timeout)
    : plugin_(std::move(plugin)), cluster_(std::move(cluster)), timeout_(timeout) {}

StatusOr<ExecCredential> ExecCredentialProvider::Get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_ && (!cached_->expiry || std::chrono::system_clock::now() < *cached_->expiry)) {
    return *cached_;
  }
  cached_.reset();
  StatusOr<ExecCredential> fresh = RunPlugin();
  if (!fresh.ok()) return fresh;
  fresh->generation = ++runs_;
  cached_ = *fresh;
  return fresh;
}

void ExecCredentialProvider::Invalidate(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_ && cached_->generation == generation) cached_.reset();
}

StatusOr<ExecCredential> ExecCredentialProvider::RunPlugin() {
  if (plugin_.interactive_mode == "Always") {
    return Status(Code::kUnauthenticated,
                  "exec plugin " + plugin_.command +
                      " requires interactive mode (interactiveMode: Always), but flexcsi never "
                      "gives plugins a terminal");
  }
  // Settings travel in the environment, never in argv: argv is readable by every user.
  CommandEnvironment env = {{"KUBERNETES_EXEC_INFO", ExecInfoJson(plugin_, cluster_)}};
  env.insert(env.end(), plugin_.env.begin(), plugin_.env.end());
  std::vector<std::string> argv = {plugin_.command};
  argv.insert(argv.end(), plugin_.args.begin(), plugin_.args.end());

  StatusOr<CommandOutput> out = RunCommandCapture(argv, timeout_, env);
  if (!out.ok()) {
    return Status(out.status().code(),
                  "exec plugin " + plugin_.command + ": " + out.status().message());
  }
  if (out->exit_code == 127) {
    return NotFound("exec: executable " + plugin_.command + " not found");
  }
  if (out->exit_code != 0) {
    return Status(Code::kUnauthenticated,
                  "exec: executable " + plugin_.command + " failed with exit code " +
                      std::to_string(out->exit_code) + ": " + TailForMessage(out->stderr_text));
  }
  return ParseExecCredential(out->stdout_text, plugin_.api_version);
}

}  // namespace flexcsi::kube
