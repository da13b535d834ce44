// Typed access to the fields of Kubernetes objects held as nlohmann::json.
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
#include <vector>

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace translator {

using Json = nlohmann::json;

class FieldTypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of obj[key], or nullptr when obj is not an object, the key is absent or the value
// is null.
const Json* FindField(const Json& obj, const char* key);
Json* FindMutableField(Json& obj, const char* key);

// obj[key] as a string/bool/integer; the zero value when absent or null.
// Throws FieldTypeError (naming `path`) when present with another type.
std::string StringField(const Json& obj, const char* key, const std::string& path);
bool BoolField(const Json& obj, const char* key, const std::string& path);
// REQUIRES: the value fits in int32 (Kubernetes' partition fields are int32).
int32_t Int32Field(const Json& obj, const char* key, const std::string& path);

// obj[key] if it is an object; nullptr when absent or null; throws for other types.
const Json* ObjectField(const Json& obj, const char* key, const std::string& path);
// obj[key] if it is an array; nullptr when absent or null; throws for other types.
const Json* ArrayField(const Json& obj, const char* key, const std::string& path);

// A map[string]string field (labels, annotations, volumeAttributes, parameters, options).
// Throws when a value is not a string.
std::map<std::string, std::string> StringMapField(const Json& obj, const char* key,
                                                  const std::string& path);
// A []string field.
std::vector<std::string> StringListField(const Json& obj, const char* key, const std::string& path);

// Looks a string up in a map[string]string field: sets *value and returns true when present.
bool LookupStringInMap(const Json& obj, const char* map_key, const std::string& key,
                       const std::string& path, std::string* value);

// obj[key], turned into an empty object first when absent or null. REQUIRES: obj is an object.
// Throws when the existing value is not an object.
Json& EnsureObjectField(Json& obj, const char* key, const std::string& path);

// "string", "number", ... as Go's encoding/json names JSON types in its errors.
const char* JsonTypeName(const Json& value);

// Go's %q / %#v rendering of a string: double quotes with backslash escapes.
std::string GoQuote(const std::string& s);

// Throws FieldTypeError unless `value` is an object; used for the top-level object.
void RequireObject(const Json& value, const std::string& what);

}  // namespace translator
}  // namespace flexcsi
