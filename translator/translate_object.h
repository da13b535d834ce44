// One object translated, whichever verb (to-csi pv, to-intree pv, to-csi storageclass, to-csi
// inline), and what became of it. Internal to translate_command.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "translator/go_strings.h"
#include "translator/json_fields.h"
#include "translator/json_view.h"
#include "translator/spec_changes.h"
#include "translator/translate_args.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace command {

// Whether `doc` is a List (a kind ending in "List", with items).
bool IsListKind(const Json& kind);
bool IsList(const Json& doc);
// The object's kind and name ("" when it has none); a pod volume's name is its own "name".
std::string KindOf(JsonView obj);
std::string NameOf(JsonView obj);

// What happened to one input object.
enum class Outcome { kTranslated, kUnchanged, kFailed };

// The translation of one object, whichever verb. Objects are consumed: what needs no
// translation is moved to the output, what does is translated without a copy.
class ObjectTranslator {
 public:
  ObjectTranslator(const Options& opts, const Translator& translator)
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

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
