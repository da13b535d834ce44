// Azure Disk <-> disk.csi.azure.com (translation.md §6).
#include <optional>

#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/storage_class_params.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "disk.csi.azure.com";
const char kTopologyKey[] = "topology.disk.csi.azure.com/zone";
const char kField[] = "azureDisk";
const char kManaged[] = "Managed";
const char kManagedDiskPattern[] =
    ".*/subscriptions/(?:.*)/resourceGroups/(?:.*)/providers/Microsoft.Compute/disks/(.+)";
const char kBlobDiskPattern[] = "http(?:.*)://(?:.*)/vhds/(.+)";

// Finds `literal` in `line` at or after `from`; '?' in literal matches any character (the
// regexp '.' of "Microsoft.Compute").
size_t FindPattern(const std::string& line, const std::string& literal, size_t from, bool last) {
  if (line.size() < literal.size()) return std::string::npos;
  size_t found = std::string::npos;
  for (size_t i = from; i + literal.size() <= line.size(); ++i) {
    bool match = true;
    for (size_t j = 0; j < literal.size() && match; ++j) {
      match = literal[j] == '?' || line[i + j] == literal[j];
    }
    if (!match) continue;
    if (!last) return i;
    found = i;
  }
  return found;
}

// Searches `line` for a0.*a1.*a2(.+) with Go's leftmost-first, greedy semantics and returns
// the capture: greedy stars push the last anchor as far right as the capture allows.
std::optional<std::string> MatchThreeAnchors(const std::string& line, const std::string& a0,
                                             const std::string& a1, const std::string& a2) {
  size_t p0 = FindPattern(line, a0, 0, false);
  if (p0 == std::string::npos) return std::nullopt;
  size_t p1 = FindPattern(line, a1, p0 + a0.size(), false);
  if (p1 == std::string::npos) return std::nullopt;
  // The capture needs at least one character after the last anchor.
  if (line.size() < a2.size() + 1) return std::nullopt;
  std::string head = line.substr(0, line.size() - 1);
  size_t p2 = FindPattern(head, a2, p1 + a1.size(), true);
  if (p2 == std::string::npos) return std::nullopt;
  return line.substr(p2 + a2.size());
}

// The regexps' '.' does not cross a newline, so each line is searched on its own.
std::optional<std::string> SearchLines(const std::string& s, const std::string& a0,
                                       const std::string& a1, const std::string& a2) {
  for (const std::string& line : GoSplit(s, "\n")) {
    if (auto m = MatchThreeAnchors(line, a0, a1, a2)) return m;
  }
  return std::nullopt;
}

StatusOr<std::string> DiskNameFromURI(const std::string& uri) {
  bool blob = uri.size() > 4 && AsciiLower(uri.substr(0, 4)) == "http";
  std::optional<std::string> name = blob ? SearchLines(uri, "http", "://", "/vhds/")
                                         : SearchLines(uri, "/subscriptions/", "/resourceGroups/",
                                                       "/providers/Microsoft?Compute/disks/");
  if (!name) {
    return InvalidArgument("could not get disk name from " + uri +
                           ", correct format: " + (blob ? kBlobDiskPattern : kManagedDiskPattern));
  }
  return *name;
}

// Only managed disks can migrate; an unset kind means managed.
Status CheckKind(JsonView src, const std::string& path) {
  if (!FindField(src, "kind")) return Status::Ok();
  std::string kind = StringField(src, "kind", path);
  if (AsciiLower(kind) != "managed") {
    return InvalidArgument("kind(" + kind + ") is not supported in csi migration");
  }
  return Status::Ok();
}

// Builds spec.csi; pointer fields are tested for nil only, except that the inline translation
// drops an empty cachingMode (§6.3).
StatusOr<Json> CsiFromSource(JsonView src, const std::string& path, bool inline_volume) {
  FLEXCSI_RETURN_IF_ERROR(CheckKind(src, path));
  std::map<std::string, std::string> attributes = {{"kind", kManaged}};
  if (FindField(src, "cachingMode")) {
    std::string mode = StringField(src, "cachingMode", path);
    if (!inline_volume || !mode.empty()) attributes["cachingmode"] = mode;
  }
  std::string fs_type;
  if (FindField(src, "fsType")) {
    fs_type = StringField(src, "fsType", path);
    attributes["fstype"] = fs_type;
  }
  return NewCsiSource(kDriver, StringField(src, "diskURI", path), std::move(fs_type),
                      BoolField(src, "readOnly", path), std::move(attributes));
}

class AzureDiskPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/azure-disk"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    StatusOr<Json> csi = CsiFromSource(pv.SpecObject(kField), "spec.azureDisk", false);
    if (!csi.ok()) return csi.status();
    ReplaceSourceWithCsi(kField, std::move(*csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    StatusOr<Json> csi = CsiFromSource(InlineSource(volume, kField), "volume.azureDisk", true);
    if (!csi.ok()) return csi.status();
    std::string name = (*csi)["volumeHandle"].get<std::string>();
    return NewInlinePV(name, std::move(*csi), "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    std::string uri = StringField(csi, "volumeHandle", "spec.csi");
    StatusOr<std::string> disk_name = DiskNameFromURI(uri);
    if (!disk_name.ok()) return disk_name.status();
    Json disk = Json::object();
    disk["diskName"] = *disk_name;
    disk["diskURI"] = uri;
    // fsType, readOnly and kind are pointers upstream and always set, so "" and false show.
    disk["fsType"] = StringField(csi, "fsType", "spec.csi");
    disk["readOnly"] = BoolField(csi, "readOnly", "spec.csi");
    disk["kind"] = kManaged;
    for (const auto& [key, value] : StringMapField(csi, "volumeAttributes", "spec.csi")) {
      std::string lower = AsciiLower(key);
      if (lower == "cachingmode" && !value.empty()) disk["cachingMode"] = value;
      if (lower == "fstype" && !value.empty()) disk["fsType"] = value;
    }
    SwapVolumeSource(pv, "csi", kField, std::move(disk));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::optional<Json> generated;
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      // fstype is not renamed for Azure Disk.
      if (!TakeZoneParameter(AsciiLower(key), value, kTopologyKey, &generated)) {
        params[key] = value;
      }
    }
    FLEXCSI_RETURN_IF_ERROR(
        ApplyStorageClassTopology(sc, generated ? &*generated : nullptr, kTopologyKey));
    // Regions without availability zones report numeric fault domains; the driver wants "".
    if (Json* terms = FindMutableField(sc, "allowedTopologies")) {
      for (Json& term : *terms) {
        Json* exprs = FindMutableField(term, "matchLabelExpressions");
        if (exprs == nullptr) continue;
        for (Json& exp : *exprs) {
          if (!exp.is_object() || exp.value("key", Json()) != kTopologyKey) continue;
          Json* values = FindMutableField(exp, "values");
          if (values == nullptr || !values->is_array()) continue;
          for (Json& v : *values) {
            if (!v.is_string()) continue;
            const std::string& s = v.get_ref<const std::string&>();
            if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) v = "";
          }
        }
      }
    }
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewAzureDiskPlugin() { return std::make_unique<AzureDiskPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
