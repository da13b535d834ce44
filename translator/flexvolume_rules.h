// FlexVolume -> CSI rules (translation.md §12): the one place in flexcsi that decides what a
// FlexVolume volume becomes under CSI. `flexcsi translate` uses it for flexVolume PVs and inline
// volumes; the bridge uses it to turn the options kubelet passes to a FlexVolume call into a CSI
// volume. Both get the same answer because both call MapFlexVolumeToCsi.
//
// Rules format (YAML or JSON, equivalent):
//   flexVolumeRules:
//     - flexDriver: acme/lvm          # exact match on the FlexVolume driver ("vendor/name")
//       csiDriver: lvm.csi.acme.io
//       volumeHandle: {fromOption: volumeID}   # or {template: "${pool}/${image}"}
//       keepHandleOptions: false
//       attributes: {exclude: [debug], rename: {vg: volumeGroup}, defaults: {k: v},
//                    static: {k: v}}
//       secrets: {secretName: {fromOption: mountSecret}, singleKeyAs: userKey,
//                 fromOptions: {mountUser: userID}, defaults: {userID: admin}}
//       secretRefs: [nodeStage, nodePublish]
//       defaultFsType: ""
// docs/mapping-rules.md explains each field to users.
// Rules are validated when loaded (§12.4); a loaded FlexVolumeRules is always valid.
// All types here are values, immutable after loading, and safe to share between threads.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {
namespace translator {

// The CSI secret reference fields a rule may fill, in their rules-file spelling.
enum class SecretRefField {
  kControllerPublish,
  kNodeStage,
  kNodePublish,
  kControllerExpand,
  kNodeExpand
};
// "controllerPublish" (rules file) and "controllerPublishSecretRef" (PV field).
const char* SecretRefRuleName(SecretRefField field);
const char* SecretRefPVFieldName(SecretRefField field);

// A value a rule takes from a FlexVolume option or states itself: exactly one is set.
struct RuleValue {
  std::string from_option;
  std::string value;
};

// `secrets`: a Secret the bridge reads itself, with its own credentials, where the legacy
// FlexVolume driver read one (rook's `mountSecret`) or where kubelet would refuse it (kubelet
// hands a FlexVolume driver only Secrets typed with the driver's name; CSI users' Secrets are
// Opaque). Plus secret keys made from options and defaults (rook's `mountUser`).
struct RuleSecrets {
  std::optional<RuleValue> name;       // none: no Secret is read
  std::optional<RuleValue> namespace_;  // none: the pod's namespace (a PV's: its claim's)
  std::string single_key_as;  // the Secret holds exactly one key; its value goes under this key
  std::map<std::string, std::string> from_options;  // option key -> secret key
  std::map<std::string, std::string> defaults;      // secret key -> value when nothing gives it
  // A CSI PV can name a Secret but not derive one: true when the keys are not the Secret's own.
  bool Derived() const {
    return !single_key_as.empty() || !from_options.empty() || !defaults.empty();
  }
};

struct FlexVolumeRule {
  std::string flex_driver;
  std::string csi_driver;
  // Exactly one of the two is non-empty.
  std::string handle_from_option;
  std::string handle_template;
  bool keep_handle_options = false;
  std::set<std::string> exclude;
  std::map<std::string, std::string> rename;             // option key -> attribute key
  std::map<std::string, std::string> default_attributes;  // where no option gives the key
  std::map<std::string, std::string> static_attributes;   // added last
  std::optional<RuleSecrets> secrets;
  std::vector<SecretRefField> secret_refs = {SecretRefField::kNodeStage,
                                             SecretRefField::kNodePublish};
  std::string default_fs_type;
};

class FlexVolumeRules {
 public:
  FlexVolumeRules() = default;  // no rules: every FlexVolume volume is rejected, as upstream
  bool empty() const { return rules_.empty(); }
  const std::vector<FlexVolumeRule>& rules() const { return rules_; }
  // Non-fatal findings of validation, e.g. two rules for one flexDriver (the first wins).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The first rule whose flexDriver / csiDriver equals `name`, or nullptr.
  const FlexVolumeRule* FindByFlexDriver(const std::string& name) const;
  const FlexVolumeRule* FindByCsiDriver(const std::string& name) const;

 private:
  friend StatusOr<FlexVolumeRules> ParseFlexVolumeRules(const nlohmann::json& doc);
  std::vector<FlexVolumeRule> rules_;
  std::vector<std::string> warnings_;
};

// `doc` is an object with a "flexVolumeRules" list (or the list itself), so the bridge can
// embed the rules in its own configuration. Fails with InvalidArgument naming the bad rule.
StatusOr<FlexVolumeRules> ParseFlexVolumeRules(const nlohmann::json& doc);
StatusOr<FlexVolumeRules> ParseFlexVolumeRules(const YAML::Node& doc);
// YAML or JSON text.
StatusOr<FlexVolumeRules> ParseFlexVolumeRulesText(const std::string& text);
StatusOr<FlexVolumeRules> LoadFlexVolumeRulesFile(const std::string& path);

struct SecretReference {
  std::string name;
  std::string namespace_name;
};

// What a FlexVolume volume says: spec.flexVolume of a PV, a pod's inline flexVolume, or what
// the bridge knows about a call.
struct FlexVolumeSource {
  std::string driver;  // "vendor/name"
  std::map<std::string, std::string> options;
  std::string fs_type;
  bool read_only = false;
  std::optional<SecretReference> secret_ref;  // namespace may be empty
};

// The CSI volume a FlexVolume volume becomes.
struct CsiVolume {
  std::string driver;
  std::string volume_handle;
  std::map<std::string, std::string> volume_attributes;  // the CSI volume context
  std::string fs_type;                                   // "" = none
  bool read_only = false;
  std::optional<SecretReference> secret;  // set on every field of secret_ref_fields
  std::vector<SecretRefField> secret_ref_fields;
  // The rule's `secrets`, resolved against the options: the Secret to read (its namespace
  // empty when it is the pod's, known only at call time), and the keys made from options and
  // defaults (names such as a user id, not key material).
  std::optional<SecretReference> read_secret;
  std::string read_secret_single_key_as;
  std::map<std::string, std::string> secret_values;
};

// §12.1 steps 1-5. `fallback_secret_namespace` is used when the secretRef has no namespace:
// the claim's namespace for a PV, the pod's namespace for an inline volume or a bridge call.
// The rule's `secrets` fill read_secret (namespace left empty when neither the rule nor the
// fallback gives one) and secret_values; the options they use are not volume attributes.
StatusOr<CsiVolume> MapFlexVolumeToCsi(const FlexVolumeRules& rules, const FlexVolumeSource& source,
                                       const std::string& fallback_secret_namespace);

// For the bridge: the same computation from a FlexVolume call's driver and its JSON options,
// kubernetes.io/* keys included. fsType comes from kubernetes.io/fsType, read-only from
// kubernetes.io/readwrite == "ro"; kubelet passes no secret name, so there is no secret.
StatusOr<CsiVolume> MapFlexVolumeCallToCsi(const FlexVolumeRules& rules, const std::string& driver,
                                           const std::map<std::string, std::string>& options);

// §12.3: the FlexVolume source a CSI volume of `rule` came from. Where the rule's
// `secrets` name the Secret by options, volume.secret goes into those options, not into a
// secretRef (which kubelet would refuse for a Secret not typed with the driver's name).
StatusOr<FlexVolumeSource> MapCsiToFlexVolume(const FlexVolumeRule& rule, const CsiVolume& volume);

}  // namespace translator
}  // namespace flexcsi
