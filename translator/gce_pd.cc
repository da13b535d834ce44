// GCE Persistent Disk <-> pd.csi.storage.gke.io (translation.md §4).
#include <optional>

#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/storage_class_params.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "pd.csi.storage.gke.io";
const char kTopologyKey[] = "topology.gke.io/zone";
const char kField[] = "gcePersistentDisk";
const char kPath[] = "spec.gcePersistentDisk";
// The translator never knows the project (and, without labels, the zone).
const char kUnspecified[] = "UNSPECIFIED";
// projects/<project>/{zones|regions}/<location>/disks/<name>
constexpr size_t kHandleProject = 1;
constexpr size_t kHandleRegionality = 2;
constexpr size_t kHandleLocation = 3;
constexpr size_t kHandleDiskName = 5;
constexpr size_t kHandleParts = 6;

std::string ZonalHandle(const std::string& project, const std::string& zone,
                        const std::string& disk) {
  return "projects/" + project + "/zones/" + zone + "/disks/" + disk;
}

std::string RegionalHandle(const std::string& project, const std::string& region,
                           const std::string& disk) {
  return "projects/" + project + "/regions/" + region + "/disks/" + disk;
}

// Partition 0 and "unset" are the same to the driver: both become "".
std::string PartitionAttribute(int32_t partition) {
  return partition == 0 ? std::string() : std::to_string(partition);
}

std::string LabelValue(const SourcePV& pv, const char* key) {
  std::string value;
  pv.Label(key, &value);
  return value;
}

// The in-tree plugin never enforced access modes; the CSI driver does (§4.2).
Json BackwardCompatibleAccessModes(const std::vector<std::string>& modes) {
  bool rwo = false, rox = false;
  for (const std::string& m : modes) {
    if (m == "ReadWriteMany" || m == "ReadWriteOnce") rwo = true;
    if (m == "ReadOnlyMany") rox = true;
  }
  if (rwo) return Json::array({"ReadWriteOnce"});
  if (rox) return Json::array({"ReadOnlyMany"});
  return Json::array({"ReadWriteOnce"});
}

class GcePdPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/gce-pd"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    JsonView src = pv.SpecObject(kField);
    std::string pd_name = StringField(src, "pdName", kPath);
    // The handle reads the beta label first, topology (§3.1) the GA one: an upstream quirk.
    std::string zones_label = LabelValue(pv, kLabelZoneBeta);
    if (zones_label.empty()) zones_label = LabelValue(pv, kLabelZoneGA);
    std::vector<std::string> zones = GoSplit(zones_label, kMultiZoneDelimiter);
    std::string handle;
    if (zones.size() == 1 && !zones[0].empty()) {
      handle = ZonalHandle(kUnspecified, zones[0], pd_name);
    } else if (zones.size() > 1) {
      StatusOr<std::string> region = GceRegionFromZones(zones);
      if (!region.ok()) {
        return InvalidArgument("failed to get region from zones: " + region.status().message());
      }
      handle = RegionalHandle(kUnspecified, *region, pd_name);
    } else {
      handle = ZonalHandle(kUnspecified, kUnspecified, pd_name);
    }
    Json csi = NewCsiSource(kDriver, std::move(handle), StringField(src, "fsType", kPath),
                            BoolField(src, "readOnly", kPath),
                            {{"partition", PartitionAttribute(Int32Field(src, "partition", kPath))}});
    TranslateTopologyInTreeToCsi(pv, kTopologyKey, changes);
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    JsonView spec = pv.Spec();
    if (ArrayField(spec, "accessModes", "spec")) {
      changes->Set("accessModes",
                   BackwardCompatibleAccessModes(StringListField(spec, "accessModes", "spec")));
    }
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    const Json& src = InlineSource(volume, kField);
    const std::string path = "volume.gcePersistentDisk";
    std::string pd_name = StringField(src, "pdName", path);
    bool read_only = BoolField(src, "readOnly", path);
    Json csi = NewCsiSource(kDriver, ZonalHandle(kUnspecified, kUnspecified, pd_name),
                            StringField(src, "fsType", path), read_only, {});
    csi["volumeAttributes"] =
        Json{{"partition", PartitionAttribute(Int32Field(src, "partition", path))}};
    // The name must be unique per disk: it is the unique part of the staging path.
    return NewInlinePV(std::string(kDriver) + "-" + pd_name, std::move(csi),
                       read_only ? "ReadOnlyMany" : "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    std::string handle = StringField(csi, "volumeHandle", "spec.csi");
    std::vector<std::string> parts = GoSplit(handle, "/");
    if (parts.size() < kHandleParts) {
      return InvalidArgument("failed to get id components.Got: " + std::to_string(parts.size()) +
                             ", wanted " + std::to_string(kHandleParts) + " components or more. ");
    }
    Json gce = Json::object();
    gce["pdName"] = parts[kHandleDiskName];
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) gce["fsType"] = fs_type;
    if (BoolField(csi, "readOnly", "spec.csi")) gce["readOnly"] = true;
    std::string partition;
    if (LookupStringInMap(csi, "volumeAttributes", "partition", "spec.csi", &partition) &&
        !partition.empty()) {
      StatusOr<int32_t> n = GoAtoiInt32(partition);
      if (!n.ok()) {
        return InvalidArgument("Failed to convert partition " + partition +
                               " to integer: " + n.status().message());
      }
      if (*n != 0) gce["partition"] = *n;
    }
    Status s = TranslateTopologyCsiToInTree(pv, kTopologyKey, GceRegionFromZones);
    if (!s.ok()) {
      return InvalidArgument("failed to translate topology. PV:" + PVName(pv) +
                             ". Error:" + s.message());
    }
    SwapVolumeSource(pv, "csi", kField, std::move(gce));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::optional<Json> generated;
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      std::string lower = AsciiLower(key);
      if (lower == "fstype") {
        params[kCsiFsTypeParameter] = value;
      } else if (!TakeZoneParameter(lower, value, kTopologyKey, &generated)) {
        params[key] = value;
      }
    }
    FLEXCSI_RETURN_IF_ERROR(
        ApplyStorageClassTopology(sc, generated ? &*generated : nullptr, kTopologyKey));
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }

  StatusOr<std::string> RepairVolumeHandle(const std::string& handle,
                                           const std::string& node_id) const override {
    std::vector<std::string> tok = GoSplit(handle, "/");
    if (tok.size() < kHandleParts) {
      return InvalidArgument("volume handle has wrong number of elements; got " +
                             std::to_string(tok.size()) + ", wanted " +
                             std::to_string(kHandleParts) + " or more");
    }
    if (tok[kHandleProject] != kUnspecified) return handle;
    // node IDs look like projects/<p>/zones/<z>/instances/<name>
    std::vector<std::string> node = GoSplit(node_id, "/");
    if (node.size() < kHandleParts) {
      return InvalidArgument("node handle has wrong number of elements; got " +
                             std::to_string(node.size()) + ", wanted " +
                             std::to_string(kHandleParts) + " or more");
    }
    const std::string& regionality = tok[kHandleRegionality];
    if (regionality == "zones") {
      std::string zone =
          tok[kHandleLocation] == kUnspecified ? node[kHandleLocation] : tok[kHandleLocation];
      return ZonalHandle(node[kHandleProject], zone, tok[kHandleDiskName]);
    }
    if (regionality == "regions") {
      std::string region = tok[kHandleLocation];
      if (region == kUnspecified) {
        StatusOr<std::string> r = GceRegionFromZones({node[kHandleLocation]});
        if (!r.ok()) {
          return InvalidArgument("failed to get region from zone " + node[kHandleLocation] + ": " +
                                 r.status().message());
        }
        region = *r;
      }
      return RegionalHandle(node[kHandleProject], region, tok[kHandleDiskName]);
    }
    return InvalidArgument(
        "expected volume handle to have zones or regions regionality value, got: " + regionality);
  }
};

}  // namespace

std::unique_ptr<InTreePlugin> NewGcePdPlugin() { return std::make_unique<GcePdPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
