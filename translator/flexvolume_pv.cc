#include "translator/flexvolume_pv.h"

#include "translator/in_tree_plugin.h"

namespace flexcsi {
namespace translator {
namespace {

FlexVolumeSource SourceFromJson(JsonView flex, const std::string& path) {
  FlexVolumeSource source;
  source.driver = StringField(flex, "driver", path);
  source.options = StringMapField(flex, "options", path);
  source.fs_type = StringField(flex, "fsType", path);
  source.read_only = BoolField(flex, "readOnly", path);
  if (JsonView ref = ObjectField(flex, "secretRef", path)) {
    source.secret_ref = SecretReference{StringField(ref, "name", path + ".secretRef"),
                                        StringField(ref, "namespace", path + ".secretRef")};
  }
  return source;
}

Json CsiToJson(const CsiVolume& volume) {
  Json csi = NewCsiSource(volume.driver, volume.volume_handle, volume.fs_type, volume.read_only,
                          volume.volume_attributes);
  if (volume.secret) {
    Json ref = NewSecretRef(volume.secret->name, volume.secret->namespace_name);
    for (SecretRefField field : volume.secret_ref_fields) csi[SecretRefPVFieldName(field)] = ref;
  }
  return csi;
}

}  // namespace

Status TranslateFlexVolumePVToCsi(const FlexVolumeRules& rules, const SourcePV& pv,
                                  SpecChanges* changes) {
  FlexVolumeSource source = SourceFromJson(pv.SpecObject("flexVolume"), "spec.flexVolume");
  // Kubelet's flex plugin resolves a secret without namespace in the pod's namespace, which for
  // a PV is the namespace of its claim.
  std::string claim_namespace;
  if (JsonView claim = pv.SpecObject("claimRef")) {
    claim_namespace = StringField(claim, "namespace", "spec.claimRef");
  }
  StatusOr<CsiVolume> volume = MapFlexVolumeToCsi(rules, source, claim_namespace);
  if (!volume.ok()) return volume.status();
  ReplaceSourceWithCsi("flexVolume", CsiToJson(*volume), changes);
  return Status::Ok();
}

StatusOr<Json> TranslateFlexVolumeInlineToCsi(const FlexVolumeRules& rules, const Json& volume,
                                              const std::string& pod_namespace) {
  FlexVolumeSource source = SourceFromJson(InlineSource(volume, "flexVolume"), "volume.flexVolume");
  // For inline volumes the pod's namespace always wins.
  if (source.secret_ref) source.secret_ref->namespace_name.clear();
  StatusOr<CsiVolume> csi = MapFlexVolumeToCsi(rules, source, pod_namespace);
  if (!csi.ok()) return csi.status();
  std::string name = csi->driver + "-" + csi->volume_handle;
  return NewInlinePV(name, CsiToJson(*csi), csi->read_only ? "ReadOnlyMany" : "ReadWriteOnce");
}

Status TranslateCsiPVToFlexVolume(const FlexVolumeRule& rule, Json& pv) {
  const Json& csi = CsiSource(pv);
  CsiVolume volume;
  volume.driver = StringField(csi, "driver", "spec.csi");
  volume.volume_handle = StringField(csi, "volumeHandle", "spec.csi");
  volume.volume_attributes = StringMapField(csi, "volumeAttributes", "spec.csi");
  volume.fs_type = StringField(csi, "fsType", "spec.csi");
  volume.read_only = BoolField(csi, "readOnly", "spec.csi");
  for (SecretRefField field : rule.secret_refs) {
    const char* name = SecretRefPVFieldName(field);
    if (const Json* ref = ObjectField(csi, name, "spec.csi")) {
      std::string path = std::string("spec.csi.") + name;
      volume.secret =
          SecretReference{StringField(*ref, "name", path), StringField(*ref, "namespace", path)};
      break;
    }
  }
  StatusOr<FlexVolumeSource> source = MapCsiToFlexVolume(rule, volume);
  if (!source.ok()) return source.status();
  Json flex = Json::object();
  flex["driver"] = source->driver;
  if (!source->fs_type.empty()) flex["fsType"] = source->fs_type;
  if (source->secret_ref) {
    flex["secretRef"] = NewSecretRef(source->secret_ref->name, source->secret_ref->namespace_name);
  }
  if (source->read_only) flex["readOnly"] = true;
  if (!source->options.empty()) flex["options"] = source->options;
  SwapVolumeSource(pv, "csi", "flexVolume", std::move(flex));
  return Status::Ok();
}

}  // namespace translator
}  // namespace flexcsi
