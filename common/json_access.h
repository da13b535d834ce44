// Reading API objects (nlohmann::json in the API's own shape) without exceptions: a missing or
// mistyped field reads as empty. Shared by flexcsi-controller and the bridge's node registration.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace flexcsi {

// The string at j[key], or "" when j is not an object or the field is missing or not a string.
inline std::string JStr(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// j[key], or null when j is not an object or has no such field.
inline const nlohmann::json& JField(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

}  // namespace flexcsi
