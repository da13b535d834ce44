// The yaml-cpp emitter driven exactly as JsonToYaml drove it before common/yaml_writer.h
// replaced it: the oracle that yaml_writer_test and translate_fuzz hold the writer to, byte for
// byte wherever the emitter's text reads back as the value (JsonToYamlProblem). Test code only;
// nothing in the product includes it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "common/utf8.h"
#include "common/yaml_json.h"

namespace flexcsi {
namespace yaml_oracle {

using Json = nlohmann::json;

inline void OracleEmit(YAML::Emitter& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out << YAML::Key;
        if (YamlStringNeedsQuotes(it.key())) out << YAML::DoubleQuoted;
        out << it.key() << YAML::Value;
        OracleEmit(out, *it);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const Json& item : value) OracleEmit(out, item);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (YamlStringNeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      return;
    }
    case Json::value_t::null:
      out << YAML::Null;
      return;
    case Json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      return;
    default:
      out << value.dump();
      return;
  }
}

// What JsonToYaml returned when it used yaml-cpp's emitter.
inline std::string OracleYaml(const Json& value) {
  YAML::Emitter out;
  OracleEmit(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

// Whether `text` reads back as `value` (a null document reads back as no document).
inline bool ReadsBack(const std::string& text, const Json& value) {
  StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return false;
  if (value.is_null()) return docs->empty();
  return docs->size() == 1 && (*docs)[0] == value;
}

// Values no YAML text reads back as: non-finite floats (nlohmann writes them as null) and
// strings that are not UTF-8 (both writers put U+FFFD in place of the bad bytes).
inline bool HasNoYamlText(const Json& value) {
  if (value.is_number_float()) return !std::isfinite(value.get<double>());
  try {
    (void)value.dump();  // throws on a string that is not UTF-8, keys included
  } catch (const Json::type_error&) {
    return true;
  }
  if (!value.is_structured()) return false;
  for (const Json& v : value) {
    if (HasNoYamlText(v)) return true;
  }
  return false;
}

// Whether `s` holds something the emitter wrote in a way that does not always read back: DEL, a
// CR, C1 controls (NEL among them), U+2028 and U+2029 (written raw; YAML 1.1 readers refuse DEL
// and C1 and break lines at the others, which in some places fold back and in others do not),
// non-characters (made U+FFFD, or U+FFFE and U+FFFF raw, which readers refuse), text that is
// not UTF-8 (written raw), or a leading "---" or "..." (document markers at the start of a
// line). Keys past the implicit-key limit as written need no exemption: the emitter's text for
// them does not read back.
inline bool EmitterMayBeWrong(const std::string& s) {
  if (!IsValidUtf8(s) || s.rfind("---", 0) == 0 || s.rfind("...", 0) == 0) {
    return true;
  }
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int length = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = length == 1 ? c : c & (0x7F >> length);
    for (int k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += length;
    if (cp == 0x7F || cp == '\r' || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
        (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE) {
      return true;
    }
  }
  return false;
}

inline bool EmitterMayBeWrong(const Json& value) {
  if (value.is_string()) return EmitterMayBeWrong(value.get_ref<const std::string&>());
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (EmitterMayBeWrong(it.key()) || EmitterMayBeWrong(*it)) return true;
    }
  } else if (value.is_array()) {
    for (const Json& v : value) {
      if (EmitterMayBeWrong(v)) return true;
    }
  }
  return false;
}

// What is wrong with JsonToYaml(value), or "" when nothing is: its text must read back as the
// value (or, for a value no text reads back as, read at all), and be the emitter's bytes where
// those read back too, unless the value holds something the emitter may have written wrong
// (where the emitter's text reads back in one place and not in another). Escapes can take a
// quoted key past the implicit-key limit at any length, which ReadsBack(emitted) covers.
inline std::string JsonToYamlProblem(const Json& value) {
  const std::string written = JsonToYaml(value);
  if (HasNoYamlText(value)) {
    if (!ParseYamlDocuments(written).ok()) return "JsonToYaml's text does not read";
  } else if (!ReadsBack(written, value)) {
    return "JsonToYaml's text does not read back";
  }
  const std::string emitted = OracleYaml(value);
  if (written != emitted && !EmitterMayBeWrong(value) && ReadsBack(emitted, value)) {
    return "JsonToYaml's text is not the emitter's, which reads back";
  }
  return std::string();
}

}  // namespace yaml_oracle
}  // namespace flexcsi
