#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

TEST(VsphereTest, PVToCsiLabelsBecomeUnsplitAffinity) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(R"({"metadata":{"name":"pv","labels":{
          "failure-domain.beta.kubernetes.io/zone":"z1__z2","failure-domain.beta.kubernetes.io/region":"r1"}},
          "spec":{"vsphereVolume":{"volumePath":"[ds] kubevols/x.vmdk","fsType":"ext4","storagePolicyName":"gold",
          "storagePolicyID":"id"}}})")),
               {R"({"metadata":{"name":"pv","labels":{
          "failure-domain.beta.kubernetes.io/zone":"z1__z2","failure-domain.beta.kubernetes.io/region":"r1"}},
          "spec":{"csi":{"driver":"csi.vsphere.vmware.com","volumeHandle":"[ds] kubevols/x.vmdk","fsType":"ext4",
          "volumeAttributes":{"storagepolicyname":"gold"}},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
            {"key":"topology.csi.vmware.com/zone","operator":"In","values":["z1__z2"]},
            {"key":"topology.csi.vmware.com/region","operator":"In","values":["r1"]}]}]}}}})",
                ""});
}

TEST(VsphereTest, PVToCsiRenamesAffinity) {
  Translator t;
  auto got = t.TranslateInTreePVToCSI(
      J(R"({"metadata":{"name":"pv"},"spec":{"vsphereVolume":{"volumePath":"p"},
      "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
        {"key":"topology.kubernetes.io/zone","operator":"In","values":["z"]},
        {"key":"topology.kubernetes.io/region","operator":"In","values":["r"]}]}]}}}})"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_JSON_EQ((*got)["spec"]["nodeAffinity"],
                 J(R"({"required":{"nodeSelectorTerms":[{"matchExpressions":[
        {"key":"topology.csi.vmware.com/zone","operator":"In","values":["z"]},
        {"key":"topology.csi.vmware.com/region","operator":"In","values":["r"]}]}]}})"));
}

TEST(VsphereTest, CsiToInTreeTakesFirstZoneAndRecordedPath) {
  Translator t;
  ExpectResult(
      t.TranslateCSIPVToInTree(
          J(R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"csi.vsphere.vmware.com",
          "volumeHandle":"uuid","fsType":"ext4","volumeAttributes":{"initialvolumefilepath":"[ds] a.vmdk","storagepolicyname":"gold"}},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
            {"key":"topology.csi.vmware.com/zone","operator":"In","values":["zb","za"]},
            {"key":"topology.csi.vmware.com/region","operator":"In","values":["r"]}]}]}}}})")),
      {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"za","topology.kubernetes.io/region":"r"}},
          "spec":{"vsphereVolume":{"volumePath":"[ds] a.vmdk","fsType":"ext4"},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
            {"key":"topology.kubernetes.io/zone","operator":"In","values":["zb","za"]},
            {"key":"topology.kubernetes.io/region","operator":"In","values":["r"]}]}]}}}})",
       ""});
  ExpectResult(
      t.TranslateCSIPVToInTree(J(
          R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"csi.vsphere.vmware.com","volumeHandle":"uuid"}}})")),
      {R"({"metadata":{"name":"pv"},"spec":{"vsphereVolume":{"volumePath":""}}})", ""});
}

TEST(VsphereTest, InlineSetsStoragePolicyInsteadOfCrashing) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(
          J(R"({"name":"v","vsphereVolume":{"volumePath":"[ds] v.vmdk","storagePolicyName":"gold"}})"),
          ""),
      {R"({"metadata":{"name":"csi.vsphere.vmware.com-[ds] v.vmdk"},"spec":{"accessModes":["ReadWriteOnce"],
                   "volumeMode":"Filesystem","csi":{"driver":"csi.vsphere.vmware.com","volumeHandle":"[ds] v.vmdk",
                   "volumeAttributes":{"storagepolicyname":"gold"}}}})",
       ""});
}

TEST(VsphereTest, StorageClassKeepsOnlyKnownParameters) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/vsphere-volume",
          J(R"({"parameters":{"FSType":"ext4","StoragePolicyName":"gold","datastore":"ds","diskformat":"thin",
                        "hostFailuresToTolerate":"1","forceProvisioning":"true","cacheReservation":"5","diskStripes":"2",
                        "objectSpaceReservation":"10","iopsLimit":"100","zone":"dropped","other":"dropped"},
                        "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["z"]}]}]})")),
      {R"({"parameters":{"csi.storage.k8s.io/fstype":"ext4","storagepolicyname":"gold",
                   "datastore-migrationparam":"ds","diskformat-migrationparam":"thin",
                   "hostfailurestotolerate-migrationparam":"1","forceprovisioning-migrationparam":"true",
                   "cachereservation-migrationparam":"5","diskstripes-migrationparam":"2",
                   "objectspacereservation-migrationparam":"10","iopslimit-migrationparam":"100","csimigration":"true"},
                   "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.csi.vmware.com/zone","values":["z"]}]}]})",
       ""});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
