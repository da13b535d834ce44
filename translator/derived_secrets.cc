#include "translator/derived_secrets.h"

namespace flexcsi {
namespace translator {

bool DerivesSecrets(const CsiVolume& volume) {
  return !volume.read_secret_single_key_as.empty() || !volume.secret_values.empty();
}

StatusOr<std::map<std::string, std::string>> DeriveSecrets(
    const CsiVolume& volume, const std::string& secret_namespace,
    const std::map<std::string, std::string>* secret_data) {
  std::map<std::string, std::string> secrets = volume.secret_values;
  if (!volume.read_secret) return secrets;
  if (secret_data == nullptr) return Internal("the data of the rule's Secret was not read");
  const std::string& single_key_as = volume.read_secret_single_key_as;
  if (single_key_as.empty()) {
    for (const auto& [key, value] : *secret_data) secrets[key] = value;
    return secrets;
  }
  // rook's agent took the one value of its mount Secret, whatever the key was called.
  if (secret_data->size() != 1) {
    return FailedPrecondition("secret " + secret_namespace + "/" + volume.read_secret->name +
                              " holds " + std::to_string(secret_data->size()) +
                              " keys; the mapping rule (secrets.singleKeyAs) takes exactly one");
  }
  secrets[single_key_as] = secret_data->begin()->second;
  return secrets;
}

std::string WrittenSecretName(const std::string& pv_name) { return pv_name + "-flexcsi-secret"; }

}  // namespace translator
}  // namespace flexcsi
