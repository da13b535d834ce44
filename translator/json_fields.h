// Typed access to the fields of Kubernetes objects held as nlohmann::json or seen through a
// JsonView (json_view.h).
//
// Kubernetes objects arrive as untrusted JSON: any field may be missing, null, or of the wrong
// type. These accessors treat "absent" and "null" alike (Go's nil / zero value) and reject a
// present field of the wrong type with a FieldTypeError that names the field's path. The
// exception never leaves the translator: every public entry point catches it and returns an
// InvalidArgument Status.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "translator/json_view.h"

namespace flexcsi {
namespace translator {

using Json = nlohmann::json;

class FieldTypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of obj[key], or nullptr when obj is not an object, the key is absent or the value
// is null. The JsonView form answers the same for either parser's values, absent for nullptr.
const Json* FindField(const Json& obj, const char* key);
JsonView FindField(JsonView obj, const char* key);
Json* FindMutableField(Json& obj, const char* key);

// obj[key] as a string/bool/integer; the zero value when absent or null.
// Throws FieldTypeError (naming `path`) when present with another type.
std::string StringField(JsonView obj, const char* key, std::string_view path);
// The same without a copy: the view is valid as long as obj's value.
std::string_view StringViewField(JsonView obj, const char* key, std::string_view path);
bool BoolField(JsonView obj, const char* key, std::string_view path);
// REQUIRES: the value fits in int32 (Kubernetes' partition fields are int32).
int32_t Int32Field(JsonView obj, const char* key, std::string_view path);

// obj[key] if it is an object; nullptr (absent) when absent or null; throws for other types.
const Json* ObjectField(const Json& obj, const char* key, std::string_view path);
JsonView ObjectField(JsonView obj, const char* key, std::string_view path);
// obj[key] if it is an array; nullptr (absent) when absent or null; throws for other types.
const Json* ArrayField(const Json& obj, const char* key, std::string_view path);
JsonView ArrayField(JsonView obj, const char* key, std::string_view path);

// A map[string]string field (labels, annotations, volumeAttributes, parameters, options).
// Throws when a value is not a string.
std::map<std::string, std::string> StringMapField(JsonView obj, const char* key,
                                                  std::string_view path);
// A []string field. The Check form only validates it (null elements are "").
std::vector<std::string> StringListField(JsonView obj, const char* key, std::string_view path);
void CheckStringListField(JsonView obj, const char* key, std::string_view path);

// Looks a string up in a map[string]string field: sets *value (unless null) and returns true
// when present.
bool LookupStringInMap(JsonView obj, const char* map_key, std::string_view key,
                       std::string_view path, std::string* value);
// The same in the map itself, whose path is `path`.
bool LookupString(JsonView map, std::string_view key, std::string_view path, std::string* value);

// obj[key], turned into an empty object first when absent or null. REQUIRES: obj is an object.
// Throws when the existing value is not an object.
Json& EnsureObjectField(Json& obj, const char* key, std::string_view path);

// "string", "number", ... as Go's encoding/json names JSON types in its errors.
const char* JsonTypeName(JsonView value);

// Go's %q / %#v rendering of a string: double quotes with backslash escapes.
std::string GoQuote(const std::string& s);

// Throws FieldTypeError unless `value` is an object; used for the top-level object.
void RequireObject(JsonView value, const std::string& what);

}  // namespace translator
}  // namespace flexcsi
