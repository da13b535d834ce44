#include "common/yaml_reader.h"

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <yaml.h>

#include "common/yaml_json.h"
#include "common/yaml_scalar.h"

namespace flexcsi {
namespace {

using Json = nlohmann::json;

// Where a node starts, 0-based as libyaml counts; messages print it 1-based.
struct Mark {
  size_t line = 0;
  size_t column = 0;
};

Mark MarkOf(const yaml_event_t& event) {
  return Mark{event.start_mark.line, event.start_mark.column};
}

std::string At(const Mark& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

Status Invalid(const Mark& mark, const std::string& what) {
  return InvalidArgument("invalid YAML: " + At(mark) + ": " + what);
}

// Builds one JSON value per document from parser events, with our limits. Anchors are looked
// up by name within the document, like go-yaml does.
class JsonDocumentBuilder {
 public:
  explicit JsonDocumentBuilder(size_t max_nodes) : max_nodes_(max_nodes) {}

  void StartDocument() {
    root_ = Json();
    stack_.clear();
    anchors_.clear();
  }

  // The document just built (null for an empty one).
  Json TakeDocument() { return std::move(root_); }

  Status Scalar(const yaml_event_t& event) {
    const auto& s = event.data.scalar;
    std::string text(reinterpret_cast<const char*>(s.value), s.length);
    const char* tag = reinterpret_cast<const char*>(s.tag);
    bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
    // Untagged scalars get the non-specific tag "?" (plain) or "!" (quoted, block), as yaml-cpp
    // did; "!" and !!str keep the text, every other tag resolves it like a plain scalar.
    bool keep_text = tag != nullptr ? std::strcmp(tag, "!") == 0 ||
                                          std::strcmp(tag, "tag:yaml.org,2002:str") == 0
                                    : !plain;
    Json value;
    // yaml-cpp 0.7 reported untagged plain null words as null nodes, which became the key "null"
    // whatever their spelling; the previous reader's rule, kept.
    if (tag == nullptr && plain && IsYamlNullWord(text)) {
      value = nullptr;
      text = "null";  // the key a null node became
    } else if (keep_text) {
      value = text;
    } else {
      value = ResolvePlainScalar(text);
    }
    FLEXCSI_RETURN_IF_ERROR(Count(1));
    if (const char* anchor = Anchor(event.data.scalar.anchor)) {
      anchors_[anchor] = Anchored{value, 1};
    }
    return Place(std::move(value), &text, MarkOf(event));
  }

  Status Alias(const yaml_event_t& event) {
    const char* name = reinterpret_cast<const char*>(event.data.alias.anchor);
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      for (const Frame& frame : stack_) {
        if (frame.anchor == name) {
          return Invalid(MarkOf(event), "anchor '" + frame.anchor + "' value contains itself");
        }
      }
      return Invalid(MarkOf(event), "unknown anchor '" + std::string(name) + "' referenced");
    }
    FLEXCSI_RETURN_IF_ERROR(Count(it->second.nodes));
    return Place(it->second.value, nullptr, MarkOf(event));
  }

  Status Open(Json container, const yaml_char_t* anchor_text, const Mark& mark) {
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key) {
      return Invalid(mark, "mapping keys must be scalars");
    }
    if (stack_.size() >= static_cast<size_t>(kMaxNestingDepth)) {
      return InvalidArgument("YAML input is nested deeper than " +
                             std::to_string(kMaxNestingDepth) + " levels");
    }
    FLEXCSI_RETURN_IF_ERROR(Count(1));
    const char* anchor = Anchor(anchor_text);
    // A redefined anchor is not the old value inside its own node: "&x [*x]" is an error.
    if (anchor != nullptr) anchors_.erase(anchor);
    stack_.push_back(Frame{std::move(container), anchor != nullptr ? anchor : "", nodes_, mark,
                           false, std::string()});
    return Status::Ok();
  }

  Status Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (!frame.anchor.empty()) {
      anchors_[frame.anchor] = Anchored{frame.value, nodes_ - frame.nodes_at_start + 1};
    }
    return Place(std::move(frame.value), nullptr, frame.mark);
  }

 private:
  struct Frame {
    Json value;
    std::string anchor;  // empty: none
    size_t nodes_at_start;
    Mark mark;
    bool have_key = false;
    std::string key;
  };
  struct Anchored {
    Json value;
    size_t nodes;  // what one alias to it adds to the budget
  };

  static const char* Anchor(const yaml_char_t* anchor) {
    return reinterpret_cast<const char*>(anchor);
  }

  Status Count(size_t n) {
    nodes_ += n;
    if (nodes_ > max_nodes_) {
      return InvalidArgument("YAML input expands to more than " + std::to_string(max_nodes_) +
                             " nodes (alias bomb?)");
    }
    return Status::Ok();
  }

  // Puts a finished value into its parent. `scalar_text` is the scalar's source text, which is
  // what a mapping key becomes ("1: x" has the key "1"); null for collections and aliases.
  Status Place(Json value, std::string* scalar_text, const Mark& mark) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return Status::Ok();
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else if (!top.have_key) {
      if (scalar_text == nullptr) return Invalid(mark, "mapping keys must be scalars");
      top.key =
          value.is_string() ? std::move(value.get_ref<std::string&>()) : std::move(*scalar_text);
      top.have_key = true;
    } else {
      top.value[top.key] = std::move(value);
      top.have_key = false;
    }
    return Status::Ok();
  }

  size_t max_nodes_;
  size_t nodes_ = 0;
  Json root_;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, Anchored> anchors_;
};

// libyaml's parser and its current event, released on every path.
class EventParser {
 public:
  explicit EventParser(const std::string& text) {
    std::memset(&event_, 0, sizeof event_);
    initialized_ = yaml_parser_initialize(&parser_) != 0;
    if (initialized_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~EventParser() {
    yaml_event_delete(&event_);
    if (initialized_) yaml_parser_delete(&parser_);
  }
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  bool initialized() const { return initialized_; }

  // The next event, or null on a syntax error (see Error).
  const yaml_event_t* Next() {
    yaml_event_delete(&event_);
    if (yaml_parser_parse(&parser_, &event_) == 0) return nullptr;
    return &event_;
  }

  // The parser's error in our shape: "invalid YAML: line L, column C: <problem> (<context>)".
  Status Error(const std::string& text) const {
    const char* problem = parser_.problem != nullptr ? parser_.problem : "unknown problem";
    std::string what = problem;
    if (parser_.context != nullptr) what += std::string(" (") + parser_.context + ")";
    switch (parser_.error) {
      case YAML_MEMORY_ERROR:
        return InvalidArgument("invalid YAML: out of memory");
      case YAML_READER_ERROR:
        // Reader errors (bad encoding, control characters) come with a byte offset only.
        return Invalid(MarkAtOffset(text, parser_.problem_offset), what);
      default:
        return Invalid(Mark{parser_.problem_mark.line, parser_.problem_mark.column}, what);
    }
  }

 private:
  // Line and column (in characters, as libyaml counts) of a byte offset into UTF-8 text.
  static Mark MarkAtOffset(const std::string& text, size_t offset) {
    Mark mark;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '\n') {
        ++mark.line;
        mark.column = 0;
      } else if ((c & 0xC0) != 0x80) {
        ++mark.column;
      }
    }
    return mark;
  }

  yaml_parser_t parser_;
  yaml_event_t event_;
  bool initialized_ = false;
};

}  // namespace

StatusOr<std::vector<nlohmann::json>> ReadYamlDocuments(const std::string& text) {
  EventParser parser(text);
  if (!parser.initialized()) return InvalidArgument("invalid YAML: out of memory");
  // Without aliases a document cannot have more nodes than bytes; twice the size is the budget.
  JsonDocumentBuilder builder(1000 + 2 * text.size());
  std::vector<Json> docs;
  for (;;) {
    const yaml_event_t* event = parser.Next();
    if (event == nullptr) return parser.Error(text);
    switch (event->type) {
      case YAML_STREAM_END_EVENT:
        return docs;
      case YAML_DOCUMENT_START_EVENT:
        builder.StartDocument();
        break;
      case YAML_DOCUMENT_END_EVENT: {
        Json doc = builder.TakeDocument();
        if (!doc.is_null()) docs.push_back(std::move(doc));
        break;
      }
      case YAML_ALIAS_EVENT:
        FLEXCSI_RETURN_IF_ERROR(builder.Alias(*event));
        break;
      case YAML_SCALAR_EVENT:
        FLEXCSI_RETURN_IF_ERROR(builder.Scalar(*event));
        break;
      case YAML_SEQUENCE_START_EVENT:
        FLEXCSI_RETURN_IF_ERROR(
            builder.Open(Json::array(), event->data.sequence_start.anchor, MarkOf(*event)));
        break;
      case YAML_MAPPING_START_EVENT:
        FLEXCSI_RETURN_IF_ERROR(
            builder.Open(Json::object(), event->data.mapping_start.anchor, MarkOf(*event)));
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        FLEXCSI_RETURN_IF_ERROR(builder.Close());
        break;
      default:  // stream start, nothing to build
        break;
    }
  }
}

}  // namespace flexcsi
