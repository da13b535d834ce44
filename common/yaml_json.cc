#include "common/yaml_json.h"

#include <cerrno>
#include <exception>
#include <fstream>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

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

// Thrown by JsonEventBuilder; caught in ParseYamlDocuments.
class YamlBuildError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds one JSON value per YAML document from yaml-cpp parser events.
class JsonEventBuilder : public YAML::EventHandler {
 public:
  explicit JsonEventBuilder(size_t max_nodes) : max_nodes_(max_nodes) {}

  // The document just parsed (null for an empty one); resets the builder for the next.
  Json TakeDocument() {
    Json doc = std::move(root_);
    root_ = Json();
    stack_.clear();
    return doc;
  }

  void OnDocumentStart(const YAML::Mark&) override {
    root_ = Json();
    stack_.clear();
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    Add(Json(nullptr), "null", anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) Fail(mark, "unknown alias");
    Count(it->second.nodes);
    Place(it->second.value, nullptr, mark);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
    Add(quoted ? Json(value) : ResolvePlainScalar(value), value, anchor, mark);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(Json::array(), anchor, mark);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(Json::object(), anchor, mark);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    Json value;
    YAML::anchor_t anchor;
    size_t nodes_at_start;
    YAML::Mark mark;
    bool have_key = false;
    std::string key;
  };
  struct Anchored {
    Json value;
    size_t nodes;
  };

  [[noreturn]] static void Fail(const YAML::Mark& mark, const std::string& what) {
    throw YamlBuildError("invalid YAML: line " + std::to_string(mark.line + 1) + ", column " +
                         std::to_string(mark.column + 1) + ": " + what);
  }

  void Count(size_t n) {
    nodes_ += n;
    if (nodes_ > max_nodes_) {
      throw YamlBuildError("YAML input expands to more than " + std::to_string(max_nodes_) +
                           " nodes (alias bomb?)");
    }
  }

  void Add(Json value, const std::string& text, YAML::anchor_t anchor,
           const YAML::Mark& mark = YAML::Mark()) {
    Count(1);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{value, 1};
    Place(std::move(value), &text, mark);
  }

  // Puts a finished value into its parent. `scalar_text` is the scalar's source text, which is
  // what a mapping key becomes ("1: x" has the key "1").
  void Place(Json value, const std::string* scalar_text, const YAML::Mark& mark) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else if (!top.have_key) {
      if (scalar_text == nullptr) Fail(mark, "mapping keys must be scalars");
      top.key = value.is_string() ? value.get<std::string>() : *scalar_text;
      top.have_key = true;
    } else {
      top.value[top.key] = std::move(value);
      top.have_key = false;
    }
  }

  void Open(Json container, YAML::anchor_t anchor, const YAML::Mark& mark) {
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key) {
      Fail(mark, "mapping keys must be scalars");
    }
    if (stack_.size() >= static_cast<size_t>(kMaxNestingDepth)) {
      throw YamlBuildError("YAML input is nested deeper than " + std::to_string(kMaxNestingDepth) +
                           " levels");
    }
    Count(1);
    stack_.push_back(Frame{std::move(container), anchor, nodes_, mark, false, std::string()});
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.anchor != YAML::NullAnchor) {
      anchors_[frame.anchor] = Anchored{frame.value, nodes_ - frame.nodes_at_start + 1};
    }
    Place(std::move(frame.value), nullptr, frame.mark);
  }

  size_t max_nodes_;
  size_t nodes_ = 0;
  Json root_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
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
  // Documents are built from parser events rather than with YAML::LoadAll: LoadAll never
  // returns on some malformed input (yaml-cpp 0.7 keeps producing empty documents after stray
  // characters, found by translate_fuzz), and events let us bound depth and alias expansion
  // while building.
  std::istringstream stream(text);
  std::vector<Json> docs;
  try {
    YAML::Parser parser(stream);
    JsonEventBuilder builder(1000 + 2 * text.size());
    // Every document consumes at least one byte of input; more documents than bytes means the
    // parser is no longer advancing.
    size_t documents = 0;
    while (parser.HandleNextDocument(builder)) {
      if (++documents > text.size() + 1) {
        return InvalidArgument("invalid YAML: the parser stopped advancing (stray characters?)");
      }
      Json doc = builder.TakeDocument();
      if (!doc.is_null()) docs.push_back(std::move(doc));
    }
  } catch (const YamlBuildError& e) {
    return InvalidArgument(e.what());
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("invalid YAML: ") + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("invalid YAML: ") + e.what());
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
