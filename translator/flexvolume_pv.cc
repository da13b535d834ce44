#include "translator/flexvolume_pv.h"

#include "translator/derived_secrets.h"
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

// Kubelet passes every call the PV's name (an inline volume's name) as
// kubernetes.io/pvOrVolumeName; a rule's handle template may use it, so the translation sees it
// too and both agree on the handle.
constexpr char kVolumeNameOption[] = "kubernetes.io/pvOrVolumeName";

// The Secret the CSI PV names: the secretRef, the one the rule's `secrets` read, or (migrate) the
// one migrate writes with the derived keys. A CSI PV cannot say "the one key of that Secret, under
// another name" or "plus userID admin".
StatusOr<std::optional<SecretReference>> CsiSecretOf(const CsiVolume& volume,
                                                     DerivedSecrets derived,
                                                     const std::string& pv_name,
                                                     const std::string& claim_namespace) {
  if (DerivesSecrets(volume)) {
    if (derived == DerivedSecrets::kRefuse) {
      return FailedPrecondition("the flexVolume rule for " + volume.driver +
                                " makes its secret from options, defaults or a single-key Secret "
                                "(secrets.fromOptions, defaults, singleKeyAs): a CSI PV can only "
                                "name a Secret; `flexcsi migrate` writes one with the derived "
                                "keys, or create one with the keys " +
                                volume.driver + " expects and use a rule that names it");
    }
    if (volume.secret) {
      return FailedPrecondition("the volume names a Secret (secretRef " + volume.secret->name +
                                ") and its rule derives secrets: a CSI PV names one Secret");
    }
    if (pv_name.empty() || claim_namespace.empty()) {
      return FailedPrecondition("the rule for " + volume.driver +
                                " derives its secrets, which migrate writes into a Secret in "
                                "the claim's namespace: the PV has no name or no claimRef");
    }
    return std::optional<SecretReference>(
        SecretReference{WrittenSecretName(pv_name), claim_namespace});
  }
  if (!volume.read_secret) return volume.secret;
  if (volume.secret && (volume.secret->name != volume.read_secret->name ||
                        volume.secret->namespace_name != volume.read_secret->namespace_name)) {
    return FailedPrecondition("the volume names two Secrets, " + volume.secret->name +
                              " (secretRef) and " + volume.read_secret->name +
                              " (the rule's secrets): a CSI PV names one");
  }
  if (volume.read_secret->namespace_name.empty()) {
    return InvalidArgument("cannot determine the namespace of secret " + volume.read_secret->name +
                           " (no claimRef)");
  }
  return volume.read_secret;
}

StatusOr<Json> CsiToJson(const CsiVolume& volume, DerivedSecrets derived,
                         const std::string& pv_name, const std::string& claim_namespace) {
  Json csi = NewCsiSource(volume.driver, volume.volume_handle, volume.fs_type, volume.read_only,
                          volume.volume_attributes);
  auto secret = CsiSecretOf(volume, derived, pv_name, claim_namespace);
  if (!secret.ok()) return secret.status();
  if (*secret) {
    Json ref = NewSecretRef((*secret)->name, (*secret)->namespace_name);
    for (SecretRefField field : volume.secret_ref_fields) csi[SecretRefPVFieldName(field)] = ref;
  }
  return csi;
}

// The PV's source as the bridge sees it, and its claim's namespace.
FlexVolumeSource PVSource(const SourcePV& pv, std::string* claim_namespace) {
  FlexVolumeSource source = SourceFromJson(pv.SpecObject("flexVolume"), "spec.flexVolume");
  // Kubelet's flex plugin resolves a secret without namespace in the pod's namespace, which for
  // a PV is the namespace of its claim.
  if (JsonView claim = pv.SpecObject("claimRef")) {
    *claim_namespace = StringField(claim, "namespace", "spec.claimRef");
  }
  if (!pv.Name().empty()) source.options.emplace(kVolumeNameOption, pv.Name());
  return source;
}

}  // namespace

Status TranslateFlexVolumePVToCsi(const FlexVolumeRules& rules, const SourcePV& pv,
                                  DerivedSecrets derived, SpecChanges* changes) {
  std::string claim_namespace;
  FlexVolumeSource source = PVSource(pv, &claim_namespace);
  StatusOr<CsiVolume> volume = MapFlexVolumeToCsi(rules, source, claim_namespace);
  if (!volume.ok()) return volume.status();
  StatusOr<Json> csi = CsiToJson(*volume, derived, pv.Name(), claim_namespace);
  if (!csi.ok()) return csi.status();
  ReplaceSourceWithCsi("flexVolume", std::move(*csi), changes);
  return Status::Ok();
}

StatusOr<CsiVolume> FlexVolumePVToCsiVolume(const FlexVolumeRules& rules, const SourcePV& pv) {
  std::string claim_namespace;
  FlexVolumeSource source = PVSource(pv, &claim_namespace);
  return MapFlexVolumeToCsi(rules, source, claim_namespace);
}

StatusOr<Json> TranslateFlexVolumeInlineToCsi(const FlexVolumeRules& rules, const Json& volume,
                                              const std::string& pod_namespace) {
  FlexVolumeSource source = SourceFromJson(InlineSource(volume, "flexVolume"), "volume.flexVolume");
  // For inline volumes the pod's namespace always wins.
  if (source.secret_ref) source.secret_ref->namespace_name.clear();
  if (volume.contains("name") && volume["name"].is_string()) {
    source.options.emplace(kVolumeNameOption, volume["name"].get<std::string>());
  }
  StatusOr<CsiVolume> csi = MapFlexVolumeToCsi(rules, source, pod_namespace);
  if (!csi.ok()) return csi.status();
  StatusOr<Json> csi_json = CsiToJson(*csi, DerivedSecrets::kRefuse, "", "");
  if (!csi_json.ok()) return csi_json.status();
  std::string name = csi->driver + "-" + csi->volume_handle;
  return NewInlinePV(name, std::move(*csi_json), csi->read_only ? "ReadOnlyMany" : "ReadWriteOnce");
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
