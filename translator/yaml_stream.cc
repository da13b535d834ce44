#include "translator/yaml_stream.h"

#include <cctype>
#include <cstring>
#include <string>
#include <string_view>

#include "common/yaml_json.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

bool IsMarker(std::string_view line, const char* marker) {
  if (line.size() < 3 || line.compare(0, 3, marker) != 0) return false;
  return line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\n' ||
         line[3] == '\r';
}

size_t Indentation(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// Blank or only a comment.
bool IsBlank(std::string_view line) {
  size_t n = Indentation(line);
  return n == line.size() || line[n] == '\n' || line[n] == '\r' || line[n] == '#';
}

// "items:" at the top level with nothing after it on the line but a comment.
bool IsItemsKey(std::string_view line) {
  if (line.compare(0, 6, "items:") != 0) return false;
  std::string_view rest = line.substr(6);
  size_t n = Indentation(rest);
  return n == rest.size() || rest[n] == '\n' || rest[n] == '\r' || (n > 0 && rest[n] == '#');
}

// "- ..." or a lone "-" after `indent` spaces: an entry of a block sequence.
bool IsEntry(std::string_view line, size_t indent) {
  if (line.size() <= indent || line[indent] != '-') return false;
  if (Indentation(line) != indent) return false;
  return line.size() == indent + 1 || line[indent + 1] == ' ' || line[indent + 1] == '\n' ||
         line[indent + 1] == '\r';
}

// Moves "line L, column C" of a message about a piece to where the piece is in the input.
std::string RelocatePieceError(const std::string& message, uint64_t first_line,
                               uint64_t column_shift) {
  const std::string kLine = "line ", kColumn = ", column ";
  size_t l = message.find(kLine);
  while (l != std::string::npos && (l + kLine.size() >= message.size() ||
                                    !std::isdigit(static_cast<unsigned char>(message[l + 5])))) {
    l = message.find(kLine, l + 1);
  }
  if (l == std::string::npos) return message;
  size_t l_end = l + kLine.size();
  size_t l_stop = message.find_first_not_of("0123456789", l_end);
  if (l_stop == std::string::npos || message.compare(l_stop, kColumn.size(), kColumn) != 0) {
    return message;
  }
  size_t c_end = l_stop + kColumn.size();
  size_t c_stop = message.find_first_not_of("0123456789", c_end);
  if (c_stop == c_end) return message;
  uint64_t line = std::strtoull(message.c_str() + l_end, nullptr, 10);
  uint64_t column = std::strtoull(message.c_str() + c_end, nullptr, 10);
  return message.substr(0, l_end) + std::to_string(line + first_line - 1) + kColumn +
         std::to_string(column + column_shift) +
         (c_stop == std::string::npos ? std::string() : message.substr(c_stop));
}

class YamlStreamer {
 public:
  YamlStreamer(InputBuffer& input, JsonStreamHandler& handler) : in_(input), handler_(handler) {}

  Status Run() {
    std::string_view line;
    while (NextLine(&line)) {
      ++line_no_;
      if (IsMarker(line, "---") || IsMarker(line, "...")) {
        if (mode_ != Mode::kDocument || HasContent()) {
          FLEXCSI_RETURN_IF_ERROR(FinishDocument());
        }
        if (doc_.empty()) doc_line_ = line_no_;
        doc_.append(line);  // "--- value" starts the next document; "..." is harmless
        continue;
      }
      FLEXCSI_RETURN_IF_ERROR(TakeLine(line));
    }
    return FinishDocument();
  }

 private:
  enum class Mode { kDocument, kItems, kAfterItems };

  // The next line with its newline; false at the end of the input.
  bool NextLine(std::string_view* line) {
    for (;;) {
      const char* w = in_.window();
      const uint64_t base = in_.begin(), end = in_.end();
      if (pos_ < end) {
        const void* nl = std::memchr(w + (pos_ - base), '\n', static_cast<size_t>(end - pos_));
        if (nl != nullptr || in_.eof()) {
          const char* start = w + (pos_ - base);
          size_t n = nl != nullptr ? static_cast<const char*>(nl) - start + 1
                                   : static_cast<size_t>(end - pos_);
          *line = std::string_view(start, n);
          pos_ += n;
          in_.Release(pos_ - n);  // the line itself stays readable until the next call
          return true;
        }
      }
      if (!in_.Fill(end + 1) && pos_ >= in_.end()) return false;
    }
  }

  // Whether the document so far holds anything but directives, comments and blank lines.
  bool HasContent() const {
    size_t start = 0;
    while (start < doc_.size()) {
      size_t nl = doc_.find('\n', start);
      std::string_view line(doc_.data() + start,
                            (nl == std::string::npos ? doc_.size() : nl + 1) - start);
      if (!IsBlank(line) && line[0] != '%') return true;
      start += line.size();
    }
    return !items_key_.empty();
  }

  Status TakeLine(std::string_view line) {
    switch (mode_) {
      case Mode::kDocument:
        if (!items_key_.empty()) {
          if (IsBlank(line)) {
            items_key_.append(line);
            return Status::Ok();
          }
          const size_t indent = Indentation(line);
          if (IsEntry(line, indent)) {
            StatusOr<Json> head = ParseMapping(doc_, doc_line_);
            if (!head.ok()) return head.status();
            if (handler_.ShouldStreamItems(*head)) {
              FLEXCSI_RETURN_IF_ERROR(handler_.OnListBegin(std::move(*head)));
              mode_ = Mode::kItems;
              indent_ = indent;
              items_key_.clear();
              StartItem(line);
              return Status::Ok();
            }
          }
          // Not a block sequence to stream: the document is read whole.
          doc_.append(items_key_);
          items_key_.clear();
        } else if (IsItemsKey(line)) {
          items_key_.assign(line);
          return Status::Ok();
        }
        if (doc_.empty()) doc_line_ = line_no_;
        doc_.append(line);
        return Status::Ok();
      case Mode::kItems:
        if (IsBlank(line) || Indentation(line) > indent_) {
          AppendItemLine(line);
        } else if (IsEntry(line, indent_)) {
          FLEXCSI_RETURN_IF_ERROR(FinishItem());
          StartItem(line);
        } else {
          FLEXCSI_RETURN_IF_ERROR(FinishItem());
          mode_ = Mode::kAfterItems;
          after_line_ = line_no_;
          after_.assign(line);
        }
        return Status::Ok();
      case Mode::kAfterItems:
        after_.append(line);
        return Status::Ok();
    }
    return Status::Ok();
  }

  void StartItem(std::string_view line) {
    item_.clear();
    item_line_ = line_no_;
    AppendItemLine(line);
  }
  // Item lines lose the sequence's indentation: the item is read as a sequence of one.
  void AppendItemLine(std::string_view line) {
    size_t drop = std::min(indent_, Indentation(line));
    item_.append(line.substr(drop));
  }

  Status FinishItem() {
    StatusOr<std::vector<Json>> docs = ParseYamlDocuments(item_);
    if (!docs.ok()) return PieceError(docs.status(), item_line_, indent_);
    if (docs->size() != 1 || !(*docs)[0].is_array() || (*docs)[0].size() != 1) {
      return FailedPrecondition("a list item at line " + std::to_string(item_line_) +
                                " cannot be read on its own");
    }
    Json item = std::move((*docs)[0][0]);
    item_.clear();
    return handler_.OnItem(std::move(item));
  }

  Status FinishDocument() {
    Status status;
    if (mode_ == Mode::kDocument) {
      doc_.append(items_key_);
      items_key_.clear();
      StatusOr<std::vector<Json>> docs = ParseYamlDocuments(doc_);
      if (!docs.ok()) {
        status = PieceError(docs.status(), doc_line_, 0);
      } else {
        for (Json& d : *docs) {
          status = handler_.OnDocument(std::move(d));
          if (!status.ok()) break;
        }
      }
    } else {
      if (mode_ == Mode::kItems) status = FinishItem();
      StatusOr<Json> tail = ParseMapping(after_, after_line_);
      if (status.ok()) status = tail.ok() ? handler_.OnListEnd(std::move(*tail)) : tail.status();
    }
    mode_ = Mode::kDocument;
    doc_.clear();
    after_.clear();
    item_.clear();
    return status;
  }

  // The members of a top-level mapping cut out of a document ({} for nothing).
  StatusOr<Json> ParseMapping(const std::string& text, uint64_t first_line) {
    StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
    if (!docs.ok()) return PieceError(docs.status(), first_line, 0);
    if (docs->empty()) return Json(Json::value_t::object);
    if (docs->size() != 1 || !(*docs)[0].is_object()) {
      return FailedPrecondition("the document at line " + std::to_string(first_line) +
                                " cannot be read in parts");
    }
    return std::move((*docs)[0]);
  }

  // Reading a piece failed: as a whole the input may still be fine (an alias to an anchor
  // elsewhere), so the caller may read it whole; the message places the error in the input.
  static Status PieceError(const Status& status, uint64_t first_line, size_t column_shift) {
    return FailedPrecondition(RelocatePieceError(status.message(), first_line, column_shift));
  }

  InputBuffer& in_;
  JsonStreamHandler& handler_;
  uint64_t pos_ = 0, line_no_ = 0;
  Mode mode_ = Mode::kDocument;
  std::string doc_, items_key_, item_, after_;
  uint64_t doc_line_ = 1, item_line_ = 0, after_line_ = 0;
  size_t indent_ = 0;
};

}  // namespace

Status StreamYamlDocuments(InputBuffer& input, JsonStreamHandler& handler) {
  return YamlStreamer(input, handler).Run();
}

}  // namespace translator
}  // namespace flexcsi
