#include "translator/spec_changes.h"

#include <algorithm>

namespace flexcsi {
namespace translator {

SpecChanges::Change& SpecChanges::Slot(const std::string& key) {
  auto it = std::lower_bound(changes_.begin(), changes_.end(), key,
                             [](const Change& c, const std::string& k) { return c.key < k; });
  if (it == changes_.end() || it->key != key) it = changes_.insert(it, Change{key, std::nullopt});
  return *it;
}

void SpecChanges::Set(const std::string& key, nlohmann::json value) {
  Slot(key).value = std::move(value);
}

void SpecChanges::Remove(const std::string& key) { Slot(key).value.reset(); }

void SpecChanges::RenameTopologyKey(const std::string& from, const std::string& to) {
  renames_.emplace_back(from, to);
}

void SpecChanges::RenameTopologyKeysIn(nlohmann::json& node_affinity) const {
  if (renames_.empty() || !node_affinity.is_object()) return;
  auto required = node_affinity.find("required");
  if (required == node_affinity.end() || !required->is_object()) return;
  auto terms = required->find("nodeSelectorTerms");
  if (terms == required->end() || !terms->is_array()) return;
  for (nlohmann::json& term : *terms) {
    if (!term.is_object()) continue;
    auto exprs = term.find("matchExpressions");
    if (exprs == term.end() || !exprs->is_array()) continue;
    for (nlohmann::json& req : *exprs) {
      if (!req.is_object()) continue;
      auto key = req.find("key");
      if (key == req.end() || !key->is_string()) continue;
      for (const auto& [from, to] : renames_) {
        if (key->get_ref<const std::string&>() == from) *key = to;
      }
    }
  }
}

const SpecChanges::Change* SpecChanges::Find(std::string_view key) const {
  auto it = std::lower_bound(changes_.begin(), changes_.end(), key,
                             [](const Change& c, std::string_view k) { return c.key < k; });
  return it == changes_.end() || it->key != key ? nullptr : &*it;
}

void SpecChanges::ApplyTo(nlohmann::json& pv) const& {
  SpecChanges copy = *this;
  std::move(copy).ApplyTo(pv);
}

void SpecChanges::ApplyTo(nlohmann::json& pv) && {
  if (changes_.empty() && renames_.empty()) return;
  nlohmann::json& spec = pv["spec"];
  if (!renames_.empty()) {
    auto affinity = spec.find("nodeAffinity");
    if (affinity != spec.end()) RenameTopologyKeysIn(*affinity);
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
