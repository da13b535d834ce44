#include "translator/spec_changes.h"

#include <algorithm>

namespace flexcsi {
namespace translator {

SpecChanges::Change& SpecChanges::Slot(std::string_view key) {
  auto it = std::lower_bound(changes_.begin(), changes_.end(), key,
                             [](const Change& c, std::string_view k) { return c.key < k; });
  if (it == changes_.end() || it->key != key)
    it = changes_.insert(it, Change{std::string(key), std::nullopt});
  return *it;
}

void SpecChanges::Set(std::string_view key, nlohmann::json value) {
  Slot(key).value = std::move(value);
}

void SpecChanges::Remove(std::string_view key) { Slot(key).value.reset(); }

void SpecChanges::RenameTopologyKey(std::string_view from, std::string_view to) {
  topology_.push_back(TopologyOp{std::string(from), std::string(to), std::nullopt});
}

void SpecChanges::AddTopologyRequirement(nlohmann::json requirement) {
  topology_.push_back(TopologyOp{{}, {}, std::move(requirement)});
}

bool SpecChanges::AddsTopology() const {
  for (const TopologyOp& op : topology_) {
    if (op.requirement) return true;
  }
  return false;
}

namespace {

void RenameKeyIn(nlohmann::json& terms, const std::string& from, const std::string& to) {
  for (nlohmann::json& term : terms) {
    if (!term.is_object()) continue;
    auto exprs = term.find("matchExpressions");
    if (exprs == term.end() || !exprs->is_array()) continue;
    for (nlohmann::json& req : *exprs) {
      if (!req.is_object()) continue;
      auto key = req.find("key");
      if (key != req.end() && key->is_string() && key->get_ref<const std::string&>() == from) {
        *key = to;
      }
    }
  }
}

void AddRequirementTo(nlohmann::json& node_affinity, const nlohmann::json& requirement) {
  if (node_affinity.is_null()) node_affinity = nlohmann::json::object();
  if (!node_affinity.is_object()) return;
  nlohmann::json& required = node_affinity["required"];
  if (required.is_null()) required = nlohmann::json::object();
  if (!required.is_object()) return;
  nlohmann::json& terms = required["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) terms = nlohmann::json::array({nlohmann::json::object()});
  for (nlohmann::json& term : terms) {
    if (term.is_null()) term = nlohmann::json::object();
    if (!term.is_object()) continue;
    nlohmann::json& exprs = term["matchExpressions"];
    if (exprs.is_null()) exprs = nlohmann::json::array();
    if (exprs.is_array()) exprs.push_back(requirement);
  }
}

}  // namespace

void SpecChanges::ApplyTopologyTo(nlohmann::json& node_affinity) const {
  for (const TopologyOp& op : topology_) {
    if (op.requirement) {
      AddRequirementTo(node_affinity, *op.requirement);
      continue;
    }
    if (!node_affinity.is_object()) continue;
    auto required = node_affinity.find("required");
    if (required == node_affinity.end() || !required->is_object()) continue;
    auto terms = required->find("nodeSelectorTerms");
    if (terms != required->end() && terms->is_array()) RenameKeyIn(*terms, op.from, op.to);
  }
}

const SpecChanges::Change* SpecChanges::Find(std::string_view key) const {
  auto it = std::lower_bound(changes_.begin(), changes_.end(), key,
                             [](const Change& c, std::string_view k) { return c.key < k; });
  return it == changes_.end() || it->key != key ? nullptr : &*it;
}

void SpecChanges::ForEachSpecMemberAfterImpl(JsonView spec,
                                             void (*call)(void*, std::string_view, JsonView),
                                             void* fn) const {
  using Members = std::vector<std::pair<std::string_view, JsonView>>;
  Members members;                        // in key order, as ForEachMember gives them
  members.reserve(16 + changes_.size());  // a spec has a dozen members or fewer
  spec.ForEachMember(
      [&](std::string_view key, JsonView value) { members.emplace_back(key, value); });
  auto slot = [&](std::string_view key) {
    return std::lower_bound(
        members.begin(), members.end(), key,
        [](const Members::value_type& m, std::string_view k) { return m.first < k; });
  };
  auto put = [&](std::string_view key, JsonView value) {
    auto it = slot(key);
    if (it != members.end() && it->first == key) {
      it->second = value;
    } else {
      members.emplace(it, key, value);
    }
  };
  // The order of ApplyTo: the node affinity first (no change sets it), then the changes.
  nlohmann::json affinity;
  if (!topology_.empty()) {
    JsonView current = spec.Find("nodeAffinity");
    if (current.present() || AddsTopology()) {
      if (current.present()) affinity = current.ToJson();
      ApplyTopologyTo(affinity);
      put("nodeAffinity", affinity);
    }
  }
  for (const Change& change : changes_) {
    if (change.value) {
      put(change.key, *change.value);
      continue;
    }
    auto it = slot(change.key);
    if (it != members.end() && it->first == change.key) members.erase(it);
  }
  for (const auto& [key, value] : members) call(fn, key, value);
}

void SpecChanges::ApplyTo(nlohmann::json& pv) const& {
  SpecChanges copy = *this;
  std::move(copy).ApplyTo(pv);
}

void SpecChanges::ApplyTo(nlohmann::json& pv) && {
  if (empty()) return;
  nlohmann::json& spec = pv["spec"];
  if (!topology_.empty()) {
    auto affinity = spec.find("nodeAffinity");
    if (affinity != spec.end()) {
      ApplyTopologyTo(*affinity);
    } else if (AddsTopology()) {
      ApplyTopologyTo(spec["nodeAffinity"]);
    }
  }
  for (Change& change : changes_) {
    if (change.value) {
      spec[change.key] = std::move(*change.value);
    } else {
      spec.erase(change.key);
    }
  }
}

}  // namespace translator
}  // namespace flexcsi
