// Kubeconfig loading with the rules of client-go's clientcmd (loader.go, client_config.go,
// validation.go, merged_client_builder.go) and rest.InClusterConfig, which is what kubectl uses:
// which files, their merge, the context, the cluster half and in-cluster configuration. The
// user half (credentials) is kubeconfig_user.cc.

#include "kube/kube_config.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/trim_space.h"
#include "common/yaml_json.h"
#include "kube/kubeconfig_fields.h"
#include "kube/kubeconfig_user.h"

namespace flexcsi::kube {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using kubeconfig::BoolField;
using kubeconfig::DataField;
using kubeconfig::Quoted;
using kubeconfig::ResolveAgainst;
using kubeconfig::Stanza;
using kubeconfig::StringField;

// The merged view of every kubeconfig file read, as clientcmd's Load returns it.
struct MergedKubeconfig {
  std::map<std::string, Stanza> clusters;
  std::map<std::string, Stanza> users;
  std::map<std::string, Stanza> contexts;
  std::string current_context;
  std::vector<std::string> files_read;
};

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}


std::string HomeDirectory() {
  std::string home = GetEnv("HOME");
  if (!home.empty()) return home;
  if (const passwd* pw = getpwuid(getuid())) return pw->pw_dir;
  return "/";
}

// Reads one kubeconfig file into `merged`, keeping entries already present (first file wins).
// A missing file is reported as kNotFound so the caller can skip it when allowed.
Status MergeFile(const std::string& path, MergedKubeconfig* merged) {
  StatusOr<std::string> text = ReadCredentialFile(path);
  if (!text.ok()) return text.status();
  merged->files_read.push_back(path);
  if (TrimSpace(*text).empty()) return Status::Ok();  // an empty file is an empty config
  StatusOr<Json> doc = ParseYamlDocument(*text);
  if (!doc.ok()) {
    return InvalidArgument("error loading config file " + Quoted(path) + ": " +
                           doc.status().message());
  }
  if (doc->is_null()) return Status::Ok();
  if (!doc->is_object()) {
    return InvalidArgument("error loading config file " + Quoted(path) + ": not a mapping");
  }
  // One file's list; a later entry of the same name in the same file replaces an earlier one
  // (the v1 -> internal conversion fills a map), but never one from an earlier file.
  auto read_list = [&](const char* list_key, const char* item_key,
                       std::map<std::string, Stanza>* into) -> Status {
    if (!doc->contains(list_key) || (*doc)[list_key].is_null()) return Status::Ok();
    const Json& list = (*doc)[list_key];
    if (!list.is_array()) {
      return InvalidArgument(path + ": " + list_key + ": expected a list");
    }
    std::map<std::string, Stanza> from_this_file;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = path + ": " + list_key + "[" + std::to_string(i) + "]";
      const Json& item = list[i];
      if (!item.is_object()) return InvalidArgument(where + ": expected a mapping");
      StatusOr<std::string> name = StringField(item, "name", where);
      if (!name.ok()) return name.status();
      Json body =
          item.contains(item_key) && !item[item_key].is_null() ? item[item_key] : Json::object();
      if (!body.is_object()) {
        return InvalidArgument(where + "." + item_key + ": expected a mapping");
      }
      from_this_file[*name] = Stanza{body, path};
    }
    for (auto& [name, stanza] : from_this_file) into->emplace(name, std::move(stanza));
    return Status::Ok();
  };
  FLEXCSI_RETURN_IF_ERROR(read_list("clusters", "cluster", &merged->clusters));
  FLEXCSI_RETURN_IF_ERROR(read_list("users", "user", &merged->users));
  FLEXCSI_RETURN_IF_ERROR(read_list("contexts", "context", &merged->contexts));
  if (merged->current_context.empty()) {
    StatusOr<std::string> current = StringField(*doc, "current-context", path);
    if (!current.ok()) return current.status();
    merged->current_context = *current;
  }
  return Status::Ok();
}

// The kubeconfig files kubectl would read, in precedence order, and whether each must exist.
std::vector<std::pair<std::string, bool>> KubeconfigFiles(const ConfigFlags& flags) {
  if (!flags.kubeconfig.empty()) return {{flags.kubeconfig, true}};
  std::vector<std::pair<std::string, bool>> files;
  std::string env = GetEnv("KUBECONFIG");
  if (!env.empty()) {
    std::set<std::string> seen;
    std::stringstream list(env);
    std::string item;
    while (std::getline(list, item, ':')) {
      if (item.empty() || !seen.insert(item).second) continue;
      files.push_back({item, false});
    }
    return files;
  }
  return {{HomeDirectory() + "/.kube/config", false}};
}

// http, https or socks5 with a host, as clientcmd's parseProxyURL accepts.
Status ValidateProxyUrl(const std::string& url, const std::string& cluster) {
  size_t scheme_end = url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https" && scheme != "socks5") {
    return InvalidArgument("invalid 'proxy-url' " + Quoted(url) + " for cluster " +
                           Quoted(cluster) + ": unsupported scheme " + Quoted(scheme) +
                           ", must be http, https, or socks5");
  }
  if (url.size() == scheme_end + 3) {
    return InvalidArgument("invalid 'proxy-url' " + Quoted(url) + " for cluster " +
                           Quoted(cluster) + ": no host");
  }
  return Status::Ok();
}

// "https://host:6443/" -> "https://host:6443"; a bare "host:6443" gets https when TLS material
// is configured, http otherwise (rest.DefaultServerURL).
std::string NormalizeServer(std::string server, bool has_tls_material) {
  if (server.find("://") == std::string::npos) {
    server = (has_tls_material ? "https://" : "http://") + server;
  }
  while (server.size() > 8 && server.back() == '/') server.pop_back();
  return server;
}

bool IsHttps(const std::string& server) { return server.rfind("https://", 0) == 0; }

// Fills the cluster half of `config` from a cluster stanza (already merged with flags).
Status ApplyCluster(const std::string& name, const Stanza& stanza, const ConfigFlags& flags,
                    ClientConfig* config) {
  const std::string where = stanza.origin + ": clusters[" + name + "].cluster";
  const Json& c = stanza.value;
  StatusOr<std::string> server = StringField(c, "server", where);
  StatusOr<std::string> ca_file = StringField(c, "certificate-authority", where);
  StatusOr<std::string> ca_data = DataField(c, "certificate-authority-data", where);
  StatusOr<bool> insecure = BoolField(c, "insecure-skip-tls-verify", where);
  StatusOr<std::string> tls_server_name = StringField(c, "tls-server-name", where);
  StatusOr<std::string> proxy_url = StringField(c, "proxy-url", where);
  for (const Status& s : {server.status(), ca_file.status(), ca_data.status(), insecure.status(),
                          tls_server_name.status(), proxy_url.status()}) {
    FLEXCSI_RETURN_IF_ERROR(s);
  }
  std::string effective_server = *server;
  std::string effective_tls_name = *tls_server_name;
  if (!flags.server.empty()) {
    // --server also drops the file's tls-server-name (it named the file's server).
    effective_server = flags.server;
    effective_tls_name.clear();
  }
  if (effective_server.empty()) {
    return InvalidArgument("invalid configuration: no server found for cluster " + Quoted(name) +
                           " (" + stanza.origin + ")");
  }
  if (!proxy_url->empty()) FLEXCSI_RETURN_IF_ERROR(ValidateProxyUrl(*proxy_url, name));
  if (!ca_file->empty() && !ca_data->empty()) {
    return InvalidArgument(
        "invalid configuration: certificate-authority-data and "
        "certificate-authority are both specified for " +
        name + " (" + stanza.origin + ")");
  }
  if (*insecure && (!ca_file->empty() || !ca_data->empty())) {
    // rest.Config validation: "specifying a root certificates file with the insecure flag is
    // not allowed".
    return InvalidArgument("invalid configuration: cluster " + Quoted(name) + " (" + stanza.origin +
                           ") sets insecure-skip-tls-verify together with a "
                           "certificate authority, which is not allowed");
  }
  config->ca_pem = *ca_data;
  if (!ca_file->empty()) {
    std::string path = ResolveAgainst(stanza.origin, *ca_file);
    StatusOr<std::string> pem = ReadCredentialFile(path);
    if (!pem.ok()) {
      return InvalidArgument("invalid configuration: unable to read certificate-authority " + path +
                             " for " + name + " (" + stanza.origin +
                             "): " + pem.status().message());
    }
    config->ca_pem = *pem;
  }
  config->insecure_skip_tls_verify = *insecure;
  config->tls_server_name = effective_tls_name;
  config->proxy_url = *proxy_url;
  bool has_tls = !config->ca_pem.empty() || *insecure || !effective_tls_name.empty();
  config->server = NormalizeServer(effective_server, has_tls);
  return Status::Ok();
}

bool InClusterPossible(const std::string& service_account_dir) {
  std::error_code ec;
  return !GetEnv("KUBERNETES_SERVICE_HOST").empty() && !GetEnv("KUBERNETES_SERVICE_PORT").empty() &&
         fs::is_regular_file(service_account_dir + "/token", ec);
}

// kubectl inside a pod: in-cluster config with only --server, --token and --namespace applied.
StatusOr<ClientConfig> InClusterWithFlags(const ConfigFlags& flags) {
  StatusOr<ClientConfig> config = LoadInClusterConfig(flags.service_account_dir);
  if (!config.ok()) return config;
  if (!flags.server.empty()) config->server = NormalizeServer(flags.server, true);
  if (!flags.token.empty()) {
    config->token = flags.token;
    config->token_file.clear();
  }
  if (!flags.namespace_.empty()) config->namespace_ = flags.namespace_;
  return config;
}

std::string FileListForMessage(const MergedKubeconfig& merged,
                               const std::vector<std::pair<std::string, bool>>& files) {
  std::string list;
  for (const auto& [path, required] : files) {
    if (!list.empty()) list += ", ";
    list += path;
  }
  return list.empty() ? "no kubeconfig file" : list;
}

}  // namespace

// Kubeconfigs, certificates and tokens are kilobytes; a file named in a kubeconfig that is far
// larger (or never ends: /dev/zero) is a mistake, refused before it takes the memory.
constexpr size_t kMaxReadBytes = 16 << 20;

StatusOr<std::string> ReadCredentialFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return FailedPrecondition("cannot read " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Code code = errno == ENOENT ? Code::kNotFound : Code::kFailedPrecondition;
    return Status(code, "cannot read " + path + ": " + std::strerror(errno));
  }
  std::string text;
  char chunk[64 * 1024];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxReadBytes) {
      return FailedPrecondition("cannot read " + path + ": it is larger than " +
                                std::to_string(kMaxReadBytes >> 20) +
                                " MiB, which no kubeconfig, certificate or token is");
    }
  }
  return text;
}

StatusOr<ClientConfig> LoadClientConfig(const ConfigFlags& flags) {
  if (flags.in_cluster) return InClusterWithFlags(flags);

  std::vector<std::pair<std::string, bool>> files = KubeconfigFiles(flags);
  MergedKubeconfig merged;
  for (const auto& [path, required] : files) {
    Status s = MergeFile(path, &merged);
    if (s.code() == Code::kNotFound && !required) continue;  // missing files are skipped
    if (!s.ok()) return s;
  }

  ClientConfig config;
  std::string context_name = flags.context.empty() ? merged.current_context : flags.context;
  config.context_name = context_name;
  Json context = Json::object();
  std::string context_origin;
  if (!context_name.empty()) {
    auto it = merged.contexts.find(context_name);
    if (it == merged.contexts.end()) {
      if (!flags.context.empty()) {
        return NotFound("context " + Quoted(context_name) + " does not exist in " +
                        FileListForMessage(merged, files));
      }
      return NotFound(
          "invalid configuration: context was not found for specified context: " + context_name +
          " (current-context in " + FileListForMessage(merged, files) + ")");
    }
    context = it->second.value;
    context_origin = it->second.origin;
  }
  const std::string context_where = context_origin + ": contexts[" + context_name + "].context";
  StatusOr<std::string> cluster_name = StringField(context, "cluster", context_where);
  StatusOr<std::string> user_name = StringField(context, "user", context_where);
  StatusOr<std::string> context_namespace = StringField(context, "namespace", context_where);
  for (const Status& s : {cluster_name.status(), user_name.status(), context_namespace.status()}) {
    FLEXCSI_RETURN_IF_ERROR(s);
  }

  auto cluster = merged.clusters.find(*cluster_name);
  if (cluster_name->empty() || cluster == merged.clusters.end()) {
    if (flags.server.empty()) {
      // Nothing names a server. kubectl then uses in-cluster configuration when it can, and
      // otherwise KUBERNETES_MASTER (or http://localhost:8080, which we refuse to guess).
      if (InClusterPossible(flags.service_account_dir)) return InClusterWithFlags(flags);
      if (!cluster_name->empty()) {
        return NotFound("cluster " + Quoted(*cluster_name) + " (context " + Quoted(context_name) +
                        " in " + context_origin + ") not found in " +
                        FileListForMessage(merged, files));
      }
      std::string master = GetEnv("KUBERNETES_MASTER");
      if (master.empty()) {
        return FailedPrecondition(
            "invalid configuration: no configuration has been provided (read " +
            FileListForMessage(merged, files) +
            "; not in a cluster); pass --kubeconfig, set KUBECONFIG, or set KUBERNETES_MASTER");
      }
      config.server = NormalizeServer(master, false);
    } else {
      config.server = NormalizeServer(flags.server, false);
    }
  } else {
    FLEXCSI_RETURN_IF_ERROR(ApplyCluster(*cluster_name, cluster->second, flags, &config));
  }

  if (!user_name->empty()) {
    auto user = merged.users.find(*user_name);
    if (user == merged.users.end()) {
      // kubectl would carry on anonymously; a migration tool that silently drops credentials
      // only produces puzzling 401/403s later, so this is an error here.
      return NotFound("user " + Quoted(*user_name) + " (context " + Quoted(context_name) + " in " +
                      context_origin + ") not found in " + FileListForMessage(merged, files));
    }
    FLEXCSI_RETURN_IF_ERROR(kubeconfig::ApplyUser(*user_name, user->second, &config));
  }
  if (!flags.token.empty()) {
    if (!config.username.empty() || !config.password.empty()) {
      return InvalidArgument(
          "invalid configuration: more than one authentication method found "
          "for " +
          *user_name +
          "; found [token basicAuth], only one is "
          "allowed (--token)");
    }
    config.token = flags.token;
    config.token_file.clear();
  }
  if (!IsHttps(config.server)) {
    // clientcmd reads user credentials only for TLS servers: nothing secret goes out in clear.
    config.token.clear();
    config.token_file.clear();
    config.username.clear();
    config.password.clear();
    config.client_cert_pem.clear();
    config.client_key_pem.clear();
    config.exec.reset();
  }

  if (!flags.namespace_.empty()) {
    config.namespace_ = flags.namespace_;
  } else if (!context_namespace->empty()) {
    config.namespace_ = *context_namespace;
  } else if (InClusterPossible(flags.service_account_dir)) {
    // kubectl in a pod with a kubeconfig that names no namespace uses the pod's.
    StatusOr<ClientConfig> in_cluster = LoadInClusterConfig(flags.service_account_dir);
    config.namespace_ = in_cluster.ok() ? in_cluster->namespace_ : "default";
  } else {
    config.namespace_ = "default";
  }
  return config;
}

StatusOr<ClientConfig> LoadInClusterConfig(const std::string& service_account_dir) {
  std::string host = GetEnv("KUBERNETES_SERVICE_HOST");
  std::string port = GetEnv("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return FailedPrecondition(
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
        "and KUBERNETES_SERVICE_PORT must be defined");
  }
  ClientConfig config;
  // net.JoinHostPort: IPv6 literals are bracketed.
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  config.server = "https://" + host + ":" + port;
  config.token_file = service_account_dir + "/token";
  StatusOr<std::string> token = ReadCredentialFile(config.token_file);
  if (!token.ok()) {
    return FailedPrecondition("unable to load in-cluster configuration: " +
                              token.status().message());
  }
  config.token = TrimSpace(*token);
  // Like rest.InClusterConfig, an unreadable ca.crt leaves the system roots in charge.
  StatusOr<std::string> ca = ReadCredentialFile(service_account_dir + "/ca.crt");
  if (ca.ok()) config.ca_pem = *ca;
  std::string ns = GetEnv("POD_NAMESPACE");
  if (ns.empty()) {
    StatusOr<std::string> file = ReadCredentialFile(service_account_dir + "/namespace");
    if (file.ok()) ns = TrimSpace(*file);
  }
  config.namespace_ = ns.empty() ? "default" : ns;
  return config;
}

}  // namespace flexcsi::kube
