#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

TEST(CinderTest, PVToCsiDropsSecretRefAndUsesLabelZones) {
  Translator t;
  ExpectResult(
      t.TranslateInTreePVToCSI(
          J(R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"nova"}},
          "spec":{"cinder":{"volumeID":"v1","fsType":"ext4","readOnly":true,"secretRef":{"name":"s","namespace":"n"}}}})")),
      {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"nova"}},"spec":{
          "csi":{"driver":"cinder.csi.openstack.org","volumeHandle":"v1","fsType":"ext4","readOnly":true},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
            {"key":"topology.cinder.csi.openstack.org/zone","operator":"In","values":["nova"]}]}]}}}})",
       ""});
}

TEST(CinderTest, CsiToInTreeHasNoRegion) {
  Translator t;
  // A hostname-only term is fine for Cinder: there is no region parser to fail.
  ExpectResult(
      t.TranslateCSIPVToInTree(
          J(R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"cinder.csi.openstack.org",
          "volumeHandle":"v1","readOnly":true},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"topology.cinder.csi.openstack.org/zone","operator":"In","values":["b","a"]}]},
            {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n"]}]}]}}}})")),
      {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"a__b"}},"spec":{
          "cinder":{"volumeID":"v1","readOnly":true},
          "nodeAffinity":{"required":{"nodeSelectorTerms":[
            {"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["b","a"]}]},
            {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n"]}]}]}}}})",
       ""});
}

TEST(CinderTest, Inline) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(
          J(R"({"name":"v","cinder":{"volumeID":"v1","fsType":"xfs","readOnly":true}})"), "ns"),
      {R"({"metadata":{"name":"cinder.csi.openstack.org-v1"},"spec":{"accessModes":["ReadWriteOnce"],
                   "volumeMode":"Filesystem","csi":{"driver":"cinder.csi.openstack.org","volumeHandle":"v1",
                   "fsType":"xfs","readOnly":true}}})",
       ""});
}

TEST(CinderTest, StorageClassKeepsAvailabilityAndZone) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/cinder",
          J(R"({"parameters":{"fsType":"ext4","availability":"nova","zone":"z"},
                        "allowedTopologies":[{"matchLabelExpressions":[{"key":"failure-domain.beta.kubernetes.io/zone","values":["nova"]}]}]})")),
      {R"({"parameters":{"csi.storage.k8s.io/fstype":"ext4","availability":"nova","zone":"z"},
                   "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.cinder.csi.openstack.org/zone","values":["nova"]}]}]})",
       ""});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
