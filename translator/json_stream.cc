#include "translator/json_stream.h"

#include <cstring>
#include <streambuf>
#include <string>

#include <simdjson.h>

#include "common/yaml_json.h"
#include "translator/json_view.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

static_assert(InputBuffer::kPadding >= simdjson::SIMDJSON_PADDING, "simdjson reads past the end");

simdjson::dom::parser& ThreadParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

std::string StripNlohmannPrefix(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    size_t close = what.find("] ");
    if (close != std::string::npos) return what.substr(close + 2);
  }
  return what;
}

// ---- Error messages: nlohmann's, from its own parser --------------------------------------------

// `data` followed by the rest of `rest`: the text nlohmann re-reads to word an error.
class ChainedStreamBuf : public std::streambuf {
 public:
  ChainedStreamBuf(const char* data, size_t size, std::istream& rest) : rest_(rest) {
    char* p = const_cast<char*>(data);
    setg(p, p, p + size);
  }

 protected:
  int_type underflow() override {
    if (rest_.rdbuf() == nullptr) return traits_type::eof();
    std::streamsize n = rest_.rdbuf()->sgetn(buffer_, sizeof(buffer_));
    if (n <= 0) return traits_type::eof();
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  std::istream& rest_;
  char buffer_[1 << 16];
};

// Builds nothing; keeps nlohmann's first error.
class ErrorOnlySax : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = StripNlohmannPrefix(e.what());
    return false;
  }
  std::string message;
};

// nlohmann's message for the first error in window[from, ...) followed by the rest of the stream,
// or "" when it finds none.
std::string NlohmannErrorFrom(InputBuffer& input, uint64_t from) {
  ChainedStreamBuf buf(input.window() + (from - input.begin()),
                       static_cast<size_t>(input.end() - from), input.stream());
  std::istream stream(&buf);
  ErrorOnlySax sax;
  try {
    Json::sax_parse(stream, &sax);
  } catch (const std::exception& e) {
    return StripNlohmannPrefix(e.what());
  }
  return sax.message;
}

// Shifts "at line L, column C" in `message` from a text starting at (line, column) of the input.
std::string RelocateNlohmannError(const std::string& message, uint64_t line, uint64_t column) {
  const std::string kLine = "at line ", kColumn = ", column ";
  size_t l = message.find(kLine);
  if (l == std::string::npos) return message;
  size_t l_end = l + kLine.size();
  size_t c = message.find(kColumn, l_end);
  if (c == std::string::npos) return message;
  size_t c_end = c + kColumn.size();
  size_t c_stop = message.find_first_not_of("0123456789", c_end);
  if (c_stop == std::string::npos) return message;
  uint64_t msg_line = std::strtoull(message.c_str() + l_end, nullptr, 10);
  uint64_t msg_column = std::strtoull(message.c_str() + c_end, nullptr, 10);
  uint64_t abs_line = line + msg_line - 1;
  uint64_t abs_column = msg_line == 1 ? column + msg_column : msg_column;
  return message.substr(0, l_end) + std::to_string(abs_line) + kColumn +
         std::to_string(abs_column) + message.substr(c_stop);
}

// ---- The streaming reader
// -------------------------------------------------------------------------

struct ByteTables {
  bool structural[256] = {};  // outside strings: quote and brackets, and NUL (end of window)
  bool in_string[256] = {};   // inside strings: quote, backslash and NUL
  bool scalar_end[256] = {};  // after a number or literal
  constexpr ByteTables() {
    for (char c : {'"', '{', '}', '[', ']', '\0'}) structural[static_cast<unsigned char>(c)] = true;
    for (char c : {'"', '\\', '\0'}) in_string[static_cast<unsigned char>(c)] = true;
    for (char c : {',', ']', '}', ' ', '\t', '\r', '\n', '\0'}) {
      scalar_end[static_cast<unsigned char>(c)] = true;
    }
  }
};
constexpr ByteTables kBytes;

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class Streamer {
 public:
  Streamer(InputBuffer& input, JsonStreamHandler& handler) : in_(input), handler_(handler) {}

  Status Run() {
    in_.Fill(1);
    SkipSpace();
    if (AtEnd()) return SyntaxErrorAt(pos_);
    const char c = At(pos_);
    Status s;
    if (c == '[') {
      s = StreamArray();
    } else if (c == '{') {
      s = StreamObject();
    } else {
      // Not a container: one value (the command never streams these, but be complete).
      uint64_t end;
      FLEXCSI_RETURN_IF_ERROR(Scan(pos_, 0, &end));
      StatusOr<Json> value = ParseAt(pos_, end);
      if (!value.ok()) return value.status();
      pos_ = end;
      s = handler_.OnDocument(std::move(*value));
    }
    if (!s.ok()) return s;
    SkipSpace();
    if (!AtEnd()) return SyntaxErrorAt(pos_);
    return Status::Ok();
  }

 private:
  // REQUIRES: offset in the window.
  char At(uint64_t offset) const { return in_.window()[offset - in_.begin()]; }
  bool AtEnd() { return pos_ >= in_.end() && !in_.Fill(pos_ + 1); }

  void SkipSpace() {
    for (;;) {
      const char* d = in_.window();
      const uint64_t base = in_.begin(), end = in_.end();
      while (pos_ < end && IsJsonSpace(d[pos_ - base])) ++pos_;
      if (pos_ < end || !in_.Fill(pos_ + 1)) return;
    }
  }

  // Expects `c` (after whitespace) and steps over it.
  bool Expect(char c) {
    SkipSpace();
    if (AtEnd() || At(pos_) != c) return false;
    ++pos_;
    return true;
  }

  // Finds the end of the value starting at `start`, which sits inside `depth` open brackets.
  // Only the structure is checked; the value itself is validated when parsed.
  Status Scan(uint64_t start, int depth, uint64_t* end) {
    uint64_t p = start;
    const unsigned char first = static_cast<unsigned char>(At(p));
    if (first == '"') {
      if (!ScanString(&p)) return SyntaxError(start);
      *end = p;
      return Status::Ok();
    }
    if (first != '{' && first != '[') {
      for (;;) {
        const char* d = in_.window();
        const uint64_t base = in_.begin(), stop = in_.end();
        while (p < stop && !kBytes.scalar_end[static_cast<unsigned char>(d[p - base])]) ++p;
        if (p < stop || !in_.Fill(p + 1)) break;
      }
      if (p == start) return SyntaxError(start);
      *end = p;
      return Status::Ok();
    }
    int open = 0;
    for (;;) {
      const char* d = in_.window();
      const uint64_t base = in_.begin();
      // The NUL padding after the window stops this loop.
      while (!kBytes.structural[static_cast<unsigned char>(d[p - base])]) ++p;
      if (p >= in_.end()) {
        if (!in_.Fill(p + 1)) return SyntaxError(start);
        continue;
      }
      const char c = d[p - base];
      if (c == '"') {
        if (!ScanString(&p)) return SyntaxError(start);
        continue;
      }
      ++p;
      if (c == '{' || c == '[') {
        if (depth + ++open > kMaxNestingDepth) {
          return InvalidArgument("invalid JSON: nested deeper than " +
                                 std::to_string(kMaxNestingDepth) + " levels");
        }
      } else if (c == '}' || c == ']') {
        if (--open == 0) {
          *end = p;
          return Status::Ok();
        }
      }
      // A NUL byte inside the window is not JSON; the parser reports it.
    }
  }

  // REQUIRES: window[*p] == '"'. Moves *p past the closing quote; false at end of input.
  bool ScanString(uint64_t* p) {
    uint64_t i = *p + 1;
    for (;;) {
      const char* d = in_.window();
      const uint64_t base = in_.begin();
      while (!kBytes.in_string[static_cast<unsigned char>(d[i - base])]) ++i;
      if (i >= in_.end()) {
        if (!in_.Fill(i + 1)) return false;
        continue;
      }
      if (d[i - base] == '"') {
        *p = i + 1;
        return true;
      }
      if (d[i - base] == '\\') {
        if (i + 1 >= in_.end() && !in_.Fill(i + 2)) return false;
        i += 2;
        continue;
      }
      ++i;  // NUL inside the window: invalid, reported by the parser
    }
  }

  StatusOr<Json> ParseAt(uint64_t start, uint64_t end) {
    StatusOr<Json> value =
        ParseJsonValue(in_.window() + (start - in_.begin()), static_cast<size_t>(end - start));
    if (!value.ok()) return SyntaxError(start);
    return value;
  }

  // The element between start and end to the handler: read in place from simdjson's document
  // when simdjson takes it, else parsed as ParseJsonValue does.
  Status HandOverItem(uint64_t start, uint64_t end) {
    simdjson::dom::element item;
    if (ThreadParser()
            .parse(in_.window() + (start - in_.begin()), static_cast<size_t>(end - start), false)
            .get(item) == simdjson::SUCCESS) {
      return handler_.OnItemView(JsonView::Of(item));
    }
    StatusOr<Json> parsed = ParseAt(start, end);
    if (!parsed.ok()) return parsed.status();
    return handler_.OnItem(std::move(*parsed));
  }

  // A key at pos_ (after whitespace), and the colon after it.
  Status ReadKey(std::string* key) {
    SkipSpace();
    if (AtEnd() || At(pos_) != '"') return SyntaxErrorAt(pos_);
    uint64_t end = pos_;
    if (!ScanString(&end)) return SyntaxErrorAt(pos_);
    const char* d = in_.window();
    const uint64_t base = in_.begin();
    bool plain = true;
    for (uint64_t i = pos_ + 1; i + 1 < end; ++i) {
      if (d[i - base] == '\\' || static_cast<unsigned char>(d[i - base]) < 0x20 ||
          static_cast<unsigned char>(d[i - base]) >= 0x80) {
        plain = false;
        break;
      }
    }
    if (plain) {
      key->assign(d + (pos_ + 1 - base), static_cast<size_t>(end - pos_ - 2));
    } else {
      StatusOr<Json> parsed = ParseAt(pos_, end);
      if (!parsed.ok()) return parsed.status();
      *key = parsed->get<std::string>();
    }
    pos_ = end;
    if (!Expect(':')) return SyntaxErrorAt(pos_);
    SkipSpace();
    if (AtEnd()) return SyntaxErrorAt(pos_);
    return Status::Ok();
  }

  // The elements of the array whose '[' is at pos_, at `depth` brackets (the array's own
  // included), each handed to OnItem and then dropped from the window.
  Status StreamElements(int depth) {
    ++pos_;
    if (depth > kMaxNestingDepth) {
      return InvalidArgument("invalid JSON: nested deeper than " +
                             std::to_string(kMaxNestingDepth) + " levels");
    }
    SkipSpace();
    if (AtEnd()) return SyntaxErrorAt(pos_);
    if (At(pos_) == ']') {
      ++pos_;
      return Status::Ok();
    }
    for (;;) {
      SkipSpace();
      if (AtEnd()) return SyntaxErrorAt(pos_);
      uint64_t end;
      FLEXCSI_RETURN_IF_ERROR(Scan(pos_, depth, &end));
      FLEXCSI_RETURN_IF_ERROR(HandOverItem(pos_, end));
      pos_ = end;
      in_.Release(pos_);
      SkipSpace();
      if (AtEnd()) return SyntaxErrorAt(pos_);
      const char c = At(pos_++);
      if (c == ']') return Status::Ok();
      if (c != ',') return SyntaxErrorAt(pos_ - 1);
    }
  }

  Status StreamArray() {
    FLEXCSI_RETURN_IF_ERROR(handler_.OnArrayBegin());
    FLEXCSI_RETURN_IF_ERROR(StreamElements(1));
    return handler_.OnArrayEnd();
  }

  Status StreamObject() {
    ++pos_;
    Json head(Json::value_t::object), tail(Json::value_t::object);
    bool streamed = false;
    SkipSpace();
    if (AtEnd()) return SyntaxErrorAt(pos_);
    if (At(pos_) == '}') {
      ++pos_;
      return handler_.OnDocument(std::move(head));
    }
    for (;;) {
      std::string key;
      FLEXCSI_RETURN_IF_ERROR(ReadKey(&key));
      if (!streamed && key == "items" && At(pos_) == '[' && handler_.ShouldStreamItems(head)) {
        FLEXCSI_RETURN_IF_ERROR(handler_.OnListBegin(std::move(head)));
        head = Json(Json::value_t::object);
        FLEXCSI_RETURN_IF_ERROR(StreamElements(2));
        streamed = true;
      } else {
        uint64_t end;
        FLEXCSI_RETURN_IF_ERROR(Scan(pos_, 1, &end));
        StatusOr<Json> value = ParseAt(pos_, end);
        if (!value.ok()) return value.status();
        pos_ = end;
        (streamed ? tail : head)[key] = std::move(*value);
      }
      SkipSpace();
      if (AtEnd()) return SyntaxErrorAt(pos_);
      const char c = At(pos_++);
      if (c == '}') break;
      if (c != ',') return SyntaxErrorAt(pos_ - 1);
      in_.Release(pos_);
    }
    if (streamed) return handler_.OnListEnd(std::move(tail));
    return handler_.OnDocument(std::move(head));
  }

  // The error nlohmann would report. With the whole input still in the window it re-reads all
  // of it; otherwise it reads the value being parsed (from `value_start`) and shifts the
  // position it reports.
  Status SyntaxError(uint64_t value_start) {
    if (in_.begin() == 0) return NlohmannError();
    uint64_t line, column;
    in_.Position(value_start, &line, &column);
    std::string message = RelocateNlohmannError(NlohmannErrorFrom(in_, value_start), line, column);
    if (message.empty()) message = "syntax error";
    return InvalidArgument("invalid JSON: " + message);
  }
  // An error between values (a missing comma, colon or bracket, or the input ends).
  Status SyntaxErrorAt(uint64_t offset) {
    if (in_.begin() == 0) return NlohmannError();
    uint64_t line, column;
    in_.Position(offset, &line, &column);
    std::string what = "unexpected end of input";
    if (offset < in_.end()) what = "unexpected '" + std::string(1, At(offset)) + "'";
    return InvalidArgument("invalid JSON: parse error at line " + std::to_string(line) +
                           ", column " + std::to_string(column + 1) + ": syntax error - " + what);
  }
  Status NlohmannError() {
    std::string message = NlohmannErrorFrom(in_, 0);
    if (message.empty()) message = "syntax error";
    return InvalidArgument("invalid JSON: " + message);
  }

  InputBuffer& in_;
  JsonStreamHandler& handler_;
  uint64_t pos_ = 0;  // input offset
};

}  // namespace

StatusOr<nlohmann::json> ParseJsonValue(const char* text, size_t size) {
  simdjson::dom::element root;
  if (ThreadParser().parse(text, size, false).get(root) == simdjson::SUCCESS) {
    return JsonView::Of(root).ToJson();  // nlohmann's values for the same text
  }
  // What simdjson refuses but nlohmann takes (integers beyond 64 bits become floats), and
  // nlohmann's words for what neither takes.
  try {
    return Json::parse(text, text + size);
  } catch (const Json::exception& e) {
    return InvalidArgument("invalid JSON: " + StripNlohmannPrefix(e.what()));
  }
}

Status StreamJsonDocument(InputBuffer& input, JsonStreamHandler& handler) {
  return Streamer(input, handler).Run();
}

}  // namespace translator
}  // namespace flexcsi
