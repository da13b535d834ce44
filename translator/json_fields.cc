#include "translator/json_fields.h"

#include <limits>
#include <string_view>

namespace flexcsi {
namespace translator {
namespace {

[[noreturn]] void ThrowWrongType(const std::string& path, const char* want, const Json& got) {
  throw FieldTypeError("invalid field " + path + ": expected " + want + ", got " +
                       JsonTypeName(got));
}

std::string Join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

}  // namespace

const char* JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    default:
      return "binary";
  }
}

// Looked up as a string_view (the map's comparator is transparent): nlohmann's find(const
// char*) builds a std::string, an allocation for keys like "gcePersistentDisk".
const Json* FindField(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const Json::object_t& members = obj.get_ref<const Json::object_t&>();
  auto it = members.find(std::string_view(key));
  if (it == members.end() || it->second.is_null()) return nullptr;
  return &it->second;
}

Json* FindMutableField(Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  Json::object_t& members = obj.get_ref<Json::object_t&>();
  auto it = members.find(std::string_view(key));
  if (it == members.end() || it->second.is_null()) return nullptr;
  return &it->second;
}

std::string StringField(const Json& obj, const char* key, const std::string& path) {
  const Json* v = FindField(obj, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) ThrowWrongType(Join(path, key), "string", *v);
  return v->get_ref<const std::string&>();
}

bool BoolField(const Json& obj, const char* key, const std::string& path) {
  const Json* v = FindField(obj, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) ThrowWrongType(Join(path, key), "bool", *v);
  return v->get<bool>();
}

int32_t Int32Field(const Json& obj, const char* key, const std::string& path) {
  const Json* v = FindField(obj, key);
  if (v == nullptr) return 0;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    int64_t n = v->get<int64_t>();
    if (n >= std::numeric_limits<int32_t>::min() && n <= std::numeric_limits<int32_t>::max()) {
      return static_cast<int32_t>(n);
    }
  } else if (v->is_number_unsigned()) {
    uint64_t n = v->get<uint64_t>();
    if (n <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return static_cast<int32_t>(n);
    }
  }
  ThrowWrongType(Join(path, key), "int32", *v);
}

const Json* ObjectField(const Json& obj, const char* key, const std::string& path) {
  const Json* v = FindField(obj, key);
  if (v != nullptr && !v->is_object()) ThrowWrongType(Join(path, key), "object", *v);
  return v;
}

const Json* ArrayField(const Json& obj, const char* key, const std::string& path) {
  const Json* v = FindField(obj, key);
  if (v != nullptr && !v->is_array()) ThrowWrongType(Join(path, key), "array", *v);
  return v;
}

std::map<std::string, std::string> StringMapField(const Json& obj, const char* key,
                                                  const std::string& path) {
  std::map<std::string, std::string> out;
  const Json* m = ObjectField(obj, key, path);
  if (m == nullptr) return out;
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (it->is_null()) {
      out.emplace(it.key(), std::string());
      continue;
    }
    if (!it->is_string()) ThrowWrongType(Join(path, key) + "." + it.key(), "string", *it);
    out.emplace(it.key(), it->get<std::string>());
  }
  return out;
}

std::vector<std::string> StringListField(const Json& obj, const char* key,
                                         const std::string& path) {
  std::vector<std::string> out;
  const Json* a = ArrayField(obj, key, path);
  if (a == nullptr) return out;
  out.reserve(a->size());
  for (const Json& item : *a) {
    if (item.is_null()) {
      out.emplace_back();
      continue;
    }
    if (!item.is_string()) ThrowWrongType(Join(path, key) + "[]", "string", item);
    out.push_back(item.get<std::string>());
  }
  return out;
}

bool LookupStringInMap(const Json& obj, const char* map_key, const std::string& key,
                       const std::string& path, std::string* value) {
  const Json* m = ObjectField(obj, map_key, path);
  if (m == nullptr) return false;
  auto it = m->find(key);
  if (it == m->end()) return false;
  if (it->is_null()) {
    value->clear();
    return true;
  }
  if (!it->is_string()) ThrowWrongType(Join(path, map_key) + "." + key, "string", *it);
  *value = it->get<std::string>();
  return true;
}

Json& EnsureObjectField(Json& obj, const char* key, const std::string& path) {
  Json& v = obj[key];
  if (v.is_null()) v = Json::object();
  if (!v.is_object()) ThrowWrongType(Join(path, key), "object", v);
  return v;
}

std::string GoQuote(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

void RequireObject(const Json& value, const std::string& what) {
  if (!value.is_object()) {
    throw FieldTypeError(what + " must be a JSON object, got " + JsonTypeName(value));
  }
}

}  // namespace translator
}  // namespace flexcsi
