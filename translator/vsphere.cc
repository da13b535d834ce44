// vSphere volume <-> csi.vsphere.vmware.com (translation.md §8).
#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/storage_class_params.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "csi.vsphere.vmware.com";
const char kZoneKey[] = "topology.csi.vmware.com/zone";
const char kRegionKey[] = "topology.csi.vmware.com/region";
const char kField[] = "vsphereVolume";
const char kStoragePolicyAttribute[] = "storagepolicyname";
// Returned by the driver for volumes provisioned through a migrated class (csimigration=true).
const char kInitialVolumeFilePathAttribute[] = "initialvolumefilepath";

// storagePolicyID is dropped; vSphere volumes have no readOnly field.
Json CsiFromSource(JsonView src, const std::string& path) {
  std::map<std::string, std::string> attributes;
  std::string policy = StringField(src, "storagePolicyName", path);
  if (!policy.empty()) attributes[kStoragePolicyAttribute] = policy;
  return NewCsiSource(kDriver, StringField(src, "volumePath", path),
                      StringField(src, "fsType", path), false, attributes);
}

// In-tree StorageClass parameter (lower case) -> CSI parameter. Everything else is dropped.
const std::map<std::string, std::string>& ParameterNames() {
  static const std::map<std::string, std::string> kNames = {
      {"fstype", kCsiFsTypeParameter},
      {"storagepolicyname", "storagepolicyname"},
      {"datastore", "datastore-migrationparam"},
      {"diskformat", "diskformat-migrationparam"},
      {"hostfailurestotolerate", "hostfailurestotolerate-migrationparam"},
      {"forceprovisioning", "forceprovisioning-migrationparam"},
      {"cachereservation", "cachereservation-migrationparam"},
      {"diskstripes", "diskstripes-migrationparam"},
      {"objectspacereservation", "objectspacereservation-migrationparam"},
      {"iopslimit", "iopslimit-migrationparam"},
  };
  return kNames;
}

class VspherePlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/vsphere-volume"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    Json csi = CsiFromSource(pv.SpecObject(kField), "spec.vsphereVolume");
    TranslateVsphereTopologyInTreeToCsi(pv, kZoneKey, kRegionKey, changes);
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    // Upstream crashes on an inline volume with a storagePolicyName (it reads a nil PV source);
    // we set the attribute, which is what it meant to do.
    Json csi = CsiFromSource(InlineSource(volume, kField), "volume.vsphereVolume");
    std::string name = std::string(kDriver) + "-" + csi["volumeHandle"].get<std::string>();
    return NewInlinePV(name, std::move(csi), "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    Json vsphere = Json::object();
    // The handle is a volume ID the in-tree plugin cannot use; only the recorded path helps.
    std::string volume_path;
    LookupStringInMap(csi, "volumeAttributes", kInitialVolumeFilePathAttribute, "spec.csi",
                      &volume_path);
    vsphere["volumePath"] = volume_path;
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) vsphere["fsType"] = fs_type;
    TranslateVsphereTopologyCsiToInTree(pv, kZoneKey, kRegionKey);
    SwapVolumeSource(pv, "csi", kField, std::move(vsphere));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      auto it = ParameterNames().find(AsciiLower(key));
      if (it != ParameterNames().end()) params[it->second] = value;
    }
    // Tells the driver to return initialvolumefilepath, which TranslateCsiPVToInTree needs.
    params["csimigration"] = "true";
    FLEXCSI_RETURN_IF_ERROR(ApplyStorageClassTopology(sc, nullptr, kZoneKey));
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewVspherePlugin() { return std::make_unique<VspherePlugin>(); }

}  // namespace translator
}  // namespace flexcsi
