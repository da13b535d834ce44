// The secrets a mapping rule's `secrets` give a volume: the rule's defaults, then the keys made
// from options (both already in CsiVolume::secret_values), then the data of the Secret the rule
// reads (its one key under singleKeyAs, else every key). One computation, no I/O, shared by the
// bridge (each stage and publish call) and `flexcsi migrate` (the Secret it writes for a CSI PV,
// which can only name a Secret, not derive one).
#pragma once

#include <map>
#include <string>

#include "common/status.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi {
namespace translator {

// What a translated PV gets when the rule derives the volume's secrets: a CSI PV
// can only name a Secret.
enum class DerivedSecrets {
  kRefuse,             // `flexcsi translate`: nothing writes such a Secret, so the PV is refused
  kNameWrittenSecret,  // `flexcsi migrate`: the PV names WrittenSecretName(pv) in the claim's
                       // namespace, a Secret migrate writes before it creates the CSI PV
};

// True when the volume's secret keys are not one Secret's own keys under their own names
// (singleKeyAs, fromOptions or defaults): a CSI PV cannot say that.
bool DerivesSecrets(const CsiVolume& volume);

// The derived keys. `secret_data` is the decoded data of volume.read_secret, which lives in
// `secret_namespace` (for error messages); null when the volume reads no Secret. Errors name the
// Secret and count its keys, never show a value.
StatusOr<std::map<std::string, std::string>> DeriveSecrets(
    const CsiVolume& volume, const std::string& secret_namespace,
    const std::map<std::string, std::string>* secret_data);

// The Secret `flexcsi migrate` writes, in the claim's namespace, for a PV whose rule derives its
// secrets; the CSI PV's secret references name it. Deterministic, so a resumed run finds it.
std::string WrittenSecretName(const std::string& pv_name);

}  // namespace translator
}  // namespace flexcsi
