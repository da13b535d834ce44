#include "translator/json_text_writer.h"

#include <charconv>
#include <cstring>

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

// Bytes a JSON string cannot hold as they are (quote, backslash, control characters) and
// non-ASCII bytes, which need a UTF-8 check.
struct ByteClass {
  bool special[256] = {};
  constexpr ByteClass() {
    for (int c = 0; c < 0x20; ++c) special[c] = true;
    special[static_cast<int>('"')] = true;
    special[static_cast<int>('\\')] = true;
    for (int c = 0x80; c < 256; ++c) special[c] = true;
  }
};
constexpr ByteClass kByteClass;

// Well-formed UTF-8 as nlohmann's decoder accepts it: shortest forms, no surrogates, at most
// U+10FFFF.
bool IsValidUtf8(const std::string& s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char* end = p + s.size();
  while (p < end) {
    unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3, min = 0x10000;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    unsigned cp = c & (0x3F >> extra);
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += extra + 1;
  }
  return true;
}

void AppendIndent(int spaces, std::string* out) { out->append(static_cast<size_t>(spaces), ' '); }

void AppendEscapedAscii(char c, std::string* out) {
  switch (c) {
    case '\b': out->append("\\b"); return;
    case '\t': out->append("\\t"); return;
    case '\n': out->append("\\n"); return;
    case '\f': out->append("\\f"); return;
    case '\r': out->append("\\r"); return;
    case '"': out->append("\\\""); return;
    case '\\': out->append("\\\\"); return;
    default: {
      static const char kHex[] = "0123456789abcdef";
      const char escape[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xf], kHex[c & 0xf]};
      out->append(escape, sizeof(escape));
    }
  }
}

void AppendNumber(const Json& value, std::string* out) {
  char buffer[32];
  std::to_chars_result r{};
  if (value.is_number_unsigned()) {
    r = std::to_chars(buffer, buffer + sizeof(buffer), value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    r = std::to_chars(buffer, buffer + sizeof(buffer), value.get<int64_t>());
  } else {
    // Floats are rare in Kubernetes objects; nlohmann's own shortest round-trip format.
    out->append(value.dump());
    return;
  }
  out->append(buffer, r.ptr);
}

void Append(const Json& value, bool pretty, int indent, std::string* out) {
  switch (value.type()) {
    case Json::value_t::object: {
      const auto& object = value.get_ref<const Json::object_t&>();
      if (object.empty()) {
        out->append("{}");
        return;
      }
      out->push_back('{');
      const int inner = indent + 2;
      bool first = true;
      for (const auto& [key, member] : object) {
        if (pretty) {
          out->append(first ? "\n" : ",\n");
          AppendIndent(inner, out);
        } else if (!first) {
          out->push_back(',');
        }
        first = false;
        AppendJsonString(key, out);
        out->append(pretty ? ": " : ":");
        Append(member, pretty, inner, out);
      }
      if (pretty) {
        out->push_back('\n');
        AppendIndent(indent, out);
      }
      out->push_back('}');
      return;
    }
    case Json::value_t::array: {
      const auto& array = value.get_ref<const Json::array_t&>();
      if (array.empty()) {
        out->append("[]");
        return;
      }
      out->push_back('[');
      const int inner = indent + 2;
      bool first = true;
      for (const Json& element : array) {
        if (pretty) {
          out->append(first ? "\n" : ",\n");
          AppendIndent(inner, out);
        } else if (!first) {
          out->push_back(',');
        }
        first = false;
        Append(element, pretty, inner, out);
      }
      if (pretty) {
        out->push_back('\n');
        AppendIndent(indent, out);
      }
      out->push_back(']');
      return;
    }
    case Json::value_t::string:
      AppendJsonString(value.get_ref<const std::string&>(), out);
      return;
    case Json::value_t::boolean:
      out->append(value.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      AppendNumber(value, out);
      return;
    case Json::value_t::null:
      out->append("null");
      return;
    default:
      out->append(value.dump(-1, ' ', false, Json::error_handler_t::replace));
      return;
  }
}

}  // namespace

void AppendJsonString(const std::string& s, std::string* out) {
  const char* p = s.data();
  const char* const end = p + s.size();
  bool checked_utf8 = false;
  const size_t start = out->size();
  out->push_back('"');
  while (p < end) {
    const char* run = p;
    while (p < end && !kByteClass.special[static_cast<unsigned char>(*p)]) ++p;
    out->append(run, p);
    if (p == end) break;
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c < 0x80) {
      AppendEscapedAscii(*p, out);
      ++p;
      continue;
    }
    // Valid UTF-8 is written as it is; anything else goes through nlohmann so that the
    // replacement characters land exactly where its serializer puts them.
    if (!checked_utf8) {
      if (!IsValidUtf8(s)) {
        out->resize(start);
        out->append(Json(s).dump(-1, ' ', false, Json::error_handler_t::replace));
        return;
      }
      checked_utf8 = true;
    }
    out->push_back(*p);
    ++p;
  }
  out->push_back('"');
}

void AppendJsonText(const nlohmann::json& value, JsonStyle style, int level, std::string* out) {
  Append(value, style == JsonStyle::kIndented, style == JsonStyle::kIndented ? 2 * level : 0,
         out);
}

}  // namespace translator
}  // namespace flexcsi
