// The YAML reader as it was before common/yaml_reader.h moved it to libyaml: yaml-cpp 0.7's event
// parser feeding the same JSON builder rules. yaml_reader_parity_test holds the libyaml reader to
// it. Test code only; nothing in the product includes it.
#pragma once

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/yaml_json.h"
#include "common/yaml_scalar.h"

namespace flexcsi {
namespace yaml_reader_oracle {

using Json = nlohmann::json;

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

inline StatusOr<std::vector<nlohmann::json>> OracleParseYamlDocuments(const std::string& text) {
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

}  // namespace yaml_reader_oracle
}  // namespace flexcsi
