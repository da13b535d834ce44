// The translator: in-tree and FlexVolume volumes <-> CSI, with the operations of Kubernetes'
// csi-translation-lib (translation.md §1) plus FlexVolume rules (§12).
//
// Objects are Kubernetes JSON (nlohmann::json). Inputs are never modified; every successful
// call returns a new object, and a failing call returns only a Status (never a
// half-translated object). The fast form of the PV translation reads its PV through a view
// (json_view.h: nlohmann or simdjson) and returns what changes, leaving the copy to the caller.
// Fields the translator does not know pass through untouched. Malformed input (a field of the wrong
// JSON type) is an InvalidArgument error, not a crash. A Translator is immutable after construction
// and safe to use from several threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "translator/derived_secrets.h"
#include "translator/flexvolume_rules.h"
#include "translator/json_view.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

class InTreePlugin;
class SourcePV;

class Translator {
 public:
  // The eight built-in plugins and, optionally, FlexVolume rules.
  Translator();
  explicit Translator(FlexVolumeRules rules,
                      DerivedSecrets derived_secrets = DerivedSecrets::kRefuse);
  ~Translator();
  Translator(Translator&&) noexcept;
  Translator& operator=(Translator&&) noexcept;

  // A PV with an in-tree (or, with rules, flexVolume) source -> a PV with spec.csi.
  StatusOr<nlohmann::json> TranslateInTreePVToCSI(const nlohmann::json& pv) const;
  // The same, consuming `pv` instead of copying it (for callers that are done with it).
  // Afterwards `pv` is unspecified, also on error.
  StatusOr<nlohmann::json> TranslateInTreePVToCSI(nlohmann::json&& pv) const;
  // The same translation, as changes to `pv`'s spec: the CSI PV is `pv` with them applied
  // (SpecChanges::ApplyTo). Nothing of `pv` is copied, which makes this the fast form; the two
  // calls above are this plus ApplyTo on a copy or on `pv` itself. `pv` may be a view of a
  // simdjson document (JsonView::Of), which is faster still to read than nlohmann's tree.
  StatusOr<SpecChanges> TranslateInTreePVToCSIChanges(JsonView pv) const;
  // A pod volumes[] entry -> a new PV (no apiVersion/kind) wrapping the CSI source.
  StatusOr<nlohmann::json> TranslateInTreeInlineVolumeToCSI(const nlohmann::json& volume,
                                                            const std::string& pod_namespace) const;
  // A PV with spec.csi -> a PV with the in-tree (or flexVolume) source.
  StatusOr<nlohmann::json> TranslateCSIPVToInTree(const nlohmann::json& pv) const;
  StatusOr<nlohmann::json> TranslateCSIPVToInTree(nlohmann::json&& pv) const;  // consumes pv
  // `in_tree_plugin_name` is e.g. "kubernetes.io/gce-pd" (never a CSI driver name).
  StatusOr<nlohmann::json> TranslateInTreeStorageClassToCSI(const std::string& in_tree_plugin_name,
                                                            const nlohmann::json& sc) const;

  // A flexVolume PV (with a rule): the CSI volume its rule makes, secrets unresolved
  // (read_secret's namespace the claim's where the rule names none). See derived_secrets.h.
  StatusOr<CsiVolume> FlexVolumeOfPV(const nlohmann::json& pv) const;

  bool IsMigratableIntreePluginByName(const std::string& in_tree_plugin_name) const;
  bool IsMigratedCSIDriverByName(const std::string& csi_driver_name) const;
  // The PV is checked first; either may be null. FlexVolume volumes with a rule are named
  // "flexvolume-<vendor>~<name>", the name kubelet gives their plugin.
  StatusOr<std::string> GetInTreePluginNameFromSpec(const nlohmann::json* pv,
                                                    const nlohmann::json* volume) const;
  // The PV half of the call above, for a PV read through a view. REQUIRES: pv is not null.
  StatusOr<std::string> GetInTreePluginNameFromPV(JsonView pv) const;
  StatusOr<std::string> GetCSINameFromInTreeName(const std::string& in_tree_plugin_name) const;
  StatusOr<std::string> GetInTreeNameFromCSIName(const std::string& csi_driver_name) const;
  bool IsPVMigratable(const nlohmann::json& pv) const;
  bool IsInlineMigratable(const nlohmann::json& volume) const;
  // Only GCE PD changes anything (§4.6); an unknown driver is an error.
  StatusOr<std::string> RepairVolumeHandle(const std::string& csi_driver_name,
                                           const std::string& volume_handle,
                                           const std::string& node_id) const;

  // The in-tree plugin names and CSI driver names of the built-in plugins, in a fixed order.
  std::vector<std::pair<std::string, std::string>> BuiltInPluginNames() const;
  const FlexVolumeRules& flexvolume_rules() const { return rules_; }

 private:
  const InTreePlugin* PluginForPV(JsonView pv) const;
  const InTreePlugin* PluginForPV(const SourcePV& pv) const;
  const InTreePlugin* PluginForInline(const nlohmann::json& volume) const;
  const InTreePlugin* PluginForCsiDriver(const std::string& driver) const;
  const FlexVolumeRule* FlexRuleForPV(JsonView pv) const;
  // The CSI -> in-tree operation on a PV the call owns.
  StatusOr<nlohmann::json> CsiPVToInTree(nlohmann::json pv) const;

  std::vector<std::unique_ptr<InTreePlugin>> plugins_;
  std::vector<std::string_view> source_fields_;  // plugins_[i]->SourceField()
  FlexVolumeRules rules_;
  DerivedSecrets derived_secrets_;
};

// Upstream's exported helpers live beside their subject: KubernetesVolumeIDToEBSVolumeID in
// aws_ebs.h, TopologyKeyExist in topology.h.

}  // namespace translator
}  // namespace flexcsi
