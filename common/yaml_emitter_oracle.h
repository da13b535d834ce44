// The yaml-cpp emitter driven exactly as JsonToYaml drove it before common/yaml_writer.h
// replaced it: the oracle that yaml_writer_test and translate_fuzz hold the writer to, byte for
// byte wherever the emitter's text reads back as the value (JsonToYamlProblem). Test code only;
// nothing in the product includes it.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

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

// What is wrong with JsonToYaml(value), or "" when nothing is. It must write the emitter's bytes
// wherever those read back as the value, and text that reads back in any case. Where the emitter
// was wrong: DEL, a CR, NEL, U+2028 and U+2029 in a string (written raw; YAML 1.1 readers refuse
// DEL and break lines at the others), U+FFFE and U+FFFF (refused raw) and other non-characters
// (made U+FFFD), "---" or "..." and a blank at the start of a line, or as the whole document
// (document markers), quoted keys near the 1024-character limit of implicit keys (measured
// before quoting), and text that is not UTF-8 (written raw, which readers refuse).
// A value with no YAML text must still be written as text that reads (as something else); the
// emitter's text for one never read back, so it says nothing of what to write.
inline std::string JsonToYamlProblem(const Json& value) {
  const std::string written = JsonToYaml(value), emitted = OracleYaml(value);
  if (HasNoYamlText(value)) {
    return ParseYamlDocuments(written).ok() ? std::string() : "JsonToYaml's text does not read";
  }
  if (!ReadsBack(written, value)) return "JsonToYaml's text does not read back";
  if (written != emitted && ReadsBack(emitted, value)) {
    return "JsonToYaml's text is not the emitter's, which reads back";
  }
  return std::string();
}

}  // namespace yaml_oracle
}  // namespace flexcsi
