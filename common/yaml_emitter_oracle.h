// The yaml-cpp emitter driven exactly as JsonToYaml drove it before common/yaml_writer.h
// replaced it: the oracle that yaml_writer_test and translate_fuzz hold the writer to, byte for
// byte. Test code only; nothing in the product includes it.
#pragma once

#include <string>

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

}  // namespace yaml_oracle
}  // namespace flexcsi
