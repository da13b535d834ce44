// What translating a PV does to it, as changes to the members of its spec: the in-tree source
// removed, spec.csi added, and where the plugin says so, spec.accessModes and spec.nodeAffinity
// replaced, or the topology keys of spec.nodeAffinity's requirements renamed (the common case,
// kept as a rename because copying the node affinity would cost more than the whole rest of the
// translation). Everything else in the PV is left as it was.
//
// Keeping the changes apart from the PV is what lets a translation read its input without
// copying it (Translator::TranslateInTreePVToCSIChanges): the caller applies them to a PV it
// owns, or writes the PV with them applied (json_text_writer.h), and nothing else is copied.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace translator {

class SpecChanges {
 public:
  struct Change {
    std::string key;
    std::optional<nlohmann::json> value;  // nullopt: the member is removed
  };

  // spec[key] = value (replacing an earlier change of the same key).
  void Set(const std::string& key, nlohmann::json value);
  // Removes spec[key], if it is there.
  void Remove(const std::string& key);
  // In every matchExpressions entry of every required term of spec.nodeAffinity, a key `from`
  // becomes `to`; renames apply in the order given. REQUIRES: no Set("nodeAffinity", ...).
  void RenameTopologyKey(const std::string& from, const std::string& to);

  // REQUIRES: pv["spec"] is an object (as it is in any PV a plugin translated), or there are
  // no changes. The second form moves the new values instead of copying them.
  void ApplyTo(nlohmann::json& pv) const&;
  void ApplyTo(nlohmann::json& pv) &&;

  // In key order.
  const std::vector<Change>& changes() const { return changes_; }
  // The change of `key`, or nullptr.
  const Change* Find(std::string_view key) const;
  const std::vector<std::pair<std::string, std::string>>& topology_key_renames() const {
    return renames_;
  }
  // Applies the renames to a node affinity held as JSON (one of any shape: what does not fit
  // is left alone).
  void RenameTopologyKeysIn(nlohmann::json& node_affinity) const;

 private:
  Change& Slot(const std::string& key);

  std::vector<Change> changes_;
  std::vector<std::pair<std::string, std::string>> renames_;
};

}  // namespace translator
}  // namespace flexcsi
