#include "common/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace flexcsi {
namespace {

// YAML 1.2 core schema resolution of a plain (unquoted) scalar.
nlohmann::json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  errno = 0;
  char* end = nullptr;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end != s.c_str() && *end == '\0') return i;
  const bool looks_numeric = s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  if (looks_numeric) {
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (errno == 0 && end != s.c_str() && *end == '\0') return d;
  }
  return s;
}

StatusOr<nlohmann::json> ToJson(const YAML::Node& node, int depth) {
  // Bounds recursion on hostile input (deeply nested flow sequences).
  if (depth > 256) return InvalidArgument("YAML nesting deeper than 256 levels");
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nlohmann::json(nullptr);
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!" and leaves plain ones "?".
      if (node.Tag() == "!") return nlohmann::json(node.Scalar());
      return PlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) {
        auto v = ToJson(item, depth + 1);
        if (!v.ok()) return v.status();
        out.push_back(std::move(*v));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return InvalidArgument("YAML map keys must be scalars");
        auto v = ToJson(kv.second, depth + 1);
        if (!v.ok()) return v.status();
        out[kv.first.Scalar()] = std::move(*v);
      }
      return out;
    }
  }
  return nlohmann::json(nullptr);
}

}  // namespace

StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text) {
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("malformed YAML/JSON at line " + std::to_string(e.mark.line + 1) +
                           ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  std::vector<nlohmann::json> docs;
  for (const auto& node : nodes) {
    auto j = ToJson(node, 0);
    if (!j.ok()) return j.status();
    docs.push_back(std::move(*j));
  }
  return docs;
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
