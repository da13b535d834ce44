#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

TEST(RbdTest, PVToCsiMigrationHandle) {
  Translator t;
  ExpectResult(
      t.TranslateInTreePVToCSI(
          J(R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadWriteMany"],"rbd":{
          "monitors":["10.70.53.126:6789"],"image":"kubernetes-dynamic-pvc-e0b45b52-7e09-47d3-8f1b-806995fa4412",
          "pool":"replicapool","fsType":"ext4","user":"admin","keyring":"/k","readOnly":true,
          "secretRef":{"name":"ceph-secret","namespace":"default"}}}})")),
      {R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadOnlyMany"],"csi":{"driver":"rbd.csi.ceph.com",
          "volumeHandle":"mig_mons-b7f67366bb43f32e07d8a261a7840da9_image-e0b45b52-7e09-47d3-8f1b-806995fa4412_7265706c696361706f6f6c",
          "fsType":"ext4","volumeAttributes":{"clusterID":"b7f67366bb43f32e07d8a261a7840da9","staticVolume":"true",
          "imageName":"kubernetes-dynamic-pvc-e0b45b52-7e09-47d3-8f1b-806995fa4412","pool":"replicapool",
          "imageFeatures":"layering","imageFormat":"","journalPool":"","migration":"true","tryOtherMounters":"true"},
          "nodeStageSecretRef":{"name":"ceph-secret","namespace":"default"},
          "controllerExpandSecretRef":{"name":"ceph-secret","namespace":"default"}}}})",
       ""});
}

TEST(RbdTest, PVToCsiHandleFromAnnotation) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(
                   R"({"metadata":{"name":"pv","annotations":{"rbd.csi.ceph.com/volume-handle":"h1",
          "clusterID":"c1","imageFeatures":"layering,exclusive-lock","imageFormat":"2","journalPool":"jp"}},
          "spec":{"rbd":{"monitors":["10.70.53.126:6789","10.70.53.156:6789"],"image":"img","pool":"p"}}})")),
               {R"({"metadata":{"name":"pv","annotations":{"rbd.csi.ceph.com/volume-handle":"h1",
          "clusterID":"c1","imageFeatures":"layering,exclusive-lock","imageFormat":"2","journalPool":"jp"}},
          "spec":{"accessModes":["ReadWriteOnce"],"csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"h1",
          "volumeAttributes":{"clusterID":"c1","imageName":"img","pool":"p","imageFeatures":"layering,exclusive-lock",
          "imageFormat":"2","journalPool":"jp","migration":"true","tryOtherMounters":"true"}}}})",
                ""});
}

TEST(RbdTest, InlineUsesPodNamespaceAndDefaultPool) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(
          J(R"({"name":"v","rbd":{"monitors":["10.70.53.126:6789","10.70.53.156:6789"],"image":"img",
                        "secretRef":{"name":"s"},"fsType":"xfs"}})"),
          "team"),
      {R"({"metadata":{"name":"rbd.csi.ceph.com-img"},"spec":{"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",
                   "csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"img","fsType":"xfs",
                   "volumeAttributes":{"clusterID":"7982de6a23b77bce50b1ba9f2e879cce","pool":"rbd","staticVolume":"true",
                   "imageFeatures":"layering"},
                   "nodeStageSecretRef":{"name":"s","namespace":"team"},"controllerExpandSecretRef":{"name":"s","namespace":"team"}}}})",
       ""});
}

TEST(RbdTest, CsiToInTreeLosesMonitors) {
  Translator t;
  ExpectResult(
      t.TranslateCSIPVToInTree(J(
          R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"rbd.csi.ceph.com","volumeHandle":"h",
          "fsType":"ext4","readOnly":true,"volumeAttributes":{"imageName":"img","pool":"p","clusterID":"c","imageFeatures":"layering"},
          "nodeStageSecretRef":{"name":"s","namespace":"n"}}}})")),
      {R"({"metadata":{"name":"pv","annotations":{"rbd.csi.ceph.com/volume-handle":"h","clusterID":"c","journalPool":"",
          "imageFeatures":"layering","imageFormat":""}},"spec":{"rbd":{"monitors":[""],"image":"img","fsType":"ext4",
          "pool":"p","user":"admin","secretRef":{"name":"s","namespace":"n"},"readOnly":true}}})",
       ""});
}

TEST(RbdTest, StorageClass) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/rbd",
          J(R"({"provisioner":"kubernetes.io/rbd","parameters":{"monitors":"10.70.53.126:6789","adminId":"admin",
               "adminSecretName":"as","adminSecretNamespace":"kube-system","pool":"kube","userId":"kube",
               "userSecretName":"us","fsType":"ext4","imageFormat":"2","imageFeatures":"layering"}})")),
      {R"({"provisioner":"rbd.csi.ceph.com","parameters":{"migration":"true","pool":"kube","adminId":"admin",
          "monitors":"10.70.53.126:6789","clusterID":"b7f67366bb43f32e07d8a261a7840da9",
          "csi.storage.k8s.io/provisioner-secret-name":"as","csi.storage.k8s.io/node-stage-secret-name":"as",
          "csi.storage.k8s.io/controller-expand-secret-name":"as",
          "csi.storage.k8s.io/provisioner-secret-namespace":"kube-system","csi.storage.k8s.io/node-stage-secret-namespace":"kube-system",
          "csi.storage.k8s.io/controller-expand-secret-namespace":"kube-system",
          "csi.storage.k8s.io/fstype":"ext4","imageFormat":"2","imageFeatures":"layering"}})",
       ""});
  ExpectResult(t.TranslateInTreeStorageClassToCSI("kubernetes.io/rbd",
                                                  J(R"({"parameters":{"monitors":"m"}})")),
               {"", "missing Ceph admin secret name"});
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/rbd", J(R"({"parameters":{"adminSecretName":"a","monitors":""}})")),
      {"", "missing Ceph monitors"});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
