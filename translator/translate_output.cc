#include "translator/translate_output.h"

#include <ostream>

#include "common/yaml_json.h"
#include "translator/json_text_writer.h"

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;

constexpr size_t kWriteBlock = 1 << 20;

// The List that wraps several outputs (apiVersion, items, kind: nlohmann's key order).
const char kWrapperHead[] = "{\n  \"apiVersion\": \"v1\",\n  \"items\": [";
const char kWrapperTail[] = "\n  ],\n  \"kind\": \"List\"\n}\n";
const char kWrapperHeadCompact[] = "{\"apiVersion\":\"v1\",\"items\":[";
const char kWrapperTailCompact[] = "],\"kind\":\"List\"}\n";
const char kEmptyWrapper[] =
    "{\n  \"apiVersion\": \"v1\",\n  \"items\": [],\n  \"kind\": \"List\"\n}\n";
const char kEmptyWrapperCompact[] = "{\"apiVersion\":\"v1\",\"items\":[],\"kind\":\"List\"}\n";

}  // namespace

TranslateOutput::TranslateOutput(std::ostream& out, std::ostream& err, OutputFormat format)
    : out_(out), err_(err), format_(format) {}

void TranslateOutput::Indent(int level) { buf_.append(static_cast<size_t>(2 * level), ' '); }

void TranslateOutput::AppendLevel0(const Json& value) {
  if (format_ == OutputFormat::kYaml) {
    buf_ += JsonToYaml(value);
    return;
  }
  AppendJsonText(value, format_ == OutputFormat::kJson ? JsonStyle::kIndented : JsonStyle::kCompact,
                 0, &buf_);
  buf_ += "\n";
}

Status TranslateOutput::StartOutput() {
  ++outputs_;
  if (outputs_ == 1 && !more_inputs_) return Status::Ok();
  if (outputs_ == 1) {
    several_ = several_early_ = true;
    if (format_ == OutputFormat::kYaml) {
      buf_ += "---\n";
    } else if (format_ == OutputFormat::kJson) {
      buf_ += kWrapperHead;
      buf_ += "\n    ";
    } else {
      buf_ += kWrapperHeadCompact;
    }
    return Status::Ok();
  }
  if (outputs_ == 2 && !several_early_) {
    several_ = true;
    if (has_pending_) {
      if (format_ == OutputFormat::kYaml) {
        buf_ += "---\n" + JsonToYaml(pending_);
      } else if (format_ == OutputFormat::kJson) {
        buf_ += kWrapperHead;
        buf_ += "\n    ";
        AppendJsonText(pending_, JsonStyle::kIndented, 2, &buf_);
      } else {
        buf_ += kWrapperHeadCompact;
        AppendJsonText(pending_, JsonStyle::kCompact, 0, &buf_);
      }
      pending_ = Json();
      has_pending_ = false;
    } else if (first_streamed_alone_) {
      // The list was written as the only output; as one of several it moves into the wrapper.
      if (!holding_) {
        return FailedPrecondition(
            "a streamed list was written as the only output, and more output follows it; "
            "translate the inputs one at a time");
      }
      if (format_ == OutputFormat::kYaml) {
        buf_.insert(0, "---\n");
      } else {
        std::string first;
        first.swap(buf_);
        first.pop_back();  // its final newline
        if (format_ == OutputFormat::kJson) {
          buf_ = std::string(kWrapperHead) + "\n    ";
          for (char c : first) {
            buf_.push_back(c);
            if (c == '\n') buf_ += "    ";  // JSON text has no raw newline inside strings
          }
        } else {
          buf_ = kWrapperHeadCompact + first;
        }
      }
    }
  }
  // Every output after the first is an element of the wrapper, or a "---" document.
  if (format_ == OutputFormat::kYaml) {
    buf_ += "---\n";
  } else if (format_ == OutputFormat::kJson) {
    buf_ += ",\n    ";
  } else {
    buf_ += ",";
  }
  return Status::Ok();
}

Status TranslateOutput::AddObject(Json object) {
  FLEXCSI_RETURN_IF_ERROR(StartOutput());
  if (outputs_ == 1 && !several_) {
    pending_ = std::move(object);
    has_pending_ = true;
    return Status::Ok();
  }
  if (format_ == OutputFormat::kYaml) {
    buf_ += JsonToYaml(object);
  } else {
    AppendJsonText(object,
                   format_ == OutputFormat::kJson ? JsonStyle::kIndented : JsonStyle::kCompact, 2,
                   &buf_);
  }
  Drain(false);
  return Status::Ok();
}

Status TranslateOutput::BeginList(const Json& head) {
  FLEXCSI_RETURN_IF_ERROR(StartOutput());
  first_streamed_alone_ = !several_;
  level_ = several_ ? 2 : 0;
  open_ = Open::kList;
  open_items_ = 0;
  if (format_ == OutputFormat::kYaml) {
    if (!head.empty()) buf_ += JsonToYaml(head);
    return Status::Ok();
  }
  const bool indented = format_ == OutputFormat::kJson;
  const JsonStyle style = indented ? JsonStyle::kIndented : JsonStyle::kCompact;
  buf_ += "{";
  for (auto it = head.begin(); it != head.end(); ++it) {
    if (indented) {
      buf_ += it == head.begin() ? "\n" : ",\n";
      Indent(level_ + 1);
    } else if (it != head.begin()) {
      buf_ += ",";
    }
    AppendJsonString(it.key(), &buf_);
    buf_ += indented ? ": " : ":";
    AppendJsonText(*it, style, level_ + 1, &buf_);
  }
  if (indented) {
    buf_ += head.empty() ? "\n" : ",\n";
    Indent(level_ + 1);
    buf_ += "\"items\": [";
  } else {
    buf_ += head.empty() ? "\"items\":[" : ",\"items\":[";
  }
  return Status::Ok();
}

Status TranslateOutput::BeginArray() {
  FLEXCSI_RETURN_IF_ERROR(StartOutput());
  first_streamed_alone_ = !several_;
  level_ = several_ ? 2 : 0;
  open_ = Open::kArray;
  open_items_ = 0;
  if (format_ != OutputFormat::kYaml) buf_ += "[";
  return Status::Ok();
}

void TranslateOutput::AddItem(Json item) {
  if (format_ == OutputFormat::kYaml) {
    if (open_ == Open::kArray) {
      buf_ += JsonToYaml(Json::array({std::move(item)}));
    } else {
      // The item as the element of an "items" sequence, which is what it is in the document;
      // the "items:" line is written once.
      Json wrapper = Json::object();
      wrapper["items"] = Json::array({std::move(item)});
      std::string text = JsonToYaml(wrapper);
      buf_.append(text, open_items_ == 0 ? 0 : text.find('\n') + 1, std::string::npos);
    }
    ++open_items_;
    Drain(false);
    return;
  }
  AddJsonItem([&](JsonStyle style, int level) { AppendJsonText(item, style, level, &buf_); });
}

void TranslateOutput::AddTranslatedPVItem(JsonView pv, const SpecChanges& changes) {
  if (format_ == OutputFormat::kYaml) {
    Json item = pv.ToJson();
    changes.ApplyTo(item);
    AddItem(std::move(item));
    return;
  }
  AddJsonItem([&](JsonStyle style, int level) {
    AppendTranslatedPVText(pv, changes, style, level, &buf_);
  });
}

template <typename Write>
void TranslateOutput::AddJsonItem(Write&& write) {
  const int level = level_ + (open_ == Open::kList ? 2 : 1);
  if (format_ == OutputFormat::kJson) {
    buf_ += open_items_ == 0 ? "\n" : ",\n";
    Indent(level);
    write(JsonStyle::kIndented, level);
  } else {
    if (open_items_ != 0) buf_ += ",";
    write(JsonStyle::kCompact, 0);
  }
  ++open_items_;
  Drain(false);
}

Status TranslateOutput::EndList(const Json& tail) {
  open_ = Open::kNone;
  if (format_ == OutputFormat::kYaml) {
    if (open_items_ == 0) buf_ += JsonToYaml(Json{{"items", Json::array()}});
    if (!tail.empty()) buf_ += JsonToYaml(tail);
    return Status::Ok();
  }
  const bool indented = format_ == OutputFormat::kJson;
  if (indented && open_items_ != 0) {
    buf_ += "\n";
    Indent(level_ + 1);
  }
  buf_ += "]";
  for (auto it = tail.begin(); it != tail.end(); ++it) {
    if (indented) {
      buf_ += ",\n";
      Indent(level_ + 1);
    } else {
      buf_ += ",";
    }
    AppendJsonString(it.key(), &buf_);
    buf_ += indented ? ": " : ":";
    AppendJsonText(*it, indented ? JsonStyle::kIndented : JsonStyle::kCompact, level_ + 1, &buf_);
  }
  if (indented) {
    buf_ += "\n";
    Indent(level_);
  }
  buf_ += "}";
  if (!several_) buf_ += "\n";
  return Status::Ok();
}

Status TranslateOutput::EndArray() {
  open_ = Open::kNone;
  if (format_ == OutputFormat::kYaml) {
    if (open_items_ == 0) buf_ += JsonToYaml(Json::array());
    return Status::Ok();
  }
  if (format_ == OutputFormat::kJson && open_items_ != 0) {
    buf_ += "\n";
    Indent(level_);
  }
  buf_ += "]";
  if (!several_) buf_ += "\n";
  return Status::Ok();
}

void TranslateOutput::ItemError(const std::string& line) {
  if (holding_) {
    err_buf_ += line;
  } else {
    err_ << line;
  }
}

void TranslateOutput::MaybeRelease(size_t input_held) {
  if (!holding_) return;
  if (buf_.size() + err_buf_.size() <= kHoldLimit && input_held <= kHoldLimit) return;
  holding_ = false;
  Drain(true);
}

void TranslateOutput::DropHeld() {
  buf_.clear();
  err_buf_.clear();
}

void TranslateOutput::Drain(bool all) {
  if (holding_ && !all) return;
  if (!err_buf_.empty()) {
    err_ << err_buf_;
    err_buf_.clear();
  }
  if (buf_.size() >= kWriteBlock || (all && !buf_.empty())) {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
}

Status TranslateOutput::Finish() {
  Status status;
  if (outputs_ == 0) {
    if (format_ == OutputFormat::kJson) buf_ += kEmptyWrapper;
    if (format_ == OutputFormat::kJsonCompact) buf_ += kEmptyWrapperCompact;
  } else if (has_pending_) {
    AppendLevel0(pending_);
    pending_ = Json();
    has_pending_ = false;
  } else if (several_early_ && outputs_ == 1) {
    // Assumed several, got one: it stands alone, without the wrapper.
    if (!holding_) {
      status = FailedPrecondition(
          "the first input's list was written as one output of several, and no other input "
          "gave any; translate it alone");
    } else if (format_ == OutputFormat::kYaml) {
      buf_.erase(0, 4);  // "---\n"
    } else if (format_ == OutputFormat::kJson) {
      std::string element = buf_.substr(sizeof(kWrapperHead) - 1 + 5);
      buf_.clear();
      for (size_t i = 0; i < element.size(); ++i) {
        buf_.push_back(element[i]);
        if (element[i] == '\n') i += 4;  // one level less
      }
      buf_ += "\n";
    } else {
      buf_.erase(0, sizeof(kWrapperHeadCompact) - 1);
      buf_ += "\n";
    }
  } else if (several_) {
    if (format_ == OutputFormat::kJson) buf_ += kWrapperTail;
    if (format_ == OutputFormat::kJsonCompact) buf_ += kWrapperTailCompact;
  }
  holding_ = false;
  Drain(true);
  out_.flush();
  return status;
}

}  // namespace translator
}  // namespace flexcsi
