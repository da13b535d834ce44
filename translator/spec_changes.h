// What translating a PV does to it, as changes to the members of its spec: the in-tree source
// removed, spec.csi added, and where the plugin says so, spec.accessModes replaced; and the
// topology changes to spec.nodeAffinity's required terms, kept as operations
// (rename a requirement key, add a requirement to every term) because copying the node affinity
// to change it would cost more than the whole rest of the translation. Everything else in the
// PV is left as it was.
//
// Keeping the changes apart from the PV is what lets a translation read its input without
// copying it (Translator::TranslateInTreePVToCSIChanges): a caller that needs the CSI PV as an
// object applies them to a PV it owns; one that only needs to know what changes (or whether the
// PV translates) copies nothing at all.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "translator/json_view.h"

namespace flexcsi {
namespace translator {

class SpecChanges {
 public:
  SpecChanges() { changes_.reserve(4); }  // a translation makes two to four
  struct Change {
    std::string key;
    std::optional<nlohmann::json> value;  // nullopt: the member is removed
  };

  // spec[key] = value (replacing an earlier change of the same key).
  void Set(std::string_view key, nlohmann::json value);
  // Removes spec[key], if it is there.
  void Remove(std::string_view key);
  // Topology operations on spec.nodeAffinity's required terms, applied in the order made.
  // REQUIRES: no Set("nodeAffinity", ...).
  // In every matchExpressions entry of every required term, a key `from` becomes `to`.
  void RenameTopologyKey(std::string_view from, std::string_view to);
  // Appends `requirement` to every term's matchExpressions, creating the node affinity, its
  // required terms or one term where there are none.
  void AddTopologyRequirement(nlohmann::json requirement);

  struct TopologyOp {
    std::string from, to;                       // a rename, when `requirement` is unset
    std::optional<nlohmann::json> requirement;  // an addition
  };

  // REQUIRES: pv["spec"] is an object (as it is in any PV a plugin translated), or there are
  // no changes. The second form moves the new values instead of copying them.
  void ApplyTo(nlohmann::json& pv) const&;
  void ApplyTo(nlohmann::json& pv) &&;

  // Nothing changes.
  bool empty() const { return changes_.empty() && topology_.empty(); }
  // In key order.
  const std::vector<Change>& changes() const { return changes_; }
  // The change of `key`, or nullptr.
  const Change* Find(std::string_view key) const;
  const std::vector<TopologyOp>& topology_ops() const { return topology_; }
  // Whether an operation adds a requirement (and so may create spec.nodeAffinity).
  bool AddsTopology() const;
  // Applies the topology operations to a node affinity held as JSON (null when the PV has
  // none). One of another shape is left alone where it does not fit (the translation checked
  // the shape before it made the operations).
  void ApplyTopologyTo(nlohmann::json& node_affinity) const;

  // Calls fn(std::string_view key, JsonView value) for each member of `spec` as ApplyTo leaves
  // it, in key order, without changing or copying `spec` (only a node affinity that topology
  // operations change is made anew). Values the changes made live only during the call.
  // REQUIRES: `spec` is an object.
  template <typename Fn>
  void ForEachSpecMemberAfter(JsonView spec, Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    ForEachSpecMemberAfterImpl(
        spec, [](void* f, std::string_view k, JsonView v) { (*static_cast<F*>(f))(k, v); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  Change& Slot(std::string_view key);
  void ForEachSpecMemberAfterImpl(JsonView spec, void (*call)(void*, std::string_view, JsonView),
                                  void* fn) const;

  std::vector<Change> changes_;
  std::vector<TopologyOp> topology_;
};

}  // namespace translator
}  // namespace flexcsi
