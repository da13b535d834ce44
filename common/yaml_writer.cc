#include "common/yaml_writer.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "common/utf8.h"
#include "common/yaml_scalar.h"

namespace flexcsi {
namespace {

using Json = nlohmann::json;

// A key longer than this takes the explicit "? key\n: value" form (see Map).
constexpr size_t kMaxSimpleKeyBytes = 1024;
// yaml-cpp's default indentation of a nested block collection.
constexpr size_t kIndent = 2;

// Bytes at which yaml-cpp's plain-scalar scan must look closer; any other byte is allowed
// anywhere in a plain scalar, so the scan skips them without branching on each rule.
constexpr std::array<bool, 256> MakeSpecialBytes() {
  std::array<bool, 256> special{};
  for (int c = 0; c < 0x20; ++c) special[c] = true;
  for (int c : {int{':'}, int{' '}, 0x7F, 0xC2, 0xE2, 0xEF}) special[c] = true;
  return special;
}
constexpr std::array<bool, 256> kSpecialBytes = MakeSpecialBytes();

// yaml-cpp's "blank or break" (space, tab, LF or CRLF) at s[i]; false past the end.
bool BlankOrBreakAt(std::string_view s, size_t i) {
  if (i >= s.size()) return false;
  char c = s[i];
  if (c == ' ' || c == '\t' || c == '\n') return true;
  return c == '\r' && i + 1 < s.size() && s[i + 1] == '\n';
}

// yaml-cpp 0.7's IsValidPlainScalar in block context (its exp.h regexes, spelled out): not a
// null word, no indicator or blank first, no trailing space, and nowhere ": ", " #", a tab, a
// line break, a BOM or a character outside YAML's printable set. Unlike yaml-cpp, a CR, NEL,
// U+2028 and U+2029 are line breaks here, as they are to YAML 1.1 readers (libyaml, which reads
// ours, and kubectl's go-yaml): plain, they would not read back as written.
bool IsPlainScalar(std::string_view s) {
  if (IsYamlNullWord(s)) return false;
  // Unlike yaml-cpp: a document marker and a blank would start or end a document where the
  // scalar begins a line (a key of the top mapping). A bare marker is one only as a whole
  // document; AppendJsonAsYaml quotes that.
  if ((s.substr(0, 3) == "---" || s.substr(0, 3) == "...") && BlankOrBreakAt(s, 3)) return false;
  if (BlankOrBreakAt(s, 0)) return false;
  // Indicators that cannot start a plain scalar; "-", "?" and ":" only when a blank follows.
  if (std::string_view(",[]{}#&*!|>'\"%@`").find(s[0]) != std::string_view::npos) return false;
  if ((s[0] == '-' || s[0] == '?' || s[0] == ':') && (s.size() == 1 || BlankOrBreakAt(s, 1))) {
    return false;
  }
  if (s.back() == ' ') return false;
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!kSpecialBytes[c]) continue;
    switch (c) {
      case ':':
        if (i + 1 == n || BlankOrBreakAt(s, i + 1)) return false;
        break;
      case ' ':
        if (i + 1 < n && s[i + 1] == '#') return false;
        break;
      case 0xC2: {  // U+0080..U+009F: not printable, or (NEL) a line break to YAML 1.1.
        if (i + 1 < n) {
          const unsigned char d = static_cast<unsigned char>(s[i + 1]);
          if (d >= 0x80 && d <= 0x9F) return false;
        }
        break;
      }
      case 0xE2:  // U+2028 and U+2029, line breaks to YAML 1.1.
        if (i + 2 < n && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
            (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
             static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
          return false;
        }
        break;
      case 0xEF:  // A byte order mark; U+FFFE and U+FFFF, which YAML readers refuse raw.
        if (i + 2 < n) {
          const unsigned char b1 = static_cast<unsigned char>(s[i + 1]);
          const unsigned char b2 = static_cast<unsigned char>(s[i + 2]);
          if ((b1 == 0xBB && b2 == 0xBF) || (b1 == 0xBF && (b2 == 0xBE || b2 == 0xBF))) {
            return false;
          }
        }
        break;
      default:  // Tab, CR, LF and the other C0 controls, and DEL.
        return false;
    }
  }
  // Unlike yaml-cpp, which wrote such bytes raw: readers refuse text that is not UTF-8, and
  // double quotes put U+FFFD in their place.
  return IsValidUtf8(s);
}

// Characters of UTF-8 text, as YAML readers count a key's length.
size_t CharactersIn(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

constexpr int kReplacementCharacter = 0xFFFD;

// One code point as yaml-cpp decodes UTF-8: a stray continuation byte or a truncated sequence
// (the byte that broke it is read again) becomes U+FFFD; overlong forms are not rejected.
// Non-characters stay what they are (yaml-cpp made them U+FFFD, which does not read back).
int NextCodePoint(std::string_view s, size_t* i) {
  const unsigned char lead = static_cast<unsigned char>(s[*i]);
  ++*i;
  int length;
  switch (lead >> 4) {
    case 12:
    case 13:
      length = 2;
      break;
    case 14:
      length = 3;
      break;
    case 15:
      length = 4;
      break;
    default:
      if (lead < 0x80) return lead;
      return kReplacementCharacter;
  }
  int cp = lead & (0xFF >> (length + 1));
  for (int k = 1; k < length; ++k) {
    if (*i == s.size() || (static_cast<unsigned char>(s[*i]) & 0xC0) != 0x80) {
      cp = kReplacementCharacter;
      break;
    }
    cp = (cp << 6) | (static_cast<unsigned char>(s[*i]) & 0x3F);
    ++*i;
  }
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementCharacter;
  return cp;
}

void AppendUtf8(int cp, std::string* out) {
  if (cp <= 0x7F) {
    out->push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendEscape(int cp, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  int digits;
  if (cp < 0xFF) {
    out->append("\\x");
    digits = 2;
  } else if (cp < 0xFFFF) {
    out->append("\\u");
    digits = 4;
  } else {
    out->append("\\U");
    digits = 8;
  }
  for (; digits > 0; --digits) out->push_back(kHex[(cp >> (4 * (digits - 1))) & 0xF]);
}

// yaml-cpp's WriteDoubleQuotedString: the string is decoded and re-encoded (see NextCodePoint),
// so invalid UTF-8 comes out as U+FFFD; most non-ASCII is written as it is. DEL, U+2028 and
// U+2029, which yaml-cpp wrote raw, are escaped: YAML 1.1 readers refuse DEL and read the
// others as line breaks.
void AppendDoubleQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // Runs of printable ASCII are the common case and come out unchanged.
    size_t run = i;
    while (run < s.size()) {
      const unsigned char c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') break;
      ++run;
    }
    out->append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    const int cp = NextCodePoint(s, &i);
    switch (cp) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0) || cp == 0xFEFF || cp == 0x2028 ||
            cp == 0x2029 || cp == 0xFFFE || cp == 0xFFFF) {
          AppendEscape(cp, out);
        } else {
          AppendUtf8(cp, out);
        }
    }
  }
  out->push_back('"');
}

// The emitter's layout, reduced to what JsonToYaml asked of it. Positions are tracked the way
// yaml-cpp's stream tracks them (a column in bytes since the last newline, starting at 0 where
// the document starts) because its spacing is "pad to column n" rather than a fixed string.
class Writer {
 public:
  Writer(std::string* out, bool (*force_quotes)(const std::string&))
      : out_(*out), line_start_(out->size()), force_quotes_(force_quotes) {}

  // `indent` is the column of a block collection written at this position.
  void Node(const Json& value, size_t indent) {
    switch (value.type()) {
      case Json::value_t::object:
        if (value.empty()) {
          IndentTo(indent);
          out_.append("{}");
        } else {
          Map(value, indent);
        }
        return;
      case Json::value_t::array:
        if (value.empty()) {
          out_.append("[]");
        } else {
          Seq(value, indent);
        }
        return;
      case Json::value_t::string:
        String(value.get_ref<const std::string&>());
        return;
      case Json::value_t::null:
        out_.push_back('~');
        return;
      case Json::value_t::boolean:
        out_.append(value.get<bool>() ? "true" : "false");
        return;
      case Json::value_t::number_integer:
        Integer(value.get<int64_t>());
        return;
      case Json::value_t::number_unsigned:
        Integer(value.get<uint64_t>());
        return;
      default:  // Floats (nlohmann prints NaN and infinities as null, which gets quoted).
        Scalar(value.dump(), false);
        return;
    }
  }

 private:
  enum class Kind { kInline, kBlockSeq, kBlockMap };

  static Kind KindOf(const Json& value) {
    if (value.is_object() && !value.empty()) return Kind::kBlockMap;
    if (value.is_array() && !value.empty()) return Kind::kBlockSeq;
    return Kind::kInline;  // Scalars and the flow-style {} and [].
  }

  size_t Col() const { return out_.size() - line_start_; }
  void Newline() {
    out_.push_back('\n');
    line_start_ = out_.size();
  }
  void IndentTo(size_t col) {
    size_t cur = Col();
    if (cur < col) out_.append(col - cur, ' ');
  }
  void SpaceAndIndentTo(size_t col) {
    if (Col() > 0) out_.push_back(' ');
    IndentTo(col);
  }

  void Map(const Json& map, size_t indent) {
    bool first = true;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string& key = it.key();
      if (!first) Newline();
      first = false;
      IndentTo(indent);
      // yaml-cpp took the explicit form for keys over the limit in bytes before quoting;
      // readers measure a key in characters as written, so one that quotes and escapes take
      // past the limit needs it too.
      const size_t key_start = out_.size();
      String(key);
      const bool long_key =
          key.size() > kMaxSimpleKeyBytes ||
          CharactersIn(std::string_view(out_).substr(key_start)) > kMaxSimpleKeyBytes;
      if (long_key) {
        out_.resize(key_start);
        out_.push_back('?');
        SpaceAndIndentTo(indent + 1);
        String(key);
      }
      const Kind kind = KindOf(*it);
      if (long_key) {
        Newline();
        IndentTo(indent);
        out_.push_back(':');
        SpaceAndIndentTo(indent + 1);
      } else {
        out_.push_back(':');
        if (kind == Kind::kInline) {
          SpaceAndIndentTo(indent + kIndent);
        } else {
          Newline();
        }
      }
      Node(*it, indent + kIndent);
    }
  }

  void Seq(const Json& seq, size_t indent) {
    bool first = true;
    for (const Json& item : seq) {
      if (!first) Newline();
      first = false;
      IndentTo(indent);
      out_.push_back('-');
      switch (KindOf(item)) {
        case Kind::kInline:
          IndentTo(indent + kIndent);
          break;
        case Kind::kBlockSeq:
          Newline();
          break;
        case Kind::kBlockMap:  // The map's first key pads to its column.
          break;
      }
      Node(item, indent + kIndent);
    }
  }

  void String(const std::string& s) { Scalar(s, force_quotes_(s)); }

  template <typename Int>
  void Integer(Int v) {
    char buffer[24];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
    out_.append(buffer, result.ptr);
  }

  void Scalar(std::string_view s, bool double_quoted) {
    if (!double_quoted && IsPlainScalar(s)) {
      out_.append(s);
    } else {
      AppendDoubleQuoted(s, &out_);
    }
  }

  std::string& out_;
  size_t line_start_;
  bool (*force_quotes_)(const std::string&);
};

}  // namespace

void AppendJsonAsYaml(const nlohmann::json& value, bool (*force_quotes)(const std::string&),
                      std::string* out) {
  if (value.is_string() && (value == "---" || value == "...")) {
    AppendDoubleQuoted(value.get_ref<const std::string&>(), out);  // not a document marker
    return;
  }
  Writer(out, force_quotes).Node(value, 0);
}

}  // namespace flexcsi
