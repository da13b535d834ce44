// Portworx <-> pxd.portworx.com (translation.md §10).
#include "translator/in_tree_plugin.h"
#include "translator/storage_class_params.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "pxd.portworx.com";
const char kField[] = "portworxVolume";
const char kSecretNameAnnotation[] = "openstorage.io/auth-secret-name";
const char kSecretNamespaceAnnotation[] = "openstorage.io/auth-secret-namespace";
const char* const kSecretRefFields[] = {"controllerPublishSecretRef", "nodeStageSecretRef",
                                        "nodePublishSecretRef", "controllerExpandSecretRef",
                                        "nodeExpandSecretRef"};
const char* const kSecretParameterPrefixes[] = {
    "csi.storage.k8s.io/provisioner-secret",       "csi.storage.k8s.io/controller-publish-secret",
    "csi.storage.k8s.io/node-stage-secret",        "csi.storage.k8s.io/node-publish-secret",
    "csi.storage.k8s.io/controller-expand-secret", "csi.storage.k8s.io/node-expand-secret"};

class PortworxPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/portworx-volume"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    JsonView src = pv.SpecObject(kField);
    const std::string path = "spec.portworxVolume";
    // readOnly is not carried over (upstream).
    Json csi = NewCsiSource(kDriver, StringField(src, "volumeID", path),
                            StringField(src, "fsType", path), false, {});
    std::string name, ns;
    if (pv.Annotation(kSecretNameAnnotation, &name) &&
        pv.Annotation(kSecretNamespaceAnnotation, &ns)) {
      Json ref = NewSecretRef(name, ns);
      for (const char* field : kSecretRefFields) csi[field] = ref;
    }
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    const Json& src = InlineSource(volume, kField);
    const std::string path = "volume.portworxVolume";
    Json csi = NewCsiSource(kDriver, StringField(src, "volumeID", path),
                            StringField(src, "fsType", path), false, {});
    std::string name = std::string(kDriver) + "-" + csi["volumeHandle"].get<std::string>();
    return NewInlinePV(name, std::move(csi),
                       BoolField(src, "readOnly", path) ? "ReadOnlyMany" : "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    Json px = Json::object();
    px["volumeID"] = StringField(csi, "volumeHandle", "spec.csi");
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) px["fsType"] = fs_type;
    if (BoolField(csi, "readOnly", "spec.csi")) px["readOnly"] = true;
    SwapVolumeSource(pv, "csi", kField, std::move(px));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    bool had_parameters = FindField(sc, "parameters") != nullptr;
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      if (key == kSecretNameAnnotation) {
        for (const char* prefix : kSecretParameterPrefixes)
          params[std::string(prefix) + "-name"] = value;
      } else if (key == kSecretNamespaceAnnotation) {
        for (const char* prefix : kSecretParameterPrefixes) {
          params[std::string(prefix) + "-namespace"] = value;
        }
      } else {
        params[key] = value;
      }
    }
    if (had_parameters) SetStorageClassParameters(sc, params);
    sc["provisioner"] = kDriver;
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewPortworxPlugin() { return std::make_unique<PortworxPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
