#include "translator/json_text_writer.h"

#include <charconv>
#include <cstring>

#include "common/utf8.h"

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

void AppendIndent(int spaces, std::string* out) { out->append(static_cast<size_t>(spaces), ' '); }

void AppendEscapedAscii(char c, std::string* out) {
  switch (c) {
    case '\b':
      out->append("\\b");
      return;
    case '\t':
      out->append("\\t");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\f':
      out->append("\\f");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '"':
      out->append("\\\"");
      return;
    case '\\':
      out->append("\\\\");
      return;
    default: {
      static const char kHex[] = "0123456789abcdef";
      const char escape[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xf], kHex[c & 0xf]};
      out->append(escape, sizeof(escape));
    }
  }
}

void AppendNumber(JsonView value, std::string* out) {
  char buffer[32];
  std::to_chars_result r{};
  if (value.is_number_unsigned()) {
    r = std::to_chars(buffer, buffer + sizeof(buffer), value.unsigned_value());
  } else if (value.is_number_integer()) {
    r = std::to_chars(buffer, buffer + sizeof(buffer), value.int_value());
  } else {
    // Floats are rare in Kubernetes objects; nlohmann's own shortest round-trip format.
    out->append(Json(value.double_value()).dump());
    return;
  }
  out->append(buffer, r.ptr);
}

void Append(JsonView value, bool pretty, int indent, std::string* out);

// The separators and indentation between the elements of an object or array being written,
// after its opening bracket. One with no elements gets nothing between its brackets ("{}").
class Elements {
 public:
  Elements(bool pretty, int indent, std::string* out)
      : pretty_(pretty), indent_(indent), out_(out) {}
  int inner() const { return indent_ + 2; }
  // Before each element.
  void Next() {
    if (pretty_) {
      out_->append(first_ ? "\n" : ",\n");
      AppendIndent(inner(), out_);
    } else if (!first_) {
      out_->push_back(',');
    }
    first_ = false;
  }
  void Close(char bracket) {
    if (pretty_ && !first_) {
      out_->push_back('\n');
      AppendIndent(indent_, out_);
    }
    out_->push_back(bracket);
  }

 private:
  const bool pretty_;
  const int indent_;
  std::string* const out_;
  bool first_ = true;
};

// Appends an object whose members `for_each_member` lists: it calls its argument with
// (key, write) for each member in key order, where write(indent) appends the member's value.
template <typename ForEachMember>
void AppendObject(bool pretty, int indent, std::string* out, ForEachMember&& for_each_member) {
  out->push_back('{');
  Elements members(pretty, indent, out);
  for_each_member([&](std::string_view key, auto&& write) {
    members.Next();
    AppendJsonString(key, out);
    out->append(pretty ? ": " : ":");
    write(members.inner());
  });
  members.Close('}');
}

// The members of `object`, each written as it is.
auto MembersOf(JsonView object, bool pretty, std::string* out) {
  return [object, pretty, out](auto&& member) {
    object.ForEachMember([&](std::string_view key, JsonView value) {
      member(key, [&](int inner) { Append(value, pretty, inner, out); });
    });
  };
}

void Append(JsonView value, bool pretty, int indent, std::string* out) {
  switch (value.type()) {
    case JsonView::Type::kObject:
      AppendObject(pretty, indent, out, MembersOf(value, pretty, out));
      return;
    case JsonView::Type::kArray: {
      out->push_back('[');
      Elements elements(pretty, indent, out);
      value.ForEachElement([&](JsonView element) {
        elements.Next();
        Append(element, pretty, elements.inner(), out);
      });
      elements.Close(']');
      return;
    }
    case JsonView::Type::kString:
      AppendJsonString(value.string_value(), out);
      return;
    case JsonView::Type::kBoolean:
      out->append(value.bool_value() ? "true" : "false");
      return;
    case JsonView::Type::kInteger:
    case JsonView::Type::kUnsigned:
    case JsonView::Type::kFloat:
      AppendNumber(value, out);
      return;
    case JsonView::Type::kNull:
    case JsonView::Type::kAbsent:
      out->append("null");
      return;
    case JsonView::Type::kOther:
      out->append(value.ToJson().dump(-1, ' ', false, Json::error_handler_t::replace));
      return;
  }
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
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
        out->append(Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace));
        return;
      }
      checked_utf8 = true;
    }
    out->push_back(*p);
    ++p;
  }
  out->push_back('"');
}

void AppendJsonText(JsonView value, JsonStyle style, int level, std::string* out) {
  const bool pretty = style == JsonStyle::kIndented;
  Append(value, pretty, pretty ? 2 * level : 0, out);
}

void AppendTranslatedPVText(JsonView pv, const SpecChanges& changes, JsonStyle style, int level,
                            std::string* out) {
  const bool pretty = style == JsonStyle::kIndented;
  if (changes.empty()) {
    Append(pv, pretty, pretty ? 2 * level : 0, out);
    return;
  }
  if (!pv.Find("spec").is_object()) {  // not from a translation; ApplyTo says what it gives
    Json copy = pv.ToJson();
    changes.ApplyTo(copy);
    Append(copy, pretty, pretty ? 2 * level : 0, out);
    return;
  }
  AppendObject(pretty, pretty ? 2 * level : 0, out, [&](auto&& member) {
    pv.ForEachMember([&](std::string_view key, JsonView value) {
      if (key != "spec") {
        member(key, [&](int inner) { Append(value, pretty, inner, out); });
        return;
      }
      member(key, [&](int inner) {
        AppendObject(pretty, inner, out, [&](auto&& spec_member) {
          changes.ForEachSpecMemberAfter(value, [&](std::string_view k, JsonView v) {
            spec_member(k, [&](int deeper) { Append(v, pretty, deeper, out); });
          });
        });
      });
    });
  });
}

}  // namespace translator
}  // namespace flexcsi
