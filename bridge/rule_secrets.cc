#include "bridge/rule_secrets.h"

#include "common/base64.h"
#include "translator/derived_secrets.h"

namespace flexcsi {

SecretReader::SecretReader(std::unique_ptr<kube::KubeClient> client, std::string why_not)
    : client_(std::move(client)), why_not_(std::move(why_not)) {}

Status SecretReader::NoAccess() const {
  return FailedPrecondition("the mapping rule names a Secret for the bridge to read, but the "
                            "bridge cannot read it: " + why_not_);
}

StatusOr<std::map<std::string, std::string>> SecretReader::Read(const std::string& namespace_name,
                                                                const std::string& name) {
  if (!client_) return NoAccess();
  const std::string what = "secret " + namespace_name + "/" + name;
  StatusOr<nlohmann::json> secret = Unavailable("");
  {
    std::lock_guard<std::mutex> lock(mu_);
    secret = client_->Get(kube::ResourcePath::Core("secrets", namespace_name).Named(name));
  }
  if (!secret.ok()) {
    if (secret.status().code() == Code::kPermissionDenied) {
      return PermissionDenied("the bridge may not read " + what +
                              ": grant its service account get on secrets there "
                              "(docs/mapping-rules.md, \"Which Secrets the bridge reads\")");
    }
    return secret.status().WithContext("reading " + what);
  }
  std::map<std::string, std::string> data;
  auto found = secret->find("data");
  if (found == secret->end() || !found->is_object()) return data;
  for (auto it = found->begin(); it != found->end(); ++it) {
    if (!it->is_string()) return InvalidArgument(what + ": key " + it.key() + " is not a string");
    auto decoded = Base64DecodeStandard(it->get<std::string>());
    if (!decoded.ok()) return InvalidArgument(what + ": key " + it.key() + " is not base64");
    data[it.key()] = std::move(*decoded);
  }
  return data;
}

StatusOr<std::string> SecretReader::ClaimNamespaceOf(const std::string& pv_name) {
  if (!client_) return NoAccess();
  StatusOr<nlohmann::json> pv = Unavailable("");
  {
    std::lock_guard<std::mutex> lock(mu_);
    pv = client_->Get(kube::ResourcePath::Core("persistentvolumes").Named(pv_name));
  }
  if (!pv.ok()) return pv.status().WithContext("reading PV " + pv_name);
  const nlohmann::json claim = pv->value("spec", nlohmann::json::object())
                                   .value("claimRef", nlohmann::json::object());
  const std::string namespace_name = claim.value("namespace", "");
  if (namespace_name.empty()) {
    return FailedPrecondition("PV " + pv_name + " has no claim, so the namespace of its Secret "
                              "is unknown: give the rule a secrets.secretNamespace");
  }
  return namespace_name;
}

StatusOr<std::string> RuleSecretNamespace(const translator::CsiVolume& volume,
                                          const FlexOptions& options,
                                          const CallIdentity& identity, SecretReader& reader) {
  switch (identity.source) {
    case CallSource::kInline:
      if (identity.pod_namespace.empty()) {
        return FailedPrecondition("an inline volume of an attachable driver cannot use the "
                                  "rule's secrets: mountdevice does not say which pod's "
                                  "namespace to read them in (docs/security.md)");
      }
      return identity.pod_namespace;
    case CallSource::kPersistentVolume:
      if (!volume.read_secret->namespace_name.empty()) return volume.read_secret->namespace_name;
      if (!identity.claim_namespace.empty()) return identity.claim_namespace;
      return FailedPrecondition("PV " + identity.pv_name + " has no claim, so the namespace of "
                                "its Secret is unknown: give the rule a secrets.secretNamespace");
    case CallSource::kTrusted:
      break;
  }
  if (!volume.read_secret->namespace_name.empty()) return volume.read_secret->namespace_name;
  if (!options.pod_namespace.empty()) return options.pod_namespace;
  return reader.ClaimNamespaceOf(options.volume_name);
}

StatusOr<std::map<std::string, std::string>> CallSecrets(const translator::CsiVolume& volume,
                                                         const FlexOptions& options,
                                                         const CallIdentity& identity,
                                                         SecretReader* reader) {
  std::string namespace_name;
  std::map<std::string, std::string> data;
  if (volume.read_secret) {
    if (reader == nullptr) return Internal("no SecretReader for a rule that reads a Secret");
    auto where = RuleSecretNamespace(volume, options, identity, *reader);
    if (!where.ok()) return where.status();
    namespace_name = *where;
    auto read = reader->Read(namespace_name, volume.read_secret->name);
    if (!read.ok()) return read.status();
    data = std::move(*read);
  }
  auto secrets =
      translator::DeriveSecrets(volume, namespace_name, volume.read_secret ? &data : nullptr);
  if (!secrets.ok()) return secrets.status();
  for (const auto& [key, value] : options.secrets) (*secrets)[key] = value;
  return secrets;
}

}  // namespace flexcsi
