// Finding the cluster exactly as kubectl does: --kubeconfig, else $KUBECONFIG (a ':'-separated
// list, first file wins per key), else ~/.kube/config; --context, --namespace; else in-cluster
// service-account configuration. See shared/spec/kubernetes-api.md §1.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/rate_limiter.h"

namespace flexcsi::kube {

// What the user said on the command line; empty means "not given".
struct ConfigFlags {
  std::string kubeconfig;   // --kubeconfig
  std::string context;      // --context
  std::string namespace_;   // --namespace / -n
  std::string server;       // --server (overrides the cluster's)
  std::string token;        // --token
  bool in_cluster = false;  // force in-cluster config (controllers), ignoring kubeconfig files
  // Where in-cluster configuration is looked for (when forced, or when no kubeconfig gives a
  // server, as kubectl falls back); tests point it at a temp dir.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// An exec credential plugin (users[].user.exec).
struct ExecPluginConfig {
  std::string api_version;  // client.authentication.k8s.io/v1beta1 or v1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string interactive_mode;
  bool provide_cluster_info = false;
};

// Everything needed to reach one API server as one user. PEM material is held as text
// (files already read, *-data already base64-decoded).
struct ClientConfig {
  std::string server;  // https://host:port (no trailing slash)
  std::string tls_server_name;
  std::string proxy_url;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;  // secret: never logged
  std::string token;           // secret: never logged
  std::string token_file;      // re-read on every request (service-account tokens rotate)
  std::string username;
  std::string password;  // secret: never logged
  std::optional<ExecPluginConfig> exec;
  std::string namespace_ = "default";
  std::string context_name;  // for messages; empty in-cluster
  std::string user_agent = "flexcsi";
  std::chrono::milliseconds request_timeout{30000};
  int max_retries = 5;  // 429/5xx and transport errors
  // Client-side rate limit of every request (rate_limiter.h); none unless a program sets one.
  RateLimit rate_limit;
};

// Resolves flags, environment and files into one ClientConfig, or says precisely what is
// missing or wrong ("context \"foo\" not found in /root/.kube/config").
StatusOr<ClientConfig> LoadClientConfig(const ConfigFlags& flags);

// In-cluster configuration from KUBERNETES_SERVICE_HOST/PORT and the service-account directory
// (default /var/run/secrets/kubernetes.io/serviceaccount; overridable for tests).
StatusOr<ClientConfig> LoadInClusterConfig(
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Reads a kubeconfig or a file it names (certificate, key, token), refusing a directory and
// anything over 16 MiB, which no such file is: a mistake like /dev/zero must not take the memory.
StatusOr<std::string> ReadCredentialFile(const std::string& path);

}  // namespace flexcsi::kube
