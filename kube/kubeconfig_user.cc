#include "kube/kubeconfig_user.h"

#include "common/trim_space.h"

namespace flexcsi::kube::kubeconfig {
namespace {

using Json = nlohmann::json;

StatusOr<ExecPluginConfig> ReadExec(const Json& e, const std::string& origin,
                                    const std::string& user, const std::string& where) {
  if (!e.is_object()) return InvalidArgument(where + ": expected a mapping");
  ExecPluginConfig exec;
  StatusOr<std::string> api_version = StringField(e, "apiVersion", where);
  StatusOr<std::string> command = StringField(e, "command", where);
  StatusOr<std::string> mode = StringField(e, "interactiveMode", where);
  StatusOr<bool> cluster_info = BoolField(e, "provideClusterInfo", where);
  for (const Status& s :
       {api_version.status(), command.status(), mode.status(), cluster_info.status()}) {
    FLEXCSI_RETURN_IF_ERROR(s);
  }
  if (command->empty()) {
    return InvalidArgument("invalid configuration: command must be specified for " + user +
                           " to use exec authentication plugin (" + origin + ")");
  }
  if (api_version->empty()) {
    return InvalidArgument("invalid configuration: apiVersion must be specified for " + user +
                           " to use exec authentication plugin (" + origin + ")");
  }
  if (*api_version != "client.authentication.k8s.io/v1" &&
      *api_version != "client.authentication.k8s.io/v1beta1") {
    return InvalidArgument("exec plugin: invalid apiVersion " + Quoted(*api_version) + " for " +
                           user + " (" + origin + ")");
  }
  exec.api_version = *api_version;
  // Commands with a path separator are relative to the kubeconfig; bare names go through PATH.
  exec.command =
      command->find('/') != std::string::npos ? ResolveAgainst(origin, *command) : *command;
  exec.provide_cluster_info = *cluster_info;
  exec.interactive_mode = *mode;
  if (exec.interactive_mode.empty() && exec.api_version.find("v1beta1") != std::string::npos) {
    exec.interactive_mode = "IfAvailable";  // v1beta1's default; v1 must say
  }
  if (exec.interactive_mode.empty()) {
    return InvalidArgument("invalid configuration: interactiveMode must be specified for " + user +
                           " to use exec authentication plugin (" + origin + ")");
  }
  if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable" &&
      exec.interactive_mode != "Always") {
    return InvalidArgument("invalid configuration: invalid interactiveMode for " + user + ": " +
                           Quoted(exec.interactive_mode) + " (" + origin + ")");
  }
  if (e.contains("args") && !e["args"].is_null()) {
    if (!e["args"].is_array()) return InvalidArgument(where + ".args: expected a list");
    for (const Json& a : e["args"]) {
      if (!a.is_string()) return InvalidArgument(where + ".args: expected strings");
      exec.args.push_back(a.get<std::string>());
    }
  }
  if (e.contains("env") && !e["env"].is_null()) {
    if (!e["env"].is_array()) return InvalidArgument(where + ".env: expected a list");
    for (const Json& v : e["env"]) {
      if (!v.is_object()) return InvalidArgument(where + ".env: expected {name, value} entries");
      StatusOr<std::string> name = StringField(v, "name", where + ".env");
      StatusOr<std::string> value = StringField(v, "value", where + ".env");
      FLEXCSI_RETURN_IF_ERROR(name.status());
      FLEXCSI_RETURN_IF_ERROR(value.status());
      if (name->empty()) {
        return InvalidArgument("invalid configuration: env variable name must be specified for " +
                               user + " to use exec authentication plugin (" + origin + ")");
      }
      exec.env.push_back({*name, *value});
    }
  }
  return exec;
}

}  // namespace

Status ApplyUser(const std::string& name, const Stanza& stanza, ClientConfig* config) {
  const std::string where = stanza.origin + ": users[" + name + "].user";
  const Json& u = stanza.value;
  StatusOr<std::string> token = StringField(u, "token", where);
  StatusOr<std::string> token_file = StringField(u, "tokenFile", where);
  StatusOr<std::string> cert_file = StringField(u, "client-certificate", where);
  StatusOr<std::string> cert_data = DataField(u, "client-certificate-data", where);
  StatusOr<std::string> key_file = StringField(u, "client-key", where);
  StatusOr<std::string> key_data = DataField(u, "client-key-data", where);
  StatusOr<std::string> username = StringField(u, "username", where);
  StatusOr<std::string> password = StringField(u, "password", where);
  for (const Status& s :
       {token.status(), token_file.status(), cert_file.status(), cert_data.status(),
        key_file.status(), key_data.status(), username.status(), password.status()}) {
    FLEXCSI_RETURN_IF_ERROR(s);
  }
  if (u.contains("auth-provider") && !u["auth-provider"].is_null()) {
    return Unimplemented("user " + Quoted(name) + " (" + stanza.origin +
                         ") uses an auth-provider, which kubectl itself no longer supports; "
                         "use an exec credential plugin");
  }
  if (!token->empty() && (!username->empty() || !password->empty())) {
    return InvalidArgument("invalid configuration: more than one authentication method found for " +
                           name + "; found [token basicAuth], only one is allowed (" +
                           stanza.origin + ")");
  }
  if (!cert_file->empty() || !cert_data->empty()) {
    if (!cert_file->empty() && !cert_data->empty()) {
      return InvalidArgument(
          "invalid configuration: client-cert-data and client-cert are both "
          "specified for " +
          name + " (" + stanza.origin + ")");
    }
    if (!key_file->empty() && !key_data->empty()) {
      return InvalidArgument(
          "invalid configuration: client-key-data and client-key are both "
          "specified for " +
          name + " (" + stanza.origin + ")");
    }
    if (key_file->empty() && key_data->empty()) {
      return InvalidArgument(
          "invalid configuration: client-key-data or client-key must be "
          "specified for " +
          name +
          " to use the clientCert authentication "
          "method (" +
          stanza.origin + ")");
    }
    config->client_cert_pem = *cert_data;
    config->client_key_pem = *key_data;
    auto read = [&](const std::string& file, const char* what, std::string* out) -> Status {
      if (file.empty()) return Status::Ok();
      std::string path = ResolveAgainst(stanza.origin, file);
      StatusOr<std::string> pem = ReadCredentialFile(path);
      if (!pem.ok()) {
        return InvalidArgument(std::string("invalid configuration: unable to read ") + what + " " +
                               path + " for " + name + " (" + stanza.origin +
                               "): " + pem.status().message());
      }
      *out = *pem;
      return Status::Ok();
    };
    FLEXCSI_RETURN_IF_ERROR(read(*cert_file, "client-cert", &config->client_cert_pem));
    FLEXCSI_RETURN_IF_ERROR(read(*key_file, "client-key", &config->client_key_pem));
  }
  if (!token->empty()) {
    config->token = *token;
    config->token_file = ResolveAgainst(stanza.origin, *token_file);
  } else if (!token_file->empty()) {
    // Read now, as clientcmd does, so a wrong path is a configuration error, not a 401 later.
    std::string path = ResolveAgainst(stanza.origin, *token_file);
    StatusOr<std::string> content = ReadCredentialFile(path);
    if (!content.ok()) {
      return InvalidArgument("invalid configuration: unable to read tokenFile " + path + " for " +
                             name + " (" + stanza.origin + "): " + content.status().message());
    }
    config->token = TrimSpace(*content);
    config->token_file = path;
  }
  config->username = *username;
  config->password = *password;
  if (u.contains("exec") && !u["exec"].is_null()) {
    StatusOr<ExecPluginConfig> exec = ReadExec(u["exec"], stanza.origin, name, where + ".exec");
    if (!exec.ok()) return exec.status();
    config->exec = std::move(*exec);
  }
  return Status::Ok();
}

}  // namespace flexcsi::kube::kubeconfig
