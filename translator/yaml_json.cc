#include "translator/yaml_json.h"

#include <cerrno>
#include <cstdlib>
#include <exception>

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

// Alias expansion can turn a few kilobytes of YAML into billions of nodes. Without aliases a
// document cannot have more nodes than bytes, so text gets a budget of twice its size; an
// already parsed node (no text to measure) gets a fixed one.
constexpr size_t kMaxYamlNodesWithoutText = 20 * 1000 * 1000;

bool IsDecimalInteger(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool IsFloat(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// The YAML 1.2 core schema resolution of a plain scalar.
Json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsDecimalInteger(s)) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0) return static_cast<int64_t>(v);
    if (s[0] != '-') {
      errno = 0;
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0) return static_cast<uint64_t>(u);
    }
    return std::strtod(s.c_str(), nullptr);
  }
  if (IsFloat(s)) return std::strtod(s.c_str(), nullptr);
  return s;
}

class YamlConverter {
 public:
  explicit YamlConverter(size_t max_nodes) : max_nodes_(max_nodes) {}

  Status Convert(const YAML::Node& node, int depth, Json* out) {
    if (++nodes_ > max_nodes_) {
      return InvalidArgument("YAML input expands to more than " + std::to_string(max_nodes_) +
                             " nodes (alias bomb?)");
    }
    if (depth > kMaxNestingDepth) {
      return InvalidArgument("YAML input is nested deeper than " +
                             std::to_string(kMaxNestingDepth) + " levels");
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        *out = nullptr;
        return Status::Ok();
      case YAML::NodeType::Scalar: {
        const std::string& tag = node.Tag();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") {
          *out = node.Scalar();
        } else {
          *out = ResolvePlainScalar(node.Scalar());
        }
        return Status::Ok();
      }
      case YAML::NodeType::Sequence: {
        *out = Json::array();
        for (const YAML::Node& item : node) {
          Json value;
          FLEXCSI_RETURN_IF_ERROR(Convert(item, depth + 1, &value));
          out->push_back(std::move(value));
        }
        return Status::Ok();
      }
      case YAML::NodeType::Map: {
        *out = Json::object();
        for (const auto& entry : node) {
          if (!entry.first.IsScalar()) {
            return InvalidArgument("YAML mapping keys must be scalars (line " +
                                   std::to_string(entry.first.Mark().line + 1) + ")");
          }
          Json value;
          FLEXCSI_RETURN_IF_ERROR(Convert(entry.second, depth + 1, &value));
          (*out)[entry.first.Scalar()] = std::move(value);
        }
        return Status::Ok();
      }
    }
    return InvalidArgument("unsupported YAML node");
  }

 private:
  size_t max_nodes_;
  size_t nodes_ = 0;
};

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  Json resolved = ResolvePlainScalar(s);
  if (!resolved.is_string()) return true;
  // YAML 1.1 readers (goyaml v2, used by kubectl) also take these as booleans.
  static const char* const kYaml11Words[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no",
                                             "No", "NO", "on", "On", "ON", "off", "Off", "OFF"};
  for (const char* w : kYaml11Words) {
    if (s == w) return true;
  }
  return false;
}

void Emit(YAML::Emitter& out, const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out << YAML::Key;
        if (NeedsQuotes(it.key())) out << YAML::DoubleQuoted;
        out << it.key() << YAML::Value;
        Emit(out, *it);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const Json& item : value) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
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

// The nesting depth of JSON text, counted without parsing; nlohmann's recursive serializer
// must never see a value deeper than kMaxNestingDepth.
bool JsonTooDeep(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNestingDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

std::string StripNlohmannPrefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
  if (!what.empty() && what[0] == '[') {
    size_t close = what.find("] ");
    if (close != std::string::npos) return what.substr(close + 2);
  }
  return what;
}

}  // namespace

StatusOr<nlohmann::json> ParseJsonText(const std::string& text) {
  if (JsonTooDeep(text)) {
    return InvalidArgument("invalid JSON: nested deeper than " + std::to_string(kMaxNestingDepth) +
                           " levels");
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidArgument("invalid JSON: " + StripNlohmannPrefix(e.what()));
  }
}

StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("invalid YAML: ") + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("invalid YAML: ") + e.what());
  }
  std::vector<Json> docs;
  YamlConverter converter(1000 + 2 * text.size());
  for (const YAML::Node& node : nodes) {
    if (node.IsNull()) continue;
    Json doc;
    Status s = converter.Convert(node, 0, &doc);
    if (!s.ok()) return s;
    docs.push_back(std::move(doc));
  }
  return docs;
}

StatusOr<nlohmann::json> YamlNodeToJson(const YAML::Node& node) {
  Json out;
  YamlConverter converter(kMaxYamlNodesWithoutText);
  try {
    FLEXCSI_RETURN_IF_ERROR(converter.Convert(node, 0, &out));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("invalid YAML: ") + e.what());
  }
  return out;
}

std::string JsonToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  Emit(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

bool LooksLikeJson(const std::string& text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string::npos && (text[i] == '{' || text[i] == '[');
}

}  // namespace translator
}  // namespace flexcsi
