// OpenStack Cinder <-> cinder.csi.openstack.org (translation.md §9).
#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/storage_class_params.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "cinder.csi.openstack.org";
const char kTopologyKey[] = "topology.cinder.csi.openstack.org/zone";
const char kField[] = "cinder";

// secretRef is dropped: the CSI driver reads its credentials from its own configuration.
Json CsiFromSource(JsonView src, const std::string& path) {
  return NewCsiSource(kDriver, StringField(src, "volumeID", path), StringField(src, "fsType", path),
                      BoolField(src, "readOnly", path), {});
}

class CinderPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/cinder"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    Json csi = CsiFromSource(pv.SpecObject(kField), "spec.cinder");
    TranslateTopologyInTreeToCsi(pv, kTopologyKey, changes);
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    Json csi = CsiFromSource(InlineSource(volume, kField), "volume.cinder");
    std::string name = std::string(kDriver) + "-" + csi["volumeHandle"].get<std::string>();
    return NewInlinePV(name, std::move(csi), "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    Json cinder = Json::object();
    cinder["volumeID"] = StringField(csi, "volumeHandle", "spec.csi");
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) cinder["fsType"] = fs_type;
    if (BoolField(csi, "readOnly", "spec.csi")) cinder["readOnly"] = true;
    // No region parser: Cinder never gets region affinity or a region label.
    FLEXCSI_RETURN_IF_ERROR(TranslateTopologyCsiToInTree(pv, kTopologyKey, nullptr));
    SwapVolumeSource(pv, "csi", kField, std::move(cinder));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      // "availability" and "zone" are understood by the CSI driver itself: copied, not turned
      // into topology.
      if (AsciiLower(key) == "fstype") {
        params[kCsiFsTypeParameter] = value;
      } else {
        params[key] = value;
      }
    }
    FLEXCSI_RETURN_IF_ERROR(ApplyStorageClassTopology(sc, nullptr, kTopologyKey));
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewCinderPlugin() { return std::make_unique<CinderPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
