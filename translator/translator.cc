#include "translator/translator.h"

#include "translator/flexvolume_pv.h"
#include "translator/in_tree_plugin.h"
#include "translator/json_fields.h"
#include "translator/source_pv.h"

namespace flexcsi {
namespace translator {
namespace {

const char kFlexVolumeField[] = "flexVolume";

// Runs `fn`, turning malformed-input exceptions into InvalidArgument. No exception leaves the
// translator.
template <typename Fn>
auto Guarded(Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const FieldTypeError& e) {
    return InvalidArgument(e.what());
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("malformed object: ") + e.what());
  }
}

std::string FlexPluginName(const std::string& driver) {
  std::string name = "flexvolume-" + driver;
  for (char& c : name) {
    if (c == '/') c = '~';
  }
  return name;
}

JsonView FlexSourceOfPV(JsonView pv) { return FindField(FindField(pv, "spec"), kFlexVolumeField); }

}  // namespace

Translator::Translator() : Translator(FlexVolumeRules()) {}

Translator::Translator(FlexVolumeRules rules, DerivedSecrets derived_secrets)
    : rules_(std::move(rules)), derived_secrets_(derived_secrets) {
  // A fixed order; upstream iterates a Go map, which only matters for objects that (invalidly)
  // carry two volume sources.
  plugins_.push_back(NewGcePdPlugin());
  plugins_.push_back(NewAwsEbsPlugin());
  plugins_.push_back(NewCinderPlugin());
  plugins_.push_back(NewAzureDiskPlugin());
  plugins_.push_back(NewAzureFilePlugin());
  plugins_.push_back(NewVspherePlugin());
  plugins_.push_back(NewPortworxPlugin());
  plugins_.push_back(NewRbdPlugin());
  for (const auto& p : plugins_) source_fields_.emplace_back(p->SourceField());
  static_assert(sizeof(uint32_t) * 8 >= 8, "PluginForPV keeps one bit per plugin");
}

Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

const InTreePlugin* Translator::PluginForPV(JsonView pv) const { return PluginForPV(SourcePV(pv)); }

// InTreePlugin::CanSupport of each plugin in turn, in one pass over the spec's members.
const InTreePlugin* Translator::PluginForPV(const SourcePV& pv) const {
  uint32_t set = 0;  // bit i: plugins_[i]'s source is set (the constructor checks the count)
  pv.ForEachSpecMemberAsWritten([&](std::string_view key, JsonView value) {
    for (size_t i = 0; i < source_fields_.size(); ++i) {
      if (key != source_fields_[i]) continue;
      set = value ? set | (1u << i) : set & ~(1u << i);  // of repeated keys the last one counts
    }
  });
  for (size_t i = 0; i < plugins_.size(); ++i) {
    if (set & (1u << i)) return plugins_[i].get();
  }
  return nullptr;
}

const InTreePlugin* Translator::PluginForInline(const Json& volume) const {
  for (const auto& p : plugins_) {
    if (p->CanSupportInline(volume)) return p.get();
  }
  return nullptr;
}

const InTreePlugin* Translator::PluginForCsiDriver(const std::string& driver) const {
  for (const auto& p : plugins_) {
    if (driver == p->CsiDriverName()) return p.get();
  }
  return nullptr;
}

const FlexVolumeRule* Translator::FlexRuleForPV(JsonView pv) const {
  JsonView flex = FlexSourceOfPV(pv);
  if (!flex.is_object()) return nullptr;
  JsonView driver = FindField(flex, "driver");
  if (!driver.is_string()) return nullptr;
  return rules_.FindByFlexDriver(std::string(driver.string_value()));
}

StatusOr<Json> Translator::TranslateInTreePVToCSI(const Json& pv) const {
  StatusOr<SpecChanges> changes = TranslateInTreePVToCSIChanges(pv);
  if (!changes.ok()) return changes.status();
  Json copy = pv;
  std::move(*changes).ApplyTo(copy);
  return copy;
}

StatusOr<Json> Translator::TranslateInTreePVToCSI(Json&& pv) const {
  StatusOr<SpecChanges> changes = TranslateInTreePVToCSIChanges(pv);
  if (!changes.ok()) return changes.status();
  std::move(*changes).ApplyTo(pv);
  return std::move(pv);
}

StatusOr<SpecChanges> Translator::TranslateInTreePVToCSIChanges(JsonView pv) const {
  if (!pv) return InvalidArgument("persistent volume was nil");
  return Guarded([&]() -> StatusOr<SpecChanges> {
    RequireObject(pv, "persistent volume");
    const SourcePV source(pv);
    SpecChanges changes;
    if (const InTreePlugin* plugin = PluginForPV(source)) {
      FLEXCSI_RETURN_IF_ERROR(plugin->TranslatePVToCsi(source, &changes));
      return changes;
    }
    if (!rules_.empty() && source.SpecField(kFlexVolumeField)) {
      FLEXCSI_RETURN_IF_ERROR(
          TranslateFlexVolumePVToCsi(rules_, source, derived_secrets_, &changes));
      return changes;
    }
    return InvalidArgument("could not find in-tree plugin translation logic for " +
                           GoQuote(source.Name()));
  });
}

StatusOr<CsiVolume> Translator::FlexVolumeOfPV(const Json& pv) const {
  return Guarded([&]() -> StatusOr<CsiVolume> {
    RequireObject(pv, "persistent volume");
    const SourcePV source(pv);
    if (rules_.empty() || !source.SpecField(kFlexVolumeField)) {
      return InvalidArgument("PV " + GoQuote(source.Name()) +
                             " has no flexVolume source with a rule");
    }
    return FlexVolumePVToCsiVolume(rules_, source);
  });
}

StatusOr<Json> Translator::TranslateInTreeInlineVolumeToCSI(
    const Json& volume, const std::string& pod_namespace) const {
  if (volume.is_null()) return InvalidArgument("persistent volume was nil");
  return Guarded([&]() -> StatusOr<Json> {
    RequireObject(volume, "volume");
    StatusOr<Json> pv = InvalidArgument("");
    if (const InTreePlugin* plugin = PluginForInline(volume)) {
      pv = plugin->TranslateInlineToCsi(volume, pod_namespace);
    } else if (!rules_.empty() && FindField(volume, kFlexVolumeField) != nullptr) {
      pv = TranslateFlexVolumeInlineToCsi(rules_, volume, pod_namespace);
    } else {
      return InvalidArgument("could not find in-tree plugin translation logic for " +
                             GoQuote(StringField(volume, "name", "volume")));
    }
    if (!pv.ok()) return pv.status();
    // Inline volumes are never block volumes.
    Json& spec = (*pv)["spec"];
    if (FindField(spec, "volumeMode") == nullptr) spec["volumeMode"] = "Filesystem";
    return pv;
  });
}

StatusOr<Json> Translator::TranslateCSIPVToInTree(const Json& pv) const {
  return CsiPVToInTree(pv);
}

StatusOr<Json> Translator::TranslateCSIPVToInTree(Json&& pv) const {
  return CsiPVToInTree(std::move(pv));
}

StatusOr<Json> Translator::CsiPVToInTree(Json pv) const {
  return Guarded([&]() -> StatusOr<Json> {
    const Json* spec = pv.is_object() ? ObjectField(pv, "spec", "") : nullptr;
    const Json* csi = spec == nullptr ? nullptr : ObjectField(*spec, "csi", "spec");
    if (csi == nullptr) return InvalidArgument("CSI persistent volume was nil");
    std::string driver = StringField(*csi, "driver", "spec.csi");
    if (const InTreePlugin* plugin = PluginForCsiDriver(driver)) {
      Status s = plugin->TranslateCsiPVToInTree(pv);
      if (!s.ok()) return s;
      return std::move(pv);
    }
    if (const FlexVolumeRule* rule = rules_.FindByCsiDriver(driver)) {
      Status s = TranslateCsiPVToFlexVolume(*rule, pv);
      if (!s.ok()) return s;
      return std::move(pv);
    }
    return InvalidArgument("could not find in-tree plugin translation logic for " + driver);
  });
}

StatusOr<Json> Translator::TranslateInTreeStorageClassToCSI(const std::string& in_tree_plugin_name,
                                                            const Json& sc) const {
  return Guarded([&]() -> StatusOr<Json> {
    for (const auto& p : plugins_) {
      if (in_tree_plugin_name != p->InTreePluginName()) continue;
      if (sc.is_null()) return InvalidArgument("sc is nil");
      RequireObject(sc, "storage class");
      Json copy = sc;
      Status s = p->TranslateStorageClassToCsi(copy);
      if (!s.ok()) return s;
      // Go's omitempty: an empty allowedTopologies list is not written.
      DropIfEmpty(copy, "allowedTopologies");
      return copy;
    }
    return InvalidArgument("could not find in-tree storage class parameter translation logic for " +
                           GoQuote(in_tree_plugin_name));
  });
}

bool Translator::IsMigratableIntreePluginByName(const std::string& name) const {
  for (const auto& p : plugins_) {
    if (name == p->InTreePluginName()) return true;
  }
  for (const FlexVolumeRule& r : rules_.rules()) {
    if (name == FlexPluginName(r.flex_driver)) return true;
  }
  return false;
}

bool Translator::IsMigratedCSIDriverByName(const std::string& name) const {
  return PluginForCsiDriver(name) != nullptr || rules_.FindByCsiDriver(name) != nullptr;
}

StatusOr<std::string> Translator::GetInTreePluginNameFromSpec(const Json* pv,
                                                              const Json* volume) const {
  return Guarded([&]() -> StatusOr<std::string> {
    if (pv != nullptr && !pv->is_null()) return GetInTreePluginNameFromPV(*pv);
    if (volume != nullptr && !volume->is_null()) {
      if (const InTreePlugin* p = PluginForInline(*volume)) {
        return std::string(p->InTreePluginName());
      }
      const Json* flex = FindField(*volume, kFlexVolumeField);
      if (flex != nullptr && flex->is_object()) {
        std::string driver = StringField(*flex, "driver", "volume.flexVolume");
        if (rules_.FindByFlexDriver(driver) != nullptr) return FlexPluginName(driver);
      }
      return InvalidArgument("could not find in-tree plugin name from volume " +
                             GoQuote(StringField(*volume, "name", "volume")));
    }
    return InvalidArgument("both persistent volume and volume are nil");
  });
}

StatusOr<std::string> Translator::GetInTreePluginNameFromPV(JsonView pv) const {
  return Guarded([&]() -> StatusOr<std::string> {
    if (const InTreePlugin* p = PluginForPV(pv)) return std::string(p->InTreePluginName());
    if (const FlexVolumeRule* r = FlexRuleForPV(pv)) return FlexPluginName(r->flex_driver);
    return InvalidArgument("could not find in-tree plugin name from persistent volume " +
                           GoQuote(PVName(pv)));
  });
}

StatusOr<std::string> Translator::GetCSINameFromInTreeName(const std::string& name) const {
  for (const auto& p : plugins_) {
    if (name == p->InTreePluginName()) return std::string(p->CsiDriverName());
  }
  for (const FlexVolumeRule& r : rules_.rules()) {
    if (name == FlexPluginName(r.flex_driver)) return r.csi_driver;
  }
  return InvalidArgument("could not find CSI Driver name for plugin " + name);
}

StatusOr<std::string> Translator::GetInTreeNameFromCSIName(const std::string& name) const {
  if (const InTreePlugin* p = PluginForCsiDriver(name)) return std::string(p->InTreePluginName());
  if (const FlexVolumeRule* r = rules_.FindByCsiDriver(name)) return FlexPluginName(r->flex_driver);
  return InvalidArgument("could not find In-Tree driver name for CSI plugin " + name);
}

bool Translator::IsPVMigratable(const Json& pv) const {
  return PluginForPV(pv) != nullptr || FlexRuleForPV(pv) != nullptr;
}

bool Translator::IsInlineMigratable(const Json& volume) const {
  if (PluginForInline(volume) != nullptr) return true;
  const Json* flex = FindField(volume, kFlexVolumeField);
  if (flex == nullptr || !flex->is_object()) return false;
  const Json* driver = FindField(*flex, "driver");
  return driver != nullptr && driver->is_string() &&
         rules_.FindByFlexDriver(driver->get<std::string>()) != nullptr;
}

StatusOr<std::string> Translator::RepairVolumeHandle(const std::string& driver,
                                                     const std::string& handle,
                                                     const std::string& node_id) const {
  if (const InTreePlugin* p = PluginForCsiDriver(driver)) {
    return p->RepairVolumeHandle(handle, node_id);
  }
  if (rules_.FindByCsiDriver(driver) != nullptr) return handle;
  return InvalidArgument("could not find In-Tree driver name for CSI plugin " + driver);
}

std::vector<std::pair<std::string, std::string>> Translator::BuiltInPluginNames() const {
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& p : plugins_) names.emplace_back(p->InTreePluginName(), p->CsiDriverName());
  return names;
}

}  // namespace translator
}  // namespace flexcsi
