#include "bench/generate_pv_list.h"

#include <string>

#include "common/yaml_json.h"

namespace flexcsi {
namespace bench {

using nlohmann::json;

const char kFlexVolumeRulesJson[] =
    "{\"flexVolumeRules\":[{\"flexDriver\":\"acme/lvm\",\"csiDriver\":\"lvm.csi.acme.io\","
    "\"volumeHandle\":{\"fromOption\":\"volumeID\"},\"attributes\":{\"rename\":{\"vg\":"
    "\"volumeGroup\"}}}]}";

namespace {

// splitmix64: fixed output on every platform (std distributions are not).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool OneIn(uint64_t n) { return Below(n) == 0; }
  template <typename T, size_t N>
  const T& Pick(const T (&options)[N]) {
    return options[Below(N)];
  }
  std::string Hex(int digits) {
    static const char kHex[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < digits; ++i) s.push_back(kHex[Below(16)]);
    return s;
  }
  std::string Uuid() {
    return Hex(8) + "-" + Hex(4) + "-4" + Hex(3) + "-8" + Hex(3) + "-" + Hex(12);
  }

 private:
  uint64_t state_;
};

const char kZoneBeta[] = "failure-domain.beta.kubernetes.io/zone";
const char kRegionBeta[] = "failure-domain.beta.kubernetes.io/region";
const char kZoneGA[] = "topology.kubernetes.io/zone";
const char kRegionGA[] = "topology.kubernetes.io/region";

json ZoneAffinity(const char* key, const json& zones) {
  return {{"required",
           {{"nodeSelectorTerms",
             json::array({{{"matchExpressions",
                            json::array({{{"key", key}, {"operator", "In"}, {"values", zones}}})}}})}}}};
}

// Zone labels the way each generation of cloud provider wrote them: beta only, GA only or both.
void SetZoneLabels(Random& rnd, json& labels, const std::string& zone, const std::string& region) {
  switch (rnd.Below(3)) {
    case 0:
      labels[kZoneBeta] = zone;
      labels[kRegionBeta] = region;
      break;
    case 1:
      labels[kZoneGA] = zone;
      labels[kRegionGA] = region;
      break;
    default:
      labels[kZoneBeta] = zone;
      labels[kRegionBeta] = region;
      labels[kZoneGA] = zone;
      labels[kRegionGA] = region;
      break;
  }
}

}  // namespace

json GeneratePV(uint64_t seed, uint64_t index) {
  Random rnd(seed * 0x100000001b3ULL + index);
  const std::string pv_uid = rnd.Uuid();
  const std::string name = "pvc-" + pv_uid;
  const char* const kNamespaces[] = {"default", "payments", "search", "monitoring", "ci",
                                     "data-platform", "web", "kube-system"};
  const std::string ns = rnd.Pick(kNamespaces);
  const char* const kClaims[] = {"data", "logs", "cache", "db", "wal", "uploads", "index"};
  const std::string claim = std::string(rnd.Pick(kClaims)) + "-" + rnd.Hex(5) + "-" +
                            std::to_string(rnd.Below(5));
  const char* const kSizes[] = {"1Gi", "5Gi", "10Gi", "20Gi", "50Gi", "100Gi", "500Gi"};
  const std::string day = std::to_string(10 + rnd.Below(18));
  const std::string stamp = "2024-03-" + day + "T" + std::to_string(10 + rnd.Below(14)) + ":" +
                            std::to_string(10 + rnd.Below(50)) + ":" +
                            std::to_string(10 + rnd.Below(50)) + "Z";

  json pv = {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolume"},
      {"metadata",
       {{"annotations", {{"pv.kubernetes.io/bound-by-controller", "yes"}}},
        {"creationTimestamp", stamp},
        {"finalizers", {"kubernetes.io/pv-protection"}},
        {"name", name},
        {"resourceVersion", std::to_string(1000000 + rnd.Below(90000000))},
        {"uid", pv_uid}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}},
        {"capacity", {{"storage", rnd.Pick(kSizes)}}},
        {"claimRef",
         {{"apiVersion", "v1"},
          {"kind", "PersistentVolumeClaim"},
          {"name", claim},
          {"namespace", ns},
          {"resourceVersion", std::to_string(1000000 + rnd.Below(90000000))},
          {"uid", rnd.Uuid()}}},
        {"persistentVolumeReclaimPolicy", rnd.OneIn(4) ? "Retain" : "Delete"},
        {"storageClassName", "standard"},
        {"volumeMode", rnd.OneIn(10) ? "Block" : "Filesystem"}}},
      {"status", {{"phase", "Bound"}}}};
  json& metadata = pv["metadata"];
  json& annotations = metadata["annotations"];
  json& spec = pv["spec"];
  json labels = json::object();
  const char* const kFsTypes[] = {"ext4", "ext4", "xfs"};

  switch (index % 10) {
    case 0:
    case 1: {  // GCE PD: zonal, or regional (two zones in one label), beta and GA labels.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/gce-pd";
      annotations["kubernetes.io/createdby"] = "gce-pd-dynamic-provisioner";
      const char* const kRegions[] = {"us-central1", "europe-west1", "asia-east1"};
      const std::string region = rnd.Pick(kRegions);
      const std::string zone = region + "-" + std::string(1, "abc"[rnd.Below(3)]);
      spec["gcePersistentDisk"] = {{"fsType", rnd.Pick(kFsTypes)}, {"pdName", "gke-" + name}};
      if (rnd.OneIn(3)) spec["gcePersistentDisk"]["partition"] = 1 + rnd.Below(3);
      if (index % 10 == 1) {
        std::string zones = region + "-a__" + region + "-b";
        SetZoneLabels(rnd, labels, zones, region);
        spec["nodeAffinity"] = ZoneAffinity(kZoneGA, {region + "-a", region + "-b"});
      } else {
        SetZoneLabels(rnd, labels, zone, region);
        if (rnd.OneIn(2)) {
          spec["nodeAffinity"] = ZoneAffinity(rnd.OneIn(2) ? kZoneGA : kZoneBeta, {zone});
        }
      }
      spec["storageClassName"] = rnd.OneIn(2) ? "standard" : "standard-rwo";
      break;
    }
    case 2: {  // AWS EBS, aws://<zone>/vol-... handles.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/aws-ebs";
      annotations["kubernetes.io/createdby"] = "aws-ebs-dynamic-provisioner";
      const char* const kZones[] = {"us-east-1a", "us-east-1b", "eu-west-1c"};
      const std::string zone = rnd.Pick(kZones);
      const std::string region = zone.substr(0, zone.size() - 1);
      spec["awsElasticBlockStore"] = {{"fsType", rnd.Pick(kFsTypes)},
                                      {"volumeID", "aws://" + zone + "/vol-0" + rnd.Hex(16)}};
      SetZoneLabels(rnd, labels, zone, region);
      spec["nodeAffinity"] = ZoneAffinity(kZoneBeta, {zone});
      spec["storageClassName"] = "gp2";
      break;
    }
    case 3: {  // Azure Disk, managed.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/azure-disk";
      annotations["volumehelper.VolumeDynamicallyCreatedByKey"] = "azure-disk-dynamic-provisioner";
      const std::string disk = "kubernetes-dynamic-" + name;
      spec["azureDisk"] = {
          {"cachingMode", rnd.OneIn(2) ? "ReadOnly" : "None"},
          {"diskName", disk},
          {"diskURI", "/subscriptions/" + rnd.Uuid() + "/resourceGroups/mc_rg_aks_eastus" +
                          "/providers/Microsoft.Compute/disks/" + disk},
          {"fsType", rnd.Pick(kFsTypes)},
          {"kind", "Managed"},
          {"readOnly", false}};
      SetZoneLabels(rnd, labels, "eastus-" + std::to_string(1 + rnd.Below(3)), "eastus");
      spec["storageClassName"] = "managed-premium";
      break;
    }
    case 4: {  // Azure File: the secret names the storage account; secretNamespace or claimRef.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/azure-file";
      const std::string account = "f" + rnd.Hex(20);
      spec["azureFile"] = {{"secretName", "azure-storage-account-" + account + "-secret"},
                           {"shareName", "kubernetes-dynamic-" + name}};
      if (rnd.OneIn(2)) spec["azureFile"]["secretNamespace"] = ns;
      if (rnd.OneIn(4)) spec["azureFile"]["readOnly"] = true;
      spec["accessModes"] = {"ReadWriteMany"};
      spec["mountOptions"] = {"dir_mode=0777", "file_mode=0777", "uid=1000", "gid=1000"};
      spec["storageClassName"] = "azurefile";
      break;
    }
    case 5: {  // Cinder with a beta zone label.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/cinder";
      spec["cinder"] = {{"fsType", rnd.Pick(kFsTypes)}, {"volumeID", rnd.Uuid()}};
      SetZoneLabels(rnd, labels, rnd.OneIn(2) ? "nova" : "az-2", "RegionOne");
      spec["storageClassName"] = "cinder-standard";
      break;
    }
    case 6: {  // vSphere with storage policies.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/vsphere-volume";
      const char* const kPolicies[] = {"gold", "silver", "vSAN Default Storage Policy"};
      spec["vsphereVolume"] = {
          {"fsType", rnd.Pick(kFsTypes)},
          {"volumePath", "[vsanDatastore] kubevols/kubernetes-dynamic-" + name + ".vmdk"}};
      if (!rnd.OneIn(3)) {
        spec["vsphereVolume"]["storagePolicyName"] = rnd.Pick(kPolicies);
        spec["vsphereVolume"]["storagePolicyID"] = rnd.Uuid();
      }
      spec["storageClassName"] = "thin";
      break;
    }
    case 7: {  // Portworx with auth-secret annotations.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/portworx-volume";
      spec["portworxVolume"] = {{"fsType", "ext4"}, {"volumeID", std::to_string(rnd.Next())}};
      if (!rnd.OneIn(3)) {
        annotations["openstorage.io/auth-secret-name"] = "px-user-token";
        annotations["openstorage.io/auth-secret-namespace"] = "portworx";
      }
      spec["storageClassName"] = "px-db";
      break;
    }
    case 8: {  // Ceph RBD.
      annotations["pv.kubernetes.io/provisioned-by"] = "kubernetes.io/rbd";
      spec["rbd"] = {{"fsType", "ext4"},
                     {"image", "kubernetes-dynamic-pvc-" + rnd.Uuid()},
                     {"keyring", "/etc/ceph/keyring"},
                     {"monitors", {"10.16.153.105:6789", "10.16.153.106:6789"}},
                     {"pool", "kube"},
                     {"secretRef", {{"name", "ceph-secret-user"}, {"namespace", ns}}},
                     {"user", "kube"}};
      spec["storageClassName"] = "fast-rbd";
      break;
    }
    default: {  // FlexVolume, translated by the rules of kFlexVolumeRulesJson.
      spec["flexVolume"] = {{"driver", "acme/lvm"},
                            {"fsType", "ext4"},
                            {"options",
                             {{"size", rnd.Pick(kSizes)},
                              {"vg", rnd.OneIn(2) ? "vg0" : "vg-fast"},
                              {"volumeID", "lv-" + rnd.Hex(12)}}}};
      spec["storageClassName"] = "";
      break;
    }
  }
  if (!labels.empty()) metadata["labels"] = std::move(labels);
  return pv;
}

void WritePVList(std::ostream& out, uint64_t seed, uint64_t count, ListFormat format) {
  if (format == ListFormat::kYaml) {
    out << "apiVersion: v1\nitems:";
    if (count == 0) out << " []";
    out << "\n";
    for (uint64_t i = 0; i < count; ++i) {
      // Each item is a block mapping; as a sequence entry its lines shift by two.
      std::string yaml = JsonToYaml(GeneratePV(seed, i));
      std::string item = "- ";
      for (size_t p = 0; p < yaml.size(); ++p) {
        item.push_back(yaml[p]);
        if (yaml[p] == '\n' && p + 1 < yaml.size()) item += "  ";
      }
      out << item;
    }
    out << "kind: List\nmetadata:\n  resourceVersion: \"\"\n";
    return;
  }
  out << "{\n    \"apiVersion\": \"v1\",\n    \"items\": [";
  for (uint64_t i = 0; i < count; ++i) {
    // JSON strings never hold a raw newline, so indenting after each one is safe.
    std::string text = GeneratePV(seed, i).dump(4);
    std::string item = i == 0 ? "\n        " : ",\n        ";
    for (char c : text) {
      item.push_back(c);
      if (c == '\n') item += "        ";
    }
    out << item;
  }
  out << (count == 0 ? "],\n" : "\n    ],\n")
      << "    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n";
}

}  // namespace bench
}  // namespace flexcsi
