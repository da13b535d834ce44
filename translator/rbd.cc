// Ceph RBD <-> rbd.csi.ceph.com (translation.md §11): the last upstream behaviour, which
// upstream has since deleted.
#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/md5.h"
#include "translator/storage_class_params.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "rbd.csi.ceph.com";
const char kField[] = "rbd";
const char kVolumeHandleAnnotation[] = "rbd.csi.ceph.com/volume-handle";
const char kDynamicImagePrefix[] = "kubernetes-dynamic-pvc-";
const char kDefaultPool[] = "rbd";
const char kDefaultImageFeatures[] = "layering";
const char kSecretNamePrefixes[][56] = {"csi.storage.k8s.io/provisioner-secret",
                                        "csi.storage.k8s.io/node-stage-secret",
                                        "csi.storage.k8s.io/controller-expand-secret"};

std::string HexOfBytes(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// mig_mons-<md5(monitors)>_image-<image uuid>_<hex(pool)>: the handle ceph-csi recognises as
// a statically provisioned in-tree image.
std::string MigrationHandle(const std::string& monitors, const std::string& pool,
                            const std::string& image) {
  // Upstream takes strings.Split(image, prefix)[1] and panics when the prefix is missing; we
  // keep the whole image name in that case.
  std::vector<std::string> parts = GoSplit(image, kDynamicImagePrefix);
  std::string image_id = parts.size() > 1 ? parts[1] : image;
  return "mig_mons-" + Md5Hex(monitors) + "_image-" + image_id + "_" + HexOfBytes(pool);
}

std::string Annotation(const SourcePV& pv, const char* key) {
  std::string value;
  pv.Annotation(key, &value);
  return value;
}

class RbdPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/rbd"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    JsonView src = pv.SpecObject(kField);
    const std::string path = "spec.rbd";
    std::string image = StringField(src, "image", path);
    std::string pool = StringField(src, "pool", path);
    std::map<std::string, std::string> attributes;
    std::string handle = Annotation(pv, kVolumeHandleAnnotation);
    if (!handle.empty()) {
      attributes["clusterID"] = Annotation(pv, "clusterID");
    } else {
      std::string monitors = GoJoin(StringListField(src, "monitors", path), ",");
      handle = MigrationHandle(monitors, pool, image);
      attributes["clusterID"] = Md5Hex(monitors);
      attributes["staticVolume"] = "true";
    }
    attributes["imageName"] = image;
    attributes["pool"] = pool;
    attributes["imageFeatures"] = Annotation(pv, "imageFeatures");
    if (attributes["imageFeatures"].empty()) attributes["imageFeatures"] = kDefaultImageFeatures;
    attributes["imageFormat"] = Annotation(pv, "imageFormat");
    attributes["journalPool"] = Annotation(pv, "journalPool");
    attributes["migration"] = "true";
    attributes["tryOtherMounters"] = "true";
    bool read_only = BoolField(src, "readOnly", path);
    Json csi = NewCsiSource(kDriver, std::move(handle), StringField(src, "fsType", path), false,
                            std::move(attributes));
    if (JsonView ref = ObjectField(src, "secretRef", path)) {
      csi["nodeStageSecretRef"] = ref.ToJson();
      csi["controllerExpandSecretRef"] = ref.ToJson();
    }
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    changes->Set("accessModes", Json::array({read_only ? "ReadOnlyMany" : "ReadWriteOnce"}));
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    const Json& src = InlineSource(volume, kField);
    const std::string path = "volume.rbd";
    std::string image = StringField(src, "image", path);
    std::string pool = StringField(src, "pool", path);
    std::map<std::string, std::string> attributes = {
        {"clusterID", Md5Hex(GoJoin(StringListField(src, "monitors", path), ","))},
        {"pool", pool.empty() ? kDefaultPool : pool},
        {"staticVolume", "true"},
        {"imageFeatures", kDefaultImageFeatures}};
    Json csi = NewCsiSource(kDriver, image, StringField(src, "fsType", path), false, attributes);
    // Upstream sets empty refs ({}) when there is no secretRef; they carry nothing, so we omit.
    if (const Json* ref = ObjectField(src, "secretRef", path)) {
      Json secret = NewSecretRef(StringField(*ref, "name", path + ".secretRef"), pod_namespace);
      csi["nodeStageSecretRef"] = secret;
      csi["controllerExpandSecretRef"] = secret;
    }
    return NewInlinePV(std::string(kDriver) + "-" + image, std::move(csi),
                       BoolField(src, "readOnly", path) ? "ReadOnlyMany" : "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    std::map<std::string, std::string> attributes =
        StringMapField(csi, "volumeAttributes", "spec.csi");
    Json rbd = Json::object();
    rbd["monitors"] = Json::array({""});  // the monitors cannot be recovered
    rbd["image"] = attributes["imageName"];
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) rbd["fsType"] = fs_type;
    if (!attributes["pool"].empty()) rbd["pool"] = attributes["pool"];
    rbd["user"] = attributes["adminId"].empty() ? "admin" : attributes["adminId"];
    if (const Json* ref = ObjectField(csi, "nodeStageSecretRef", "spec.csi")) {
      rbd["secretRef"] =
          NewSecretRef(StringField(*ref, "name", "spec.csi.nodeStageSecretRef"),
                       StringField(*ref, "namespace", "spec.csi.nodeStageSecretRef"));
    }
    if (BoolField(csi, "readOnly", "spec.csi")) rbd["readOnly"] = true;
    std::string handle = StringField(csi, "volumeHandle", "spec.csi");
    SetAnnotation(pv, kVolumeHandleAnnotation, handle);
    for (const char* key : {"clusterID", "journalPool", "imageFeatures", "imageFormat"}) {
      SetAnnotation(pv, key, attributes[key]);
    }
    SwapVolumeSource(pv, "csi", kField, std::move(rbd));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::map<std::string, std::string> params = {{"migration", "true"}, {"pool", kDefaultPool}};
    for (const char* prefix : kSecretNamePrefixes) {
      params[std::string(prefix) + "-namespace"] = "default";
    }
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      std::string lower = AsciiLower(key);
      if (lower == "fstype") {
        params[kCsiFsTypeParameter] = value;
      } else if (lower == "imagefeatures") {
        params["imageFeatures"] = value;
      } else if (lower == "pool") {
        params["pool"] = value;
      } else if (lower == "imageformat") {
        params["imageFormat"] = value;
      } else if (lower == "adminid") {
        params["adminId"] = value;
      } else if (lower == "adminsecretname") {
        for (const char* prefix : kSecretNamePrefixes)
          params[std::string(prefix) + "-name"] = value;
      } else if (lower == "adminsecretnamespace") {
        for (const char* prefix : kSecretNamePrefixes) {
          params[std::string(prefix) + "-namespace"] = value;
        }
      } else if (lower == "monitors") {
        params["monitors"] = value;
        params["clusterID"] = Md5Hex(value);
      }
      // Everything else (userId, userSecretName, ...) has no CSI equivalent and is dropped.
    }
    auto value_of = [&params](const std::string& key) {
      auto it = params.find(key);
      return it == params.end() ? std::string() : it->second;
    };
    if (value_of("csi.storage.k8s.io/provisioner-secret-name").empty()) {
      return InvalidArgument("missing Ceph admin secret name");
    }
    if (value_of("monitors").empty()) return InvalidArgument("missing Ceph monitors");
    sc["provisioner"] = kDriver;
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewRbdPlugin() { return std::make_unique<RbdPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
