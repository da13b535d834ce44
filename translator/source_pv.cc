#include "translator/source_pv.h"

namespace flexcsi {
namespace translator {
namespace {

// ObjectField's check for a value already found.
JsonView CheckedObject(JsonView v, const char* key, std::string_view path) {
  if (!v || v.is_object()) return v;
  std::string field = path.empty() ? std::string(key) : std::string(path) + "." + key;
  throw FieldTypeError("invalid field " + field + ": expected object, got " + JsonTypeName(v));
}

}  // namespace

SourcePV::SourcePV(JsonView pv) : pv_(pv), top_(Collect(pv)) {
  spec_ = Collect(Last(top_, "spec"));
  metadata_ = Collect(Last(top_, "metadata"));
}

SourcePV::Members SourcePV::Collect(JsonView object) {
  Members members;
  if (!object.is_object()) return members;
  members.reserve(16);
  object.ForEachMemberAsWritten(
      [&](std::string_view key, JsonView value) { members.emplace_back(key, value); });
  return members;
}

JsonView SourcePV::Last(const Members& members, std::string_view key) {
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (it->first == key) return it->second;  // of repeated keys the last one counts
  }
  return JsonView();
}

JsonView SourcePV::Spec() const { return CheckedObject(Set(Last(top_, "spec")), "spec", ""); }

JsonView SourcePV::Metadata() const {
  return CheckedObject(Set(Last(top_, "metadata")), "metadata", "");
}

JsonView SourcePV::SpecObject(const char* key) const {
  Spec();
  return CheckedObject(SpecField(key), key, "spec");
}

std::string SourcePV::Name() const {
  if (!Metadata()) return std::string();
  JsonView name = Set(Last(metadata_, "name"));
  if (name && !name.is_string()) {
    throw FieldTypeError(std::string("invalid field metadata.name: expected string, got ") +
                         JsonTypeName(name));
  }
  return name ? std::string(name.string_value()) : std::string();
}

bool SourcePV::Label(std::string_view key, std::string* value) const {
  if (!Metadata()) return false;
  JsonView labels = CheckedObject(Set(Last(metadata_, "labels")), "labels", "metadata");
  return labels && LookupString(labels, key, "metadata.labels", value);
}

bool SourcePV::Annotation(std::string_view key, std::string* value) const {
  if (!Metadata()) return false;
  JsonView annotations =
      CheckedObject(Set(Last(metadata_, "annotations")), "annotations", "metadata");
  return annotations && LookupString(annotations, key, "metadata.annotations", value);
}

}  // namespace translator
}  // namespace flexcsi
