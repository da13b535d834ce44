#include "common/yaml_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/yaml_reader.h"
#include "common/yaml_scalar.h"
#include "common/yaml_writer.h"

namespace flexcsi {
namespace {

using Json = nlohmann::json;

// Alias expansion can turn a few kilobytes of YAML into billions of nodes. Without aliases a
// document cannot have more nodes than bytes, so text gets a budget of twice its size; an
// already parsed node (no text to measure) gets a fixed one.
constexpr size_t kMaxYamlNodesWithoutText = 20 * 1000 * 1000;

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
  return ReadYamlDocuments(text);
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

bool YamlStringNeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  Json resolved = ResolvePlainScalar(s);
  if (!resolved.is_string()) return true;
  // YAML 1.1 readers (goyaml v2, used by kubectl) also take these as booleans.
  static const char* const kYaml11Words[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                             "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
  for (const char* w : kYaml11Words) {
    if (s == w) return true;
  }
  return false;
}

std::string JsonToYaml(const nlohmann::json& value) {
  std::string text;
  AppendJsonAsYaml(value, &YamlStringNeedsQuotes, &text);
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

bool LooksLikeJson(const std::string& text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string::npos && (text[i] == '{' || text[i] == '[');
}

StatusOr<nlohmann::json> ParseYamlDocument(const std::string& text) {
  auto docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return InvalidArgument("the document is empty");
  if (docs->size() > 1) {
    return InvalidArgument("expected one document, found " + std::to_string(docs->size()));
  }
  return std::move(docs->front());
}

StatusOr<nlohmann::json> LoadYamlFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto doc = ParseYamlDocument(buffer.str());
  if (!doc.ok()) return doc.status().WithContext(path);
  return doc;
}

}  // namespace flexcsi
