#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

TEST(PortworxTest, PVToCsiDropsReadOnlyAndSetsAllSecretRefs) {
  Translator t;
  ExpectResult(
      t.TranslateInTreePVToCSI(
          J(R"({"metadata":{"name":"pv","annotations":{"openstorage.io/auth-secret-name":"s",
          "openstorage.io/auth-secret-namespace":"ns"}},"spec":{"portworxVolume":{"volumeID":"px1","fsType":"ext4","readOnly":true}}})")),
      {R"({"metadata":{"name":"pv","annotations":{"openstorage.io/auth-secret-name":"s","openstorage.io/auth-secret-namespace":"ns"}},
          "spec":{"csi":{"driver":"pxd.portworx.com","volumeHandle":"px1","fsType":"ext4",
          "controllerPublishSecretRef":{"name":"s","namespace":"ns"},"nodeStageSecretRef":{"name":"s","namespace":"ns"},
          "nodePublishSecretRef":{"name":"s","namespace":"ns"},"controllerExpandSecretRef":{"name":"s","namespace":"ns"},
          "nodeExpandSecretRef":{"name":"s","namespace":"ns"}}}})",
       ""});
  // Only one of the two annotations: no refs.
  ExpectResult(
      t.TranslateInTreePVToCSI(
          J(R"({"metadata":{"name":"pv","annotations":{"openstorage.io/auth-secret-name":"s"}},
          "spec":{"portworxVolume":{"volumeID":"px1"}}})")),
      {R"({"metadata":{"name":"pv","annotations":{"openstorage.io/auth-secret-name":"s"}},
          "spec":{"csi":{"driver":"pxd.portworx.com","volumeHandle":"px1"}}})",
       ""});
}

TEST(PortworxTest, InlineAndBack) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(
          J(R"({"name":"v","portworxVolume":{"volumeID":"px1","readOnly":true}})"), ""),
      {R"({"metadata":{"name":"pxd.portworx.com-px1"},"spec":{"accessModes":["ReadOnlyMany"],
                   "volumeMode":"Filesystem","csi":{"driver":"pxd.portworx.com","volumeHandle":"px1"}}})",
       ""});
  ExpectResult(
      t.TranslateCSIPVToInTree(
          J(R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pxd.portworx.com",
                   "volumeHandle":"px1","readOnly":true,"fsType":"xfs","nodeStageSecretRef":{"name":"s"}}}})")),
      {R"({"metadata":{"name":"pv"},"spec":{"portworxVolume":{"volumeID":"px1","readOnly":true,"fsType":"xfs"}}})",
       ""});
}

TEST(PortworxTest, StorageClassExpandsSecrets) {
  Translator t;
  ExpectResult(t.TranslateInTreeStorageClassToCSI(
                   "kubernetes.io/portworx-volume",
                   J(R"({"provisioner":"kubernetes.io/portworx-volume","parameters":{"repl":"2",
               "openstorage.io/auth-secret-name":"s","openstorage.io/auth-secret-namespace":"ns"}})")),
               {R"({"provisioner":"pxd.portworx.com","parameters":{"repl":"2",
          "csi.storage.k8s.io/provisioner-secret-name":"s","csi.storage.k8s.io/controller-publish-secret-name":"s",
          "csi.storage.k8s.io/node-stage-secret-name":"s","csi.storage.k8s.io/node-publish-secret-name":"s",
          "csi.storage.k8s.io/controller-expand-secret-name":"s","csi.storage.k8s.io/node-expand-secret-name":"s",
          "csi.storage.k8s.io/provisioner-secret-namespace":"ns","csi.storage.k8s.io/controller-publish-secret-namespace":"ns",
          "csi.storage.k8s.io/node-stage-secret-namespace":"ns","csi.storage.k8s.io/node-publish-secret-namespace":"ns",
          "csi.storage.k8s.io/controller-expand-secret-namespace":"ns","csi.storage.k8s.io/node-expand-secret-namespace":"ns"}})",
                ""});
  ExpectResult(t.TranslateInTreeStorageClassToCSI("kubernetes.io/portworx-volume",
                                                  J(R"({"metadata":{"name":"px"}})")),
               {R"({"metadata":{"name":"px"},"provisioner":"pxd.portworx.com"})", ""});
  ExpectResult(t.TranslateInTreeStorageClassToCSI("kubernetes.io/portworx-volume", nullptr),
               {"", "sc is nil"});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
