// Azure File <-> file.csi.azure.com (translation.md §7).
#include <optional>

#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "file.csi.azure.com";
const char kField[] = "azureFile";
const char kResourceGroupAnnotation[] = "kubernetes.io/azure-file-resource-group";
const char kDefaultSecretNamespace[] = "default";

// The storage account named by a secret "azure-storage-account-<account>-secret" (the regexp
// azure-storage-account-(.+)-secret, searched and greedy); the whole name when it does not match.
std::string AccountFromSecretName(const std::string& secret_name) {
  static const std::string kPrefix = "azure-storage-account-";
  static const std::string kSuffix = "-secret";
  for (const std::string& line : GoSplit(secret_name, "\n")) {
    size_t start = line.find(kPrefix);
    if (start == std::string::npos) continue;
    size_t from = start + kPrefix.size() + 1;  // (.+) takes at least one character
    size_t end = line.rfind(kSuffix);
    if (end == std::string::npos || end < from) continue;
    return line.substr(start + kPrefix.size(), end - start - kPrefix.size());
  }
  return secret_name;
}

std::string Handle(const std::string& resource_group, const std::string& account,
                   const std::string& share, const std::string& name, const std::string& ns) {
  return resource_group + "#" + account + "#" + share + "#" + name + "#" + ns;
}

class AzureFilePlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/azure-file"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    JsonView src = pv.SpecObject(kField);
    const std::string path = "spec.azureFile";
    std::string secret_name = StringField(src, "secretName", path);
    std::string share = StringField(src, "shareName", path);
    // A present secretNamespace wins even when empty, and then fails below (upstream quirk).
    std::string ns;
    if (FindField(src, "secretNamespace")) {
      ns = StringField(src, "secretNamespace", path);
    } else if (JsonView claim = pv.SpecObject("claimRef")) {
      ns = StringField(claim, "namespace", "spec.claimRef");
    }
    if (ns.empty()) {
      return InvalidArgument(
          "could not find a secret namespace in PersistentVolumeSource or ClaimRef");
    }
    std::string resource_group;
    pv.Annotation(kResourceGroupAnnotation, &resource_group);
    Json csi = NewCsiSource(
        kDriver, Handle(resource_group, AccountFromSecretName(secret_name), share, pv.Name(), ns),
        "", BoolField(src, "readOnly", path), {{"sharename", share}});
    csi["nodeStageSecretRef"] = NewSecretRef(secret_name, ns);
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    const Json& src = InlineSource(volume, kField);
    const std::string path = "volume.azureFile";
    std::string secret_name = StringField(src, "secretName", path);
    std::string share = StringField(src, "shareName", path);
    std::string ns = pod_namespace.empty() ? kDefaultSecretNamespace : pod_namespace;
    std::string handle = Handle("", AccountFromSecretName(secret_name), share,
                                StringField(volume, "name", "volume"), ns);
    Json csi =
        NewCsiSource(kDriver, handle, "", BoolField(src, "readOnly", path), {{"sharename", share}});
    csi["nodeStageSecretRef"] = NewSecretRef(secret_name, ns);
    return NewInlinePV(handle, std::move(csi), "ReadWriteMany");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    std::string share, secret_name;
    std::optional<std::string> secret_ns;
    for (const auto& [key, value] : StringMapField(csi, "volumeAttributes", "spec.csi")) {
      std::string lower = AsciiLower(key);
      if (lower == "sharename") share = value;
      if (lower == "secretname") secret_name = value;
      if (lower == "secretnamespace") secret_ns = value;
    }
    if (const Json* ref = ObjectField(csi, "nodeStageSecretRef", "spec.csi")) {
      std::string name = StringField(*ref, "name", "spec.csi.nodeStageSecretRef");
      if (!name.empty()) {
        secret_name = name;
        secret_ns = StringField(*ref, "namespace", "spec.csi.nodeStageSecretRef");
      }
    }
    std::string resource_group;
    if (share.empty() || secret_name.empty()) {
      std::string handle = StringField(csi, "volumeHandle", "spec.csi");
      std::vector<std::string> parts = GoSplit(handle, "#");
      if (parts.size() < 3) {
        return InvalidArgument("error parsing volume id: " + GoQuote(handle) +
                               ", should at least contain two #");
      }
      if (share.empty()) share = parts[2];
      if (secret_name.empty()) secret_name = "azure-storage-account-" + parts[1] + "-secret";
      resource_group = parts[0];
    }
    Json file = Json::object();
    file["secretName"] = secret_name;
    file["shareName"] = share;
    if (BoolField(csi, "readOnly", "spec.csi")) file["readOnly"] = true;
    file["secretNamespace"] = secret_ns ? *secret_ns : kDefaultSecretNamespace;
    SwapVolumeSource(pv, "csi", kField, std::move(file));
    if (!resource_group.empty()) SetAnnotation(pv, kResourceGroupAnnotation, resource_group);
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override { return Status::Ok(); }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewAzureFilePlugin() { return std::make_unique<AzureFilePlugin>(); }

}  // namespace translator
}  // namespace flexcsi
