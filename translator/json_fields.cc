#include "translator/json_fields.h"

#include <limits>
#include <string_view>

namespace flexcsi {
namespace translator {
namespace {

[[noreturn]] void ThrowWrongType(std::string_view path, const char* want, JsonView got) {
  throw FieldTypeError("invalid field " + std::string(path) + ": expected " + want + ", got " +
                       JsonTypeName(got));
}

std::string Join(std::string_view path, std::string_view key) {
  std::string joined(path);
  if (!joined.empty()) joined += '.';
  joined += key;
  return joined;
}

}  // namespace

const char* JsonTypeName(JsonView value) {
  switch (value.type()) {
    case JsonView::Type::kAbsent:
    case JsonView::Type::kNull:
      return "null";
    case JsonView::Type::kObject:
      return "object";
    case JsonView::Type::kArray:
      return "array";
    case JsonView::Type::kString:
      return "string";
    case JsonView::Type::kBoolean:
      return "bool";
    case JsonView::Type::kInteger:
    case JsonView::Type::kUnsigned:
    case JsonView::Type::kFloat:
      return "number";
    case JsonView::Type::kOther:
      break;
  }
  return "binary";
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

JsonView FindField(JsonView obj, const char* key) {
  JsonView v = obj.Find(key);
  return v.is_null() ? JsonView() : v;
}

Json* FindMutableField(Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  Json::object_t& members = obj.get_ref<Json::object_t&>();
  auto it = members.find(std::string_view(key));
  if (it == members.end() || it->second.is_null()) return nullptr;
  return &it->second;
}

std::string_view StringViewField(JsonView obj, const char* key, std::string_view path) {
  JsonView v = FindField(obj, key);
  if (!v) return std::string_view();
  if (!v.is_string()) ThrowWrongType(Join(path, key), "string", v);
  return v.string_value();
}

std::string StringField(JsonView obj, const char* key, std::string_view path) {
  return std::string(StringViewField(obj, key, path));
}

bool BoolField(JsonView obj, const char* key, std::string_view path) {
  JsonView v = FindField(obj, key);
  if (!v) return false;
  if (!v.is_boolean()) ThrowWrongType(Join(path, key), "bool", v);
  return v.bool_value();
}

int32_t Int32Field(JsonView obj, const char* key, std::string_view path) {
  JsonView v = FindField(obj, key);
  if (!v) return 0;
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    int64_t n = v.int_value();
    if (n >= std::numeric_limits<int32_t>::min() && n <= std::numeric_limits<int32_t>::max()) {
      return static_cast<int32_t>(n);
    }
  } else if (v.is_number_unsigned()) {
    uint64_t n = v.unsigned_value();
    if (n <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return static_cast<int32_t>(n);
    }
  }
  ThrowWrongType(Join(path, key), "int32", v);
}

JsonView ObjectField(JsonView obj, const char* key, std::string_view path) {
  JsonView v = FindField(obj, key);
  if (v && !v.is_object()) ThrowWrongType(Join(path, key), "object", v);
  return v;
}

const Json* ObjectField(const Json& obj, const char* key, std::string_view path) {
  ObjectField(JsonView(obj), key, path);  // the type check
  return FindField(obj, key);
}

JsonView ArrayField(JsonView obj, const char* key, std::string_view path) {
  JsonView v = FindField(obj, key);
  if (v && !v.is_array()) ThrowWrongType(Join(path, key), "array", v);
  return v;
}

const Json* ArrayField(const Json& obj, const char* key, std::string_view path) {
  ArrayField(JsonView(obj), key, path);  // the type check
  return FindField(obj, key);
}

std::map<std::string, std::string> StringMapField(JsonView obj, const char* key,
                                                  std::string_view path) {
  std::map<std::string, std::string> out;
  JsonView m = ObjectField(obj, key, path);
  m.ForEachMember([&](std::string_view name, JsonView value) {
    if (value.is_null()) {
      out.emplace(name, std::string());
      return;
    }
    if (!value.is_string()) {
      ThrowWrongType(Join(Join(path, key), name), "string", value);
    }
    out.emplace(name, value.string_value());
  });
  return out;
}

void CheckStringListField(JsonView obj, const char* key, std::string_view path) {
  ArrayField(obj, key, path).ForEachElement([&](JsonView item) {
    if (item && !item.is_string()) ThrowWrongType(Join(path, key) + "[]", "string", item);
  });
}

std::vector<std::string> StringListField(JsonView obj, const char* key, std::string_view path) {
  CheckStringListField(obj, key, path);
  std::vector<std::string> out;
  JsonView a = FindField(obj, key);
  out.reserve(a.size());
  a.ForEachElement(
      [&](JsonView item) { out.emplace_back(item ? item.string_value() : std::string_view()); });
  return out;
}

bool LookupStringInMap(JsonView obj, const char* map_key, std::string_view key,
                       std::string_view path, std::string* value) {
  JsonView m = ObjectField(obj, map_key, path);
  return m && LookupString(m, key, Join(path, map_key), value);
}

bool LookupString(JsonView map, std::string_view key, std::string_view path, std::string* value) {
  JsonView v = map.Find(key);
  if (!v.present()) return false;
  if (v.is_null()) {
    if (value != nullptr) value->clear();
    return true;
  }
  if (!v.is_string()) ThrowWrongType(Join(path, key), "string", v);
  if (value != nullptr) *value = std::string(v.string_value());
  return true;
}

Json& EnsureObjectField(Json& obj, const char* key, std::string_view path) {
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

void RequireObject(JsonView value, const std::string& what) {
  if (!value.is_object()) {
    throw FieldTypeError(what + " must be a JSON object, got " + JsonTypeName(value));
  }
}

}  // namespace translator
}  // namespace flexcsi
