#include "translator/translate_command.h"

#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "common/status.h"
#include "translator/go_strings.h"
#include "translator/json_fields.h"
#include "translator/translator.h"
#include "common/yaml_json.h"

namespace flexcsi {
namespace translator {
namespace {

constexpr size_t kProgressThreshold = 1000;

const char kUsage[] =
    "usage: flexcsi translate to-csi pv [FILE...] [--rules FILE] [-o yaml|json]\n"
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
  std::string output;  // "", "yaml" or "json"
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
  if (opts->verb == Verb::kRepairHandle) {
    if (!opts->driver || !opts->handle || !opts->node_id) {
      return InvalidArgument("repair-handle needs --driver, --handle and --node-id");
    }
  }
  return Status::Ok();
}

// One object read from the input, with where it came from for error reports.
struct Document {
  Json value;
  bool is_list = false;
};

Status ReadText(const std::string& file, std::istream& in, std::string* text) {
  std::ostringstream buffer;
  if (file == "-") {
    buffer << in.rdbuf();
  } else {
    std::ifstream f(file, std::ios::binary);
    if (!f) return NotFound("cannot open " + file);
    buffer << f.rdbuf();
  }
  *text = buffer.str();
  return Status::Ok();
}

bool IsList(const Json& doc) {
  if (!doc.is_object()) return false;
  auto kind = doc.find("kind");
  auto items = doc.find("items");
  if (kind == doc.end() || !kind->is_string() || items == doc.end()) return false;
  const std::string& k = kind->get_ref<const std::string&>();
  return k.size() >= 4 && k.compare(k.size() - 4, 4, "List") == 0 &&
         (items->is_array() || items->is_null());
}

std::string KindOf(const Json& obj) {
  if (!obj.is_object()) return std::string();
  auto kind = obj.find("kind");
  return kind != obj.end() && kind->is_string() ? kind->get<std::string>() : std::string();
}

std::string NameOf(const Json& obj) {
  if (!obj.is_object()) return std::string();
  auto metadata = obj.find("metadata");
  if (metadata != obj.end() && metadata->is_object()) {
    auto name = metadata->find("name");
    if (name != metadata->end() && name->is_string()) return name->get<std::string>();
  }
  auto name = obj.find("name");  // pod volumes
  return name != obj.end() && name->is_string() ? name->get<std::string>() : std::string();
}

// What happened to one input object.
enum class Outcome { kTranslated, kUnchanged, kFailed };

struct Summary {
  size_t translated = 0, unchanged = 0, failed = 0;
  std::map<std::string, std::map<Outcome, size_t>> by_plugin;
};

class Command {
 public:
  Command(const Options& opts, Translator translator, std::ostream& err, bool progress)
      : opts_(opts), translator_(std::move(translator)), err_(err), progress_(progress) {}

  // Translates one object. Returns the objects to output in its place (none, one, or several
  // for a Pod's volumes). `batch` decides whether objects that need no translation are an error.
  StatusOr<std::vector<Json>> TranslateObject(const Json& obj, bool batch) {
    switch (opts_.verb) {
      case Verb::kPVToCsi:
        return PVToCsi(obj, batch);
      case Verb::kPVToInTree:
        return PVToInTree(obj, batch);
      case Verb::kStorageClassToCsi:
        return StorageClassToCsi(obj, batch);
      case Verb::kInlineToCsi:
        return InlineToCsi(obj, batch);
      default:
        return Internal("not an object command");
    }
  }

  // Translates every element of `items` (an array) in place; failures are reported and
  // counted, not fatal, and left out. Each input element is released as soon as it has been
  // translated, so a large dump is not held twice.
  void TranslateItems(Json& items) {
    Json translated = Json::array();
    const size_t total = items.size();
    for (size_t i = 0; i < total; ++i) {
      Json& item = items[i];
      last_plugin_.clear();
      StatusOr<std::vector<Json>> result = TranslateObject(item, true);
      std::string plugin = last_plugin_.empty() ? "-" : last_plugin_;
      if (!result.ok()) {
        ++summary_.failed;
        ++summary_.by_plugin[plugin][Outcome::kFailed];
        std::string kind = KindOf(item).empty() ? "object" : KindOf(item);
        err_ << "error: " << kind << " " << GoQuote(NameOf(item)) << " (item " << i + 1
             << "): " << result.status().message() << "\n";
      } else {
        Outcome outcome = last_outcome_;
        if (outcome == Outcome::kTranslated) {
          ++summary_.translated;
        } else {
          ++summary_.unchanged;
        }
        ++summary_.by_plugin[plugin][outcome];
        for (Json& j : *result) translated.push_back(std::move(j));
      }
      item = nullptr;
      if (progress_ && total >= kProgressThreshold && (i + 1) % 500 == 0) {
        err_ << "\rtranslating: " << i + 1 << "/" << total << std::flush;
      }
    }
    if (progress_ && total >= kProgressThreshold) err_ << "\r\033[K" << std::flush;
    items = std::move(translated);
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

  const Summary& summary() const { return summary_; }

 private:
  std::vector<Json> Unchanged(const Json& obj) {
    last_outcome_ = Outcome::kUnchanged;
    return {obj};
  }
  std::vector<Json> Translated(Json obj) {
    last_outcome_ = Outcome::kTranslated;
    std::vector<Json> out;
    out.push_back(std::move(obj));
    return out;
  }

  static Status WrongKind(const Json& obj, const char* want) {
    if (!obj.is_object()) {
      return InvalidArgument(std::string("expected a ") + want + " object, got " +
                             JsonTypeName(obj));
    }
    return InvalidArgument(std::string("expected a ") + want + ", got kind " +
                           GoQuote(KindOf(obj)));
  }

  static bool HasKind(const Json& obj, const char* kind) {
    std::string k = KindOf(obj);
    return obj.is_object() && (k.empty() || k == kind);
  }

  StatusOr<std::vector<Json>> PVToCsi(const Json& obj, bool batch) {
    if (!HasKind(obj, "PersistentVolume")) {
      if (batch) return Unchanged(obj);
      return WrongKind(obj, "PersistentVolume");
    }
    StatusOr<std::string> plugin = translator_.GetInTreePluginNameFromSpec(&obj, nullptr);
    if (plugin.ok()) last_plugin_ = *plugin;
    bool is_flex = false;
    if (const Json* spec = FindField(obj, "spec")) is_flex = FindField(*spec, "flexVolume");
    if (is_flex && !plugin.ok()) last_plugin_ = "flexVolume";
    // In a dump, volumes no plugin handles (hostPath, nfs, csi, ...) need nothing; a
    // flexVolume without a rule is a volume the user wants migrated and cannot be.
    if (batch && !plugin.ok() && !is_flex) return Unchanged(obj);
    StatusOr<Json> pv = translator_.TranslateInTreePVToCSI(obj);
    if (!pv.ok()) {
      if (is_flex && translator_.flexvolume_rules().empty()) {
        return InvalidArgument(pv.status().message() + " (flexVolume needs --rules)");
      }
      return pv.status();
    }
    return Translated(std::move(*pv));
  }

  StatusOr<std::vector<Json>> PVToInTree(const Json& obj, bool batch) {
    if (!HasKind(obj, "PersistentVolume")) {
      if (batch) return Unchanged(obj);
      return WrongKind(obj, "PersistentVolume");
    }
    const Json* spec = FindField(obj, "spec");
    const Json* csi = spec == nullptr ? nullptr : FindField(*spec, "csi");
    const Json* driver = csi == nullptr ? nullptr : FindField(*csi, "driver");
    if (driver != nullptr && driver->is_string()) {
      StatusOr<std::string> name = translator_.GetInTreeNameFromCSIName(driver->get<std::string>());
      if (name.ok()) last_plugin_ = *name;
      if (batch && !name.ok()) return Unchanged(obj);
    } else if (batch) {
      return Unchanged(obj);
    }
    StatusOr<Json> pv = translator_.TranslateCSIPVToInTree(obj);
    if (!pv.ok()) return pv.status();
    return Translated(std::move(*pv));
  }

  StatusOr<std::vector<Json>> StorageClassToCsi(const Json& obj, bool batch) {
    if (!HasKind(obj, "StorageClass")) {
      if (batch) return Unchanged(obj);
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
      if (batch && !translator_.IsMigratableIntreePluginByName(plugin)) return Unchanged(obj);
    }
    last_plugin_ = plugin;
    StatusOr<Json> sc = translator_.TranslateInTreeStorageClassToCSI(plugin, obj);
    if (!sc.ok()) return sc.status();
    return Translated(std::move(*sc));
  }

  StatusOr<std::vector<Json>> InlineToCsi(const Json& obj, bool batch) {
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
  Translator translator_;
  std::ostream& err_;
  bool progress_;
  Summary summary_;
  std::string last_plugin_;
  Outcome last_outcome_ = Outcome::kTranslated;
};

// Streams pretty JSON without building the whole text first. Text parsed from JSON is valid
// UTF-8 and can be streamed; values from YAML may not be, and are dumped with replacement.
void WriteJson(std::ostream& out, const Json& value, bool valid_utf8) {
  if (valid_utf8) {
    out << std::setw(2) << value << "\n";
  } else {
    out << value.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  }
}

std::string Render(const Json& value, bool yaml) {
  if (yaml) return JsonToYaml(value);
  return value.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

int Fail(std::ostream& err, const Status& status) {
  err << "error: " << status.message() << "\n";
  return 1;
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
  bool yaml_out = opts.output == "yaml";

  if (opts.verb == Verb::kRepairHandle) {
    StatusOr<std::string> handle =
        translator.RepairVolumeHandle(*opts.driver, *opts.handle, *opts.node_id);
    if (!handle.ok()) return Fail(err, handle.status());
    out << Render(Json{{"volumeHandle", *handle}}, yaml_out);
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
    out << Render(result, yaml_out);
    return 0;
  }

  // Read every input into documents.
  if (opts.files.empty()) opts.files.push_back("-");
  std::vector<Json> docs;
  bool all_json = true;
  for (const std::string& file : opts.files) {
    std::string text;
    Status read = ReadText(file, in, &text);
    if (!read.ok()) return Fail(err, read);
    std::string where = file == "-" ? "stdin" : file;
    if (LooksLikeJson(text)) {
      StatusOr<Json> doc = ParseJsonText(text);
      if (!doc.ok()) return Fail(err, doc.status().WithContext(where));
      docs.push_back(std::move(*doc));
    } else {
      all_json = false;
      StatusOr<std::vector<Json>> parsed_docs = ParseYamlDocuments(text);
      if (!parsed_docs.ok()) return Fail(err, parsed_docs.status().WithContext(where));
      for (Json& d : *parsed_docs) docs.push_back(std::move(d));
    }
  }
  if (opts.output.empty()) yaml_out = !all_json;
  if (docs.empty()) return Fail(err, InvalidArgument("no object in the input"));

  Command command(opts, std::move(translator), err, progress);
  // One plain object: all or nothing.
  if (docs.size() == 1 && !IsList(docs[0]) && !docs[0].is_array()) {
    StatusOr<std::vector<Json>> result = command.TranslateObject(docs[0], false);
    if (!result.ok()) return Fail(err, result.status());
    if (result->size() == 1 && KindOf(docs[0]) != "Pod") {
      out << Render((*result)[0], yaml_out);
    } else {
      out << Render(Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", *result}}, yaml_out);
    }
    return 0;
  }

  // Lists, arrays and several documents: translate what can be, report the rest. Documents
  // are rewritten in place.
  std::vector<Json> outputs;
  for (Json& doc : docs) {
    if (doc.is_array()) {
      command.TranslateItems(doc);
      outputs.push_back(std::move(doc));
    } else if (IsList(doc)) {
      Json& items = doc["items"];
      if (items.is_null()) items = Json::array();
      command.TranslateItems(items);
      // A list of pods becomes a list of PVs.
      if (opts.verb == Verb::kInlineToCsi) doc["kind"] = "List";
      outputs.push_back(std::move(doc));
    } else {
      Json single = Json::array();
      single.push_back(std::move(doc));
      command.TranslateItems(single);
      for (Json& t : single) outputs.push_back(std::move(t));
    }
  }
  docs.clear();
  if (yaml_out) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i > 0 || outputs.size() > 1) out << "---\n";
      out << JsonToYaml(outputs[i]);
    }
  } else if (outputs.size() == 1) {
    WriteJson(out, outputs[0], all_json);
  } else {
    WriteJson(out,
              Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", Json(std::move(outputs))}},
              all_json);
  }
  command.PrintSummary();
  return command.summary().failed > 0 ? 2 : 0;
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
