#include "kube/kubeconfig_fields.h"

#include <filesystem>

#include "common/base64.h"

namespace flexcsi::kube::kubeconfig {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string ResolveAgainst(const std::string& origin, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || origin.empty()) return path;
  std::error_code ec;
  fs::path base = fs::absolute(fs::path(origin).parent_path(), ec);
  return (base / path).lexically_normal().string();
}

StatusOr<std::string> StringField(const Json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || object[key].is_null()) return std::string();
  if (!object[key].is_string()) {
    return InvalidArgument(where + "." + key + ": expected a string");
  }
  return object[key].get<std::string>();
}

StatusOr<bool> BoolField(const Json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || object[key].is_null()) return false;
  if (!object[key].is_boolean())
    return InvalidArgument(where + "." + key + ": expected true or false");
  return object[key].get<bool>();
}

StatusOr<std::string> DataField(const Json& object, const char* key, const std::string& where) {
  StatusOr<std::string> text = StringField(object, key, where);
  if (!text.ok() || text->empty()) return text;
  StatusOr<std::string> decoded = Base64DecodeStandard(*text);
  if (!decoded.ok()) return InvalidArgument(where + "." + key + ": not valid base64");
  return *decoded;
}

}  // namespace flexcsi::kube::kubeconfig
