#include "translator/translate_session.h"

#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "common/yaml_json.h"
#include "translator/go_strings.h"
#include "translator/json_stream.h"
#include "translator/translate_input_format.h"
#include "translator/translate_object.h"
#include "translator/yaml_stream.h"

namespace flexcsi {
namespace translator {
namespace command {

namespace {

constexpr size_t kProgressThreshold = 1000;

struct Summary {
  size_t translated = 0, unchanged = 0, failed = 0;
  std::map<std::string, std::map<Outcome, size_t>> by_plugin;
};

// Marks the Status of a streamed list that turned out not to be one (see Session).
const char kNotStreamable[] = "cannot translate this input as a stream: ";

// The documents of every input, translated and written as they arrive. A document is one
// object, a List (items translated one by one), or an array (the same). Lists are streamed:
// their items are translated while the input is read, keeping one item in memory.
//
// The first document is held untranslated until a second one arrives: a lone object is
// translated all or nothing (an error is the command's error), objects among others are
// translated like list items (an error is reported and the rest goes on).
class Session : public JsonStreamHandler {
 public:
  Session(const Options& opts, const Translator& translator, TranslateOutput& output,
          std::ostream& err, bool progress)
      : opts_(opts), command_(opts, translator), output_(output), err_(err), progress_(progress) {}

  // The input being read, so that it is dropped as the output is released.
  void set_input(InputBuffer* input) {
    input_ = input;
    if (input_ != nullptr) input_->SetRetain(output_.holding());
  }

  // ---- Whole documents ----
  Status OnDocument(Json doc) override {
    ++documents_;
    if (documents_ == 1 && !IsList(doc) && !doc.is_array()) {
      first_ = std::move(doc);
      has_first_ = true;
      return Status::Ok();
    }
    FLEXCSI_RETURN_IF_ERROR(ReleaseFirst());
    if (doc.is_array()) {
      FLEXCSI_RETURN_IF_ERROR(output_.BeginArray());
      BeginItems(doc.size());
      for (Json& item : doc) TranslateItem(std::move(item), true);
      EndItems();
      return output_.EndArray();
    }
    if (IsList(doc)) {
      Json items = std::move(doc["items"]);
      doc.erase("items");
      if (items.is_null()) items = Json::array();
      Json head(Json::value_t::object), tail(Json::value_t::object);
      SplitAroundItems(std::move(doc), &head, &tail);
      FLEXCSI_RETURN_IF_ERROR(output_.BeginList(head));
      BeginItems(items.size());
      for (Json& item : items) TranslateItem(std::move(item), true);
      EndItems();
      // A list of pods becomes a list of PVs.
      if (opts_.verb == Verb::kInlineToCsi) tail["kind"] = "List";
      return output_.EndList(tail);
    }
    items_total_ = 1;
    item_index_ = 0;
    TranslateItem(std::move(doc), false);
    ReleaseIfLarge();
    return Status::Ok();
  }

  // ---- Streamed documents ----
  Status OnArrayBegin() override {
    ++documents_;
    FLEXCSI_RETURN_IF_ERROR(ReleaseFirst());
    FLEXCSI_RETURN_IF_ERROR(output_.BeginArray());
    BeginItems(0);
    return Status::Ok();
  }
  Status OnArrayEnd() override {
    EndItems();
    return output_.EndArray();
  }
  bool ShouldStreamItems(const Json& head) override {
    // Stream unless the keys so far already say it is no List (it then arrives whole).
    if (head.contains("items")) return false;
    auto kind = head.find("kind");
    return kind == head.end() || IsListKind(*kind);
  }
  Status OnListBegin(Json head) override {
    ++documents_;
    FLEXCSI_RETURN_IF_ERROR(ReleaseFirst());
    Json before(Json::value_t::object);
    list_after_ = Json(Json::value_t::object);
    SplitAroundItems(std::move(head), &before, &list_after_);
    FLEXCSI_RETURN_IF_ERROR(output_.BeginList(before));
    BeginItems(0);
    return Status::Ok();
  }
  Status OnItem(Json item) override {
    TranslateItem(std::move(item), true);
    ReleaseIfLarge();
    return Status::Ok();
  }
  // The fast path of the common case, a dump's PVs to CSI as JSON: the item is read where
  // simdjson parsed it and written with its changes, never made an nlohmann tree.
  Status OnItemView(JsonView item) override {
    if (opts_.verb != Verb::kPVToCsi || output_format_ == OutputFormat::kYaml) {
      return OnItem(item.ToJson());
    }
    const size_t index = ++item_index_;
    StatusOr<std::optional<SpecChanges>> changes = command_.PVToCsiChanges(item, true);
    if (Count(index, item, changes.status())) {
      static const SpecChanges kUnchanged;
      output_.AddTranslatedPVItem(item, changes->has_value() ? **changes : kUnchanged);
    }
    ShowProgress(index);
    ReleaseIfLarge();
    return Status::Ok();
  }
  Status OnListEnd(Json tail) override {
    EndItems();
    // The keys after the items were not known when the list began: they must neither come
    // before "items" in the output nor say that this is not a List after all.
    for (auto it = tail.begin(); it != tail.end(); ++it) {
      if (it.key() <= "items") {
        return FailedPrecondition(std::string(kNotStreamable) + "key " + GoQuote(it.key()) +
                                  " follows the items of a list");
      }
      list_after_[it.key()] = std::move(*it);
    }
    auto kind = list_after_.find("kind");
    if (kind == list_after_.end() || !IsListKind(*kind)) {
      return FailedPrecondition(std::string(kNotStreamable) +
                                "an object with an items array is not a List");
    }
    if (opts_.verb == Verb::kInlineToCsi) list_after_["kind"] = "List";
    return output_.EndList(list_after_);
  }

  // After the last input: the lone first document, if that is all there was.
  // Returns the exit status.
  int Finish(std::ostream& out) {
    if (documents_ == 0) return Fail(err_, InvalidArgument("no object in the input"));
    if (documents_ == 1 && has_first_) {
      // One plain object: all or nothing.
      const bool pod = KindOf(first_) == "Pod";
      StatusOr<std::vector<Json>> result = command_.TranslateObject(std::move(first_), false);
      if (!result.ok()) return Fail(err_, result.status());
      if (result->size() == 1 && !pod) {
        out << Render((*result)[0], output_format_);
      } else {
        out << Render(Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", *result}},
                      output_format_);
      }
      return 0;
    }
    Status finished = output_.Finish();
    if (!finished.ok()) return Fail(err_, finished);
    PrintSummary();
    return summary_.failed > 0 ? 2 : 0;
  }

  void set_output_format(OutputFormat format) { output_format_ = format; }

 private:
  // Past the limit of what is held, output is written as it comes and the input dropped.
  void ReleaseIfLarge() {
    if (input_ == nullptr || !output_.holding()) return;
    output_.MaybeRelease(input_->size());
    if (!output_.holding()) input_->SetRetain(false);
  }

  Status ReleaseFirst() {
    if (!has_first_) return Status::Ok();
    has_first_ = false;
    items_total_ = 1;
    item_index_ = 0;
    TranslateItem(std::move(first_), false);
    first_ = Json();
    return Status::Ok();
  }

  // Output order is key order: members before "items" open the list, the others close it.
  static void SplitAroundItems(Json members, Json* before, Json* after) {
    for (auto it = members.begin(); it != members.end(); ++it) {
      (it.key() < "items" ? *before : *after)[it.key()] = std::move(*it);
    }
  }

  // `total` is 0 when unknown (streamed).
  void BeginItems(size_t total) {
    items_total_ = total;
    item_index_ = 0;
    progress_shown_ = false;
  }
  void EndItems() {
    if (progress_shown_) err_ << "\r\033[K" << std::flush;
  }

  // Translates item number item_index_+1 of the current list (or a lone document), reports a
  // failure, counts it, and hands the result to the output.
  void TranslateItem(Json item, bool in_list) {
    const size_t index = ++item_index_;
    // The error line names the object; translation consumes it, so take the names first.
    std::string kind = KindOf(item), name = NameOf(item);
    StatusOr<std::vector<Json>> result = command_.TranslateObject(std::move(item), true);
    if (Count(index, kind, name, result.status())) {
      for (Json& j : *result) {
        if (in_list) {
          output_.AddItem(std::move(j));
        } else {
          Status s = output_.AddObject(std::move(j));
          if (!s.ok()) deferred_error_ = s;
        }
      }
    }
    ShowProgress(index);
  }

  // Counts what became of item number `index` (the command's last object) in the summary and
  // reports it if it failed. Returns whether it has output.
  bool Count(size_t index, JsonView item, const Status& status) {
    if (status.ok()) return Count(index, std::string(), std::string(), status);
    return Count(index, KindOf(item), NameOf(item), status);
  }
  bool Count(size_t index, const std::string& kind, const std::string& name, const Status& status) {
    const std::string plugin = command_.last_plugin();
    if (!status.ok()) {
      ++summary_.failed;
      ++summary_.by_plugin[plugin][Outcome::kFailed];
      output_.ItemError("error: " + (kind.empty() ? std::string("object") : kind) + " " +
                        GoQuote(name) + " (item " + std::to_string(index) +
                        "): " + status.message() + "\n");
      return false;
    }
    const Outcome outcome = command_.last_outcome();
    ++(outcome == Outcome::kTranslated ? summary_.translated : summary_.unchanged);
    ++summary_.by_plugin[plugin][outcome];
    return true;
  }

  // A terminal sees how far a long list has come: every 500 items from 1000 on (of a known
  // total, or of a streamed list whose length is not known yet).
  void ShowProgress(size_t done) {
    if (!progress_ || done % 500 != 0) return;
    if (items_total_ != 0) {
      if (items_total_ < kProgressThreshold) return;
      err_ << "\rtranslating: " << done << "/" << items_total_ << std::flush;
    } else {
      if (done < kProgressThreshold) return;
      err_ << "\rtranslating: " << done << std::flush;
    }
    progress_shown_ = true;
  }

  void PrintSummary() {
    err_ << "summary: " << summary_.translated << " translated, " << summary_.unchanged
         << " unchanged, " << summary_.failed << " failed\n";
    for (const auto& [plugin, counts] : summary_.by_plugin) {
      if (plugin == "-") continue;
      err_ << "  " << plugin << ":";
      const char* sep = " ";
      for (const auto& [outcome, n] : counts) {
        err_ << sep << n
             << (outcome == Outcome::kTranslated  ? " translated"
                 : outcome == Outcome::kUnchanged ? " unchanged"
                                                  : " failed");
        sep = ", ";
      }
      err_ << "\n";
    }
  }

 public:
  // An output error from a lone object's translation (AddObject cannot return it there).
  Status deferred_error() const { return deferred_error_; }

 private:
  const Options& opts_;
  ObjectTranslator command_;
  TranslateOutput& output_;
  std::ostream& err_;
  const bool progress_;
  OutputFormat output_format_ = OutputFormat::kJson;
  InputBuffer* input_ = nullptr;
  Summary summary_;
  size_t documents_ = 0;
  Json first_;
  bool has_first_ = false;
  Json list_after_;
  size_t items_total_ = 0, item_index_ = 0;
  bool progress_shown_ = false;
  Status deferred_error_;
};

}  // namespace

std::string Render(const Json& value, OutputFormat format) {
  if (format == OutputFormat::kYaml) return JsonToYaml(value);
  if (format == OutputFormat::kJsonCompact) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return value.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

int Fail(std::ostream& err, const Status& status) {
  err << "error: " << status.message() << "\n";
  return 1;
}

// Translates the inputs. `whole` parses each input completely before translating (what a
// streamed list that was not one falls back to). Returns the exit status.
int TranslateInputs(const Options& opts, const Translator& translator, InputBuffer& stdin_input,
                    const std::string* stdin_text, OutputFormat format,
                    const std::vector<bool>& has_content, bool whole, std::ostream& out,
                    std::ostream& err, bool progress, bool* retry_whole) {
  TranslateOutput output(out, err, format);
  Session session(opts, translator, output, err, progress);
  session.set_output_format(format);
  bool stdin_used = false;
  for (size_t f = 0; f < opts.files.size(); ++f) {
    const std::string& file = opts.files[f];
    bool more = false;
    for (size_t later = f + 1; later < opts.files.size(); ++later)
      more = more || has_content[later];
    output.set_more_inputs(more);
    const std::string where = file == "-" ? "stdin" : file;
    std::unique_ptr<std::ifstream> stream;
    std::unique_ptr<InputBuffer> file_input;
    InputBuffer* input = &stdin_input;
    std::string text;
    if (file == "-") {
      // Only the first "-" sees stdin; it is read to its end.
      if (stdin_used) {
        input = nullptr;
      } else if (stdin_text != nullptr) {
        text = *stdin_text;
        input = nullptr;
      }
      stdin_used = true;
    } else {
      stream = std::make_unique<std::ifstream>(file, std::ios::binary);
      if (!*stream) {
        output.DropHeld();
        return Fail(err, NotFound("cannot open " + file));
      }
      file_input = std::make_unique<InputBuffer>(*stream);
      input = file_input.get();
    }
    const bool json = input != nullptr ? StartsLikeJson(*input) : LooksLikeJson(text);
    Status status;
    if (input != nullptr && !whole) {
      session.set_input(input);
      status = json ? StreamJsonDocument(*input, session) : StreamYamlDocuments(*input, session);
      session.set_input(nullptr);
    } else {
      if (input != nullptr) text = AllText(*input);
      if (json) {
        StatusOr<Json> doc = ParseJsonText(text);
        status = doc.ok() ? session.OnDocument(std::move(*doc)) : doc.status();
      } else {
        StatusOr<std::vector<Json>> docs = ParseYamlDocuments(text);
        if (!docs.ok()) {
          status = docs.status();
        } else {
          for (Json& d : *docs) {
            status = session.OnDocument(std::move(d));
            if (!status.ok()) break;
          }
        }
      }
    }
    if (status.ok()) status = session.deferred_error();
    if (!status.ok()) {
      // What the stream could not take (a list that was not one, a YAML piece that cannot
      // be read alone) may read fine whole: if nothing is written yet, read it whole.
      const bool not_streamable = status.code() == Code::kFailedPrecondition;
      if (not_streamable && output.holding() && retry_whole != nullptr) {
        // Nothing written yet: translate everything again, parsed whole.
        output.DropHeld();
        *retry_whole = true;
        return 1;
      }
      if (output.holding()) output.DropHeld();
      return Fail(err, status.WithContext(where));
    }
  }
  return session.Finish(out);
}

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
