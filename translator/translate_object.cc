#include "translator/translate_object.h"

namespace flexcsi {
namespace translator {
namespace command {

bool IsListKind(const Json& kind) {
  if (!kind.is_string()) return false;
  const std::string& k = kind.get_ref<const std::string&>();
  return k.size() >= 4 && k.compare(k.size() - 4, 4, "List") == 0;
}

bool IsList(const Json& doc) {
  if (!doc.is_object()) return false;
  auto kind = doc.find("kind");
  auto items = doc.find("items");
  if (kind == doc.end() || items == doc.end()) return false;
  return IsListKind(*kind) && (items->is_array() || items->is_null());
}

std::string KindOf(JsonView obj) {
  JsonView kind = obj.Find("kind");
  return kind.is_string() ? std::string(kind.string_value()) : std::string();
}

std::string NameOf(JsonView obj) {
  JsonView name = obj.Find("metadata").Find("name");
  if (!name.is_string()) name = obj.Find("name");  // pod volumes
  return name.is_string() ? std::string(name.string_value()) : std::string();
}

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
