#include "migrate/storage_class_plan.h"

#include <algorithm>
#include <cctype>

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

constexpr const char* kDefaultClassAnnotations[] = {
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class"};
constexpr const char* kProvisionedBy = "pv.kubernetes.io/provisioned-by";
constexpr const char* kCsiFsType = "csi.storage.k8s.io/fstype";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Annotation(const json& object, const std::string& key) {
  const json::json_pointer annotations("/metadata/annotations");
  if (!object.contains(annotations) || !object.at(annotations).is_object()) return "";
  const json& a = object.at(annotations);
  auto it = a.find(key);
  return it != a.end() && it->is_string() ? it->get<std::string>() : "";
}

// Both flexcsi-controller and external-provisioner read "fstype" case-insensitively (the
// deprecated form) besides csi.storage.k8s.io/fstype.
bool NamesFsType(const json& parameters) {
  if (!parameters.is_object()) return false;
  for (const auto& [key, value] : parameters.items()) {
    if (key == kCsiFsType || Lower(key) == "fstype") return true;
  }
  return false;
}

json TwinBase(const json& sc, const std::string& provisioner, const std::string& original) {
  json twin = StripServerFields(sc);
  twin["provisioner"] = provisioner;
  twin["metadata"]["annotations"][kMigratedFromAnnotation] = original;
  return twin;
}

void PlanInTree(const json& sc, const translator::Translator& translator, const std::string& csi,
                StorageClassPlan* plan) {
  auto translated = translator.TranslateInTreeStorageClassToCSI(plan->provisioner, sc);
  if (!translated.ok()) {
    plan->refusal = "the translator refuses it: " + translated.status().message();
    return;
  }
  plan->twin = TwinBase(*translated, csi, plan->provisioner);
}

void PlanFlexVolume(const json& sc, const translator::FlexVolumeRule& rule,
                    StorageClassPlan* plan) {
  json twin = TwinBase(sc, rule.csi_driver, plan->provisioner);
  if (!rule.default_fs_type.empty() && !NamesFsType(sc.value("parameters", json::object()))) {
    twin["parameters"][kCsiFsType] = rule.default_fs_type;
  }
  plan->twin = std::move(twin);
}

}  // namespace

std::map<std::string, std::string> FlexVolumeProvisioners(const std::vector<json>& pvs) {
  std::map<std::string, std::string> out;
  const json::json_pointer driver("/spec/flexVolume/driver");
  for (const auto& pv : pvs) {
    const std::string by = Annotation(pv, kProvisionedBy);
    const std::string flex = Str(pv, driver);
    if (!by.empty() && !flex.empty()) out.emplace(by, flex);
  }
  return out;
}

std::optional<StorageClassPlan> PlanStorageClass(
    const json& sc, const translator::Translator& translator,
    const std::map<std::string, std::string>& flex_provisioners) {
  if (!sc.is_object()) return std::nullopt;
  StorageClassPlan plan;
  plan.name = NameOf(sc);
  plan.provisioner = sc.value("provisioner", "");
  plan.original = sc;
  for (const char* key : kDefaultClassAnnotations) {
    if (Annotation(sc, key) == "true") plan.is_default = true;
  }
  if (!Annotation(sc, kMigratedFromAnnotation).empty()) return std::nullopt;

  for (const auto& [in_tree, csi] : translator.BuiltInPluginNames()) {
    if (plan.provisioner != in_tree) continue;
    plan.kind = "in-tree";
    plan.csi_driver = csi;
    PlanInTree(sc, translator, csi, &plan);
    return plan;
  }
  if (plan.provisioner.rfind("kubernetes.io/", 0) == 0) {
    if (plan.provisioner == "kubernetes.io/no-provisioner") return std::nullopt;  // local PVs
    plan.kind = "in-tree";
    plan.refusal = "in-tree provisioner " + plan.provisioner +
                   " has no CSI translation (Kubernetes migrates only aws-ebs, gce-pd, "
                   "azure-disk, azure-file, cinder, vsphere-volume, portworx-volume and rbd)";
    return plan;
  }

  const auto& rules = translator.flexvolume_rules();
  if (const translator::FlexVolumeRule* rule = rules.FindByCsiDriver(plan.provisioner)) {
    plan.kind = "flexvolume";
    plan.csi_driver = rule->csi_driver;
    PlanFlexVolume(sc, *rule, &plan);
    return plan;
  }
  auto seen = flex_provisioners.find(plan.provisioner);
  if (seen == flex_provisioners.end()) return std::nullopt;  // a CSI class
  plan.kind = "flexvolume";
  const translator::FlexVolumeRule* rule = rules.FindByFlexDriver(seen->second);
  if (rule == nullptr) {
    plan.refusal = "FlexVolume PVs of driver " + seen->second + " were provisioned for " +
                   plan.provisioner + ", and no FlexVolume rule maps that driver (give --rules)";
    return plan;
  }
  plan.csi_driver = rule->csi_driver;
  PlanFlexVolume(sc, *rule, &plan);
  return plan;
}

std::vector<StorageClassPlan> PlanStorageClasses(const ClusterObjects& objects,
                                                 const translator::Translator& translator,
                                                 const std::map<std::string, std::string>& served) {
  auto flex_provisioners = FlexVolumeProvisioners(objects.pvs);
  for (const auto& [provisioner, flex] : served) flex_provisioners.emplace(provisioner, flex);
  std::vector<StorageClassPlan> out;
  for (const auto& sc : objects.storageclasses) {
    if (auto plan = PlanStorageClass(sc, translator, flex_provisioners)) {
      out.push_back(std::move(*plan));
    }
  }
  std::sort(out.begin(), out.end(), [](const StorageClassPlan& a, const StorageClassPlan& b) {
    return a.name < b.name;
  });
  return out;
}

}  // namespace flexcsi::migrate
