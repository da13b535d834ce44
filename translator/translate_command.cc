#include "translator/translate_command.h"

#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "common/status.h"
#include "common/yaml_json.h"
#include "translator/go_strings.h"
#include "translator/input_buffer.h"
#include "translator/json_fields.h"
#include "translator/json_stream.h"
#include "translator/spec_changes.h"
#include "translator/translate_output.h"
#include "translator/translator.h"
#include "translator/yaml_stream.h"

namespace flexcsi {
namespace translator {
namespace {

constexpr size_t kProgressThreshold = 1000;

const char kUsage[] =
    "usage: flexcsi translate to-csi pv [FILE...] [--rules FILE] [-o yaml|json] [--compact]\n"
    "       flexcsi translate to-csi inline --pod-namespace NS [FILE...] [--rules FILE]\n"
    "       flexcsi translate to-csi storageclass --plugin kubernetes.io/<x> [FILE...]\n"
    "       flexcsi translate to-intree pv [FILE...] [--rules FILE] [-o yaml|json]\n"
    "       flexcsi translate repair-handle --driver D --handle H --node-id N [--rules FILE]\n"
    "       flexcsi translate names [--plugin P | --driver D] [--rules FILE]\n";

enum class Verb { kPVToCsi, kInlineToCsi, kStorageClassToCsi, kPVToInTree, kRepairHandle, kNames };

struct Options {
  Verb verb = Verb::kPVToCsi;
  std::vector<std::string> files;
  std::string rules_file;
  std::string output;    // "", "yaml" or "json"
  bool compact = false;  // JSON on one line
  std::optional<std::string> pod_namespace, plugin, driver, handle, node_id;
};

Status ParseArgs(const std::vector<std::string>& args, Options* opts) {
  size_t i = 0;
  auto word = [&](size_t k) { return k < args.size() ? args[k] : std::string(); };
  std::string verb = word(0), noun = word(1);
  if (verb == "to-csi" && noun == "pv") {
    opts->verb = Verb::kPVToCsi;
    i = 2;
  } else if (verb == "to-csi" && noun == "inline") {
    opts->verb = Verb::kInlineToCsi;
    i = 2;
  } else if (verb == "to-csi" && noun == "storageclass") {
    opts->verb = Verb::kStorageClassToCsi;
    i = 2;
  } else if (verb == "to-intree" && noun == "pv") {
    opts->verb = Verb::kPVToInTree;
    i = 2;
  } else if (verb == "repair-handle") {
    opts->verb = Verb::kRepairHandle;
    i = 1;
  } else if (verb == "names") {
    opts->verb = Verb::kNames;
    i = 1;
  } else if (verb.empty()) {
    return InvalidArgument("missing command");
  } else {
    return InvalidArgument("unknown command: " + GoJoin(args, " "));
  }
  const std::map<std::string, std::optional<std::string>*> valued = {
      {"--pod-namespace", &opts->pod_namespace},
      {"--plugin", &opts->plugin},
      {"--driver", &opts->driver},
      {"--handle", &opts->handle},
      {"--node-id", &opts->node_id}};
  for (; i < args.size(); ++i) {
    std::string arg = args[i], value;
    bool has_inline_value = false;
    size_t eq = arg.find('=');
    if (StartsWith(arg, "--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&](std::string* out) -> Status {
      if (has_inline_value) {
        *out = value;
        return Status::Ok();
      }
      if (i + 1 >= args.size()) return InvalidArgument("flag " + arg + " needs a value");
      *out = args[++i];
      return Status::Ok();
    };
    if (arg == "--rules") {
      FLEXCSI_RETURN_IF_ERROR(take_value(&opts->rules_file));
    } else if (arg == "-o" || arg == "--output") {
      FLEXCSI_RETURN_IF_ERROR(take_value(&opts->output));
      if (opts->output != "yaml" && opts->output != "json") {
        return InvalidArgument("unknown output format " + GoQuote(opts->output) +
                               " (want yaml or json)");
      }
    } else if (arg == "--compact") {
      opts->compact = true;
    } else if (arg == "-f" || arg == "--filename") {
      std::string file;
      FLEXCSI_RETURN_IF_ERROR(take_value(&file));
      opts->files.push_back(file);
    } else if (valued.count(arg) != 0) {
      std::string v;
      FLEXCSI_RETURN_IF_ERROR(take_value(&v));
      *valued.at(arg) = v;
    } else if (arg == "-" || !StartsWith(arg, "-")) {
      opts->files.push_back(arg);
    } else {
      return InvalidArgument("unknown flag " + arg);
    }
  }
  if (opts->compact && opts->output == "yaml") {
    return InvalidArgument("--compact writes JSON; it does not go with -o yaml");
  }
  if (opts->verb == Verb::kRepairHandle) {
    if (!opts->driver || !opts->handle || !opts->node_id) {
      return InvalidArgument("repair-handle needs --driver, --handle and --node-id");
    }
  }
  return Status::Ok();
}

bool IsListKind(const Json& kind) {
  if (!kind.is_string()) return false;
  const std::string& k = kind.get_ref<const std::string&>();
  return k.size() >= 4 && k.compare(k.size() - 4, 4, "List") == 0;
}

bool IsList(const Json& doc) {
  if (!doc.is_object()) return false;
  auto kind = doc.find("kind");
  auto items = doc.find("items");
  if (kind == doc.end() || items == doc.end()) return false;
  return IsListKind(*kind) && (items->is_array() || items->is_null());
}

std::string KindOf(JsonView obj) {
  JsonView kind = obj.Find("kind");
  return kind.is_string() ? std::string(kind.string_value()) : std::string();
}

std::string NameOf(JsonView obj) {
  JsonView name = obj.Find("metadata").Find("name");
  if (!name.is_string()) name = obj.Find("name");  // pod volumes
  return name.is_string() ? std::string(name.string_value()) : std::string();
}

// What happened to one input object.
enum class Outcome { kTranslated, kUnchanged, kFailed };

struct Summary {
  size_t translated = 0, unchanged = 0, failed = 0;
  std::map<std::string, std::map<Outcome, size_t>> by_plugin;
};

// The translation of one object, whichever verb. Objects are consumed: what needs no
// translation is moved to the output, what does is translated without a copy.
class Command {
 public:
  Command(const Options& opts, const Translator& translator)
      : opts_(opts), translator_(translator) {}

  // Translates one object. Returns the objects to output in its place (none, one, or several
  // for a Pod's volumes). `batch` decides whether objects that need no translation are an error.
  StatusOr<std::vector<Json>> TranslateObject(Json&& obj, bool batch) {
    last_plugin_.clear();
    switch (opts_.verb) {
      case Verb::kPVToCsi:
        return PVToCsi(std::move(obj), batch);
      case Verb::kPVToInTree:
        return PVToInTree(std::move(obj), batch);
      case Verb::kStorageClassToCsi:
        return StorageClassToCsi(std::move(obj), batch);
      case Verb::kInlineToCsi:
        return InlineToCsi(std::move(obj), batch);
      default:
        return Internal("not an object command");
    }
  }

  // The plugin the last TranslateObject or PVToCsiChanges was about ("-" for none) and what
  // became of it.
  std::string last_plugin() const { return last_plugin_.empty() ? "-" : last_plugin_; }
  Outcome last_outcome() const { return last_outcome_; }

  // The to-csi pv translation of one object read through a view: what changes in it, or
  // nullopt when it stays as it is (a batch object that needs no translation).
  StatusOr<std::optional<SpecChanges>> PVToCsiChanges(JsonView obj, bool batch) {
    last_plugin_.clear();
    if (!HasKind(obj, "PersistentVolume")) {
      if (batch) return Unchanged();
      return WrongKind(obj, "PersistentVolume");
    }
    StatusOr<std::string> plugin = translator_.GetInTreePluginNameFromPV(obj);
    if (plugin.ok()) last_plugin_ = *plugin;
    const bool is_flex = bool(FindField(FindField(obj, "spec"), "flexVolume"));
    if (is_flex && !plugin.ok()) last_plugin_ = "flexVolume";
    // In a dump, volumes no plugin handles (hostPath, nfs, csi, ...) need nothing; a
    // flexVolume without a rule is a volume the user wants migrated and cannot be.
    if (batch && !plugin.ok() && !is_flex) return Unchanged();
    StatusOr<SpecChanges> changes = translator_.TranslateInTreePVToCSIChanges(obj);
    if (!changes.ok()) {
      if (is_flex && translator_.flexvolume_rules().empty()) {
        return InvalidArgument(changes.status().message() + " (flexVolume needs --rules)");
      }
      return changes.status();
    }
    last_outcome_ = Outcome::kTranslated;
    return std::optional<SpecChanges>(std::move(*changes));
  }

 private:
  std::vector<Json> Unchanged(Json&& obj) {
    last_outcome_ = Outcome::kUnchanged;
    std::vector<Json> out;
    out.push_back(std::move(obj));
    return out;
  }
  // PVToCsiChanges' form: nothing changes.
  std::optional<SpecChanges> Unchanged() {
    last_outcome_ = Outcome::kUnchanged;
    return std::nullopt;
  }
  std::vector<Json> Translated(Json obj) {
    last_outcome_ = Outcome::kTranslated;
    std::vector<Json> out;
    out.push_back(std::move(obj));
    return out;
  }

  static Status WrongKind(JsonView obj, const char* want) {
    if (!obj.is_object()) {
      return InvalidArgument(std::string("expected a ") + want + " object, got " +
                             JsonTypeName(obj));
    }
    return InvalidArgument(std::string("expected a ") + want + ", got kind " +
                           GoQuote(KindOf(obj)));
  }

  static bool HasKind(JsonView obj, const char* kind) {
    if (!obj.is_object()) return false;
    JsonView k = obj.Find("kind");
    if (!k.is_string()) return true;
    return k.string_value().empty() || k.string_value() == kind;
  }

  StatusOr<std::vector<Json>> PVToCsi(Json&& obj, bool batch) {
    StatusOr<std::optional<SpecChanges>> changes = PVToCsiChanges(obj, batch);
    if (!changes.ok()) return changes.status();
    if (!changes->has_value()) return Unchanged(std::move(obj));
    std::move(**changes).ApplyTo(obj);
    return Translated(std::move(obj));
  }

  StatusOr<std::vector<Json>> PVToInTree(Json&& obj, bool batch) {
    if (!HasKind(obj, "PersistentVolume")) {
      if (batch) return Unchanged(std::move(obj));
      return WrongKind(obj, "PersistentVolume");
    }
    const Json* spec = FindField(obj, "spec");
    const Json* csi = spec == nullptr ? nullptr : FindField(*spec, "csi");
    const Json* driver = csi == nullptr ? nullptr : FindField(*csi, "driver");
    if (driver != nullptr && driver->is_string()) {
      StatusOr<std::string> name = translator_.GetInTreeNameFromCSIName(driver->get<std::string>());
      if (name.ok()) last_plugin_ = *name;
      if (batch && !name.ok()) return Unchanged(std::move(obj));
    } else if (batch) {
      return Unchanged(std::move(obj));
    }
    StatusOr<Json> pv = translator_.TranslateCSIPVToInTree(std::move(obj));
    if (!pv.ok()) return pv.status();
    return Translated(std::move(*pv));
  }

  StatusOr<std::vector<Json>> StorageClassToCsi(Json&& obj, bool batch) {
    if (!HasKind(obj, "StorageClass")) {
      if (batch) return Unchanged(std::move(obj));
      return WrongKind(obj, "StorageClass");
    }
    std::string plugin;
    if (opts_.plugin) {
      plugin = *opts_.plugin;
    } else {
      // In-tree provisioner names are the in-tree plugin names.
      const Json* provisioner = FindField(obj, "provisioner");
      if (provisioner != nullptr && provisioner->is_string())
        plugin = provisioner->get<std::string>();
      if (plugin.empty())
        return InvalidArgument("no --plugin given and the class has no provisioner");
      if (batch && !translator_.IsMigratableIntreePluginByName(plugin)) {
        return Unchanged(std::move(obj));
      }
    }
    last_plugin_ = plugin;
    StatusOr<Json> sc = translator_.TranslateInTreeStorageClassToCSI(plugin, obj);
    if (!sc.ok()) return sc.status();
    return Translated(std::move(*sc));
  }

  StatusOr<std::vector<Json>> InlineToCsi(Json&& obj, bool batch) {
    if (KindOf(obj) == "Pod") return PodVolumesToCsi(obj);
    if (!obj.is_object() || !KindOf(obj).empty()) {
      if (batch) {
        last_outcome_ = Outcome::kUnchanged;
        return std::vector<Json>();
      }
      return WrongKind(obj, "pod volume");
    }
    StatusOr<std::string> plugin = translator_.GetInTreePluginNameFromSpec(nullptr, &obj);
    if (plugin.ok()) last_plugin_ = *plugin;
    StatusOr<Json> pv = translator_.TranslateInTreeInlineVolumeToCSI(obj, PodNamespace(""));
    if (!pv.ok()) return pv.status();
    return Translated(std::move(*pv));
  }

  // Every migratable volume of a pod, in the pod's namespace unless --pod-namespace says
  // otherwise. Other volumes (configMap, emptyDir, ...) need nothing.
  StatusOr<std::vector<Json>> PodVolumesToCsi(const Json& pod) {
    std::string ns;
    if (const Json* metadata = FindField(pod, "metadata")) {
      if (const Json* n = FindField(*metadata, "namespace"); n != nullptr && n->is_string()) {
        ns = n->get<std::string>();
      }
    }
    std::vector<Json> out;
    const Json* spec = FindField(pod, "spec");
    const Json* volumes = spec == nullptr ? nullptr : FindField(*spec, "volumes");
    if (volumes != nullptr && volumes->is_array()) {
      for (const Json& volume : *volumes) {
        if (!translator_.IsInlineMigratable(volume)) continue;
        StatusOr<std::string> plugin = translator_.GetInTreePluginNameFromSpec(nullptr, &volume);
        if (plugin.ok()) last_plugin_ = *plugin;
        StatusOr<Json> pv = translator_.TranslateInTreeInlineVolumeToCSI(volume, PodNamespace(ns));
        if (!pv.ok()) {
          return pv.status().WithContext("volume " + GoQuote(NameOf(volume)));
        }
        out.push_back(std::move(*pv));
      }
    }
    last_outcome_ = out.empty() ? Outcome::kUnchanged : Outcome::kTranslated;
    return out;
  }

  std::string PodNamespace(const std::string& from_pod) const {
    return opts_.pod_namespace ? *opts_.pod_namespace : from_pod;
  }

  const Options& opts_;
  const Translator& translator_;
  std::string last_plugin_;
  Outcome last_outcome_ = Outcome::kTranslated;
};

// Marks the Status of a streamed list that turned out not to be one (see Session).
const char kNotStreamable[] = "cannot translate this input as a stream: ";

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
  Command command_;
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

// Whether an input is JSON (its first non-blank byte is '{' or '['), looked at before anything
// is translated because JSON output needs every input to be JSON.
struct InputKind {
  bool json = false;
};

// The first non-blank byte of `input`, or -1 when there is none.
int FirstNonBlank(InputBuffer& input) {
  size_t i = 0;
  for (;;) {
    for (; i < input.size(); ++i) {
      const char c = input.window()[i];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      return static_cast<unsigned char>(c);
    }
    if (!input.Fill(i + 1)) return -1;
  }
}

bool StartsLikeJson(InputBuffer& input) {
  const int c = FirstNonBlank(input);
  return c == '{' || c == '[';
}

// Reads all of `input` (what is in the window and the rest) as text.
std::string AllText(InputBuffer& input) {
  while (input.Fill(input.end() + 1)) {
  }
  return std::string(input.window(), input.size());
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

// Decides the output format before anything is read but the first bytes of each input: JSON
// output needs every input to be JSON. Notes which inputs have anything in them. A file that
// cannot be opened is an error now, before any output.
StatusOr<OutputFormat> ChooseFormat(const Options& opts, InputBuffer& stdin_input,
                                    std::vector<bool>* has_content) {
  bool all_json = true, stdin_seen = false;
  for (const std::string& file : opts.files) {
    int first = -1;
    if (file == "-") {
      // A second "-" finds stdin already read: an empty text, which is not JSON.
      if (!stdin_seen) first = FirstNonBlank(stdin_input);
      stdin_seen = true;
    } else {
      std::ifstream stream(file, std::ios::binary);
      if (!stream) return NotFound("cannot open " + file);
      InputBuffer peek(stream);
      first = FirstNonBlank(peek);
    }
    has_content->push_back(first != -1);
    all_json = all_json && (first == '{' || first == '[');
  }
  if (opts.compact) return OutputFormat::kJsonCompact;
  if (opts.output == "yaml") return OutputFormat::kYaml;
  if (opts.output == "json") return OutputFormat::kJson;
  return all_json ? OutputFormat::kJson : OutputFormat::kYaml;
}

int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, bool progress) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
    out << kUsage;
    return 0;
  }
  Options opts;
  Status parsed = ParseArgs(args, &opts);
  if (!parsed.ok()) {
    err << "error: " << parsed.message() << "\n" << kUsage;
    return 1;
  }
  FlexVolumeRules rules;
  if (!opts.rules_file.empty()) {
    StatusOr<FlexVolumeRules> loaded = LoadFlexVolumeRulesFile(opts.rules_file);
    if (!loaded.ok()) return Fail(err, loaded.status());
    for (const std::string& w : loaded->warnings()) err << "warning: " << w << "\n";
    rules = std::move(*loaded);
  }
  Translator translator(std::move(rules));
  const OutputFormat simple_format =
      opts.compact ? OutputFormat::kJsonCompact
                   : (opts.output == "yaml" ? OutputFormat::kYaml : OutputFormat::kJson);

  if (opts.verb == Verb::kRepairHandle) {
    StatusOr<std::string> handle =
        translator.RepairVolumeHandle(*opts.driver, *opts.handle, *opts.node_id);
    if (!handle.ok()) return Fail(err, handle.status());
    out << Render(Json{{"volumeHandle", *handle}}, simple_format);
    return 0;
  }
  if (opts.verb == Verb::kNames) {
    Json result;
    if (opts.plugin) {
      StatusOr<std::string> name = translator.GetCSINameFromInTreeName(*opts.plugin);
      if (!name.ok()) return Fail(err, name.status());
      result = Json{{"inTreePluginName", *opts.plugin}, {"csiDriverName", *name}};
    } else if (opts.driver) {
      StatusOr<std::string> name = translator.GetInTreeNameFromCSIName(*opts.driver);
      if (!name.ok()) return Fail(err, name.status());
      result = Json{{"inTreePluginName", *name}, {"csiDriverName", *opts.driver}};
    } else {
      result = Json::array();
      for (const auto& [in_tree, csi] : translator.BuiltInPluginNames()) {
        result.push_back(Json{{"inTreePluginName", in_tree}, {"csiDriverName", csi}});
      }
      for (const FlexVolumeRule& r : translator.flexvolume_rules().rules()) {
        result.push_back(Json{{"flexDriver", r.flex_driver}, {"csiDriverName", r.csi_driver}});
      }
    }
    out << Render(result, simple_format);
    return 0;
  }

  if (opts.files.empty()) opts.files.push_back("-");
  InputBuffer stdin_input(in);
  std::vector<bool> has_content;
  StatusOr<OutputFormat> chosen = ChooseFormat(opts, stdin_input, &has_content);
  if (!chosen.ok()) return Fail(err, chosen.status());
  const OutputFormat format = *chosen;
  bool retry_whole = false;
  // Held from the start so that, if a streamed list turns out not to be one, all of stdin can
  // be read again; released as soon as the output is.
  stdin_input.SetRetain(true);
  int status = TranslateInputs(opts, translator, stdin_input, nullptr, format, has_content, false,
                               out, err, progress, &retry_whole);
  if (!retry_whole) return status;
  std::string stdin_text;
  if (stdin_input.begin() == 0) stdin_text = AllText(stdin_input);
  return TranslateInputs(opts, translator, stdin_input, &stdin_text, format, has_content, true, out,
                         err, progress, nullptr);
}

}  // namespace

int RunTranslateCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                        std::ostream& err) {
  bool progress = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
  try {
    return Run(args, in, out, err, progress);
  } catch (const std::exception& e) {
    // Nothing should get here; if something does, fail like any other error, not by crashing.
    err << "error: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace translator
}  // namespace flexcsi
