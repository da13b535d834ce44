// A PV being translated to CSI, read through a view (json_view.h), with the parts the
// translation asks about looked up once: the members of the PV, of its spec and of its
// metadata are each collected in one pass, and every question after that (which volume source
// is set, the source, nodeAffinity, claimRef, the name, labels, annotations) is answered from
// them. A lookup per question walked the same objects a dozen times per PV.
//
// Types are checked when a part is asked for, with the errors of the json_fields.h lookups the
// answers replace: a PV whose metadata is not an object fails only if the translation reads it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "translator/json_fields.h"

namespace flexcsi {
namespace translator {

class SourcePV {
 public:
  explicit SourcePV(JsonView pv);

  JsonView view() const { return pv_; }
  // ObjectField(pv, "spec", "") and ObjectField(pv, "metadata", "").
  JsonView Spec() const;
  JsonView Metadata() const;
  // FindField(pv.spec, key): set (present, not null) or absent; no type check.
  JsonView SpecField(std::string_view key) const { return Set(Last(spec_, key)); }
  // ObjectField(spec, key, "spec"), after Spec()'s check.
  JsonView SpecObject(const char* key) const;
  // metadata.name ("" when absent), as PVName.
  std::string Name() const;
  // LookupStringInMap(metadata, "labels" / "annotations", key, "metadata", value), after
  // Metadata()'s check. `value` may be null.
  bool Label(std::string_view key, std::string* value) const;
  bool Annotation(std::string_view key, std::string* value) const;

  // Calls fn(key, value) for each member of the spec as written (see JsonView).
  template <typename Fn>
  void ForEachSpecMemberAsWritten(Fn&& fn) const {
    for (const auto& [key, value] : spec_) fn(key, value);
  }

 private:
  using Members = std::vector<std::pair<std::string_view, JsonView>>;

  static Members Collect(JsonView object);
  static JsonView Last(const Members& members, std::string_view key);
  static JsonView Set(JsonView v) { return v.is_null() ? JsonView() : v; }

  JsonView pv_;
  Members top_, spec_, metadata_;
};

}  // namespace translator
}  // namespace flexcsi
