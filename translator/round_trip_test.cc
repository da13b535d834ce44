// In-tree -> CSI -> in-tree round trips (translation.md §13): each row states exactly which
// fields do not survive, by giving the full object that comes back.
#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

struct RoundTrip {
  const char* name;
  const char* in_tree;
  const char* back;  // what in-tree -> CSI -> in-tree returns
};

class RoundTripTest : public testing::TestWithParam<RoundTrip> {};

TEST_P(RoundTripTest, LossIsExactlyAsDocumented) {
  auto rules = ParseFlexVolumeRulesText(
      R"({"flexVolumeRules":[{"flexDriver":"acme/lvm","csiDriver":"lvm.csi.acme.io",
      "volumeHandle":{"fromOption":"volumeID"},"attributes":{"exclude":["debug"],"static":{"m":"flex"}}}]})");
  ASSERT_TRUE(rules.ok());
  Translator t(*rules);
  auto csi = t.TranslateInTreePVToCSI(J(GetParam().in_tree));
  ASSERT_TRUE(csi.ok()) << csi.status().message();
  auto back = t.TranslateCSIPVToInTree(*csi);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_JSON_EQ(*back, J(GetParam().back));
}

INSTANTIATE_TEST_SUITE_P(
    Table, RoundTripTest,
    testing::Values(
        RoundTrip{
            "AwsUrlFormAndZeroPartitionLost",
            R"({"metadata":{"name":"pv"},"spec":{"awsElasticBlockStore":{"volumeID":"aws://us-east-1a/vol-1","partition":0}}})",
            R"({"metadata":{"name":"pv"},"spec":{"awsElasticBlockStore":{"volumeID":"vol-1"}}})"},
        RoundTrip{
            "GceAccessModesCollapsedAndLabelZoneGainsAffinityAndRegion",
            R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a"}},
                      "spec":{"accessModes":["ReadWriteMany"],"gcePersistentDisk":{"pdName":"d","partition":1}}})",
            R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a",
                      "topology.kubernetes.io/region":"us-central1"}},
                      "spec":{"accessModes":["ReadWriteOnce"],"gcePersistentDisk":{"pdName":"d","partition":1},
                      "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                        {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-central1-a"]},
                        {"key":"topology.kubernetes.io/region","operator":"In","values":["us-central1"]}]}]}}}})"},
        RoundTrip{"AzureDiskNameRederivedKindManagedPointersSet",
                  R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"orig",
                      "diskURI":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d1"}}})",
                  R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"d1",
                      "diskURI":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d1",
                      "fsType":"","readOnly":false,"kind":"Managed"}}})"},
        RoundTrip{
            "AzureFileNamespaceFromAttributesLostResourceGroupAsAnnotation",
            R"({"metadata":{"name":"pv","annotations":{"kubernetes.io/azure-file-resource-group":"rg"}},
                      "spec":{"claimRef":{"namespace":"app"},"azureFile":{"secretName":"sec","shareName":"sh"}}})",
            R"({"metadata":{"name":"pv","annotations":{"kubernetes.io/azure-file-resource-group":"rg"}},
                      "spec":{"claimRef":{"namespace":"app"},"azureFile":{"secretName":"sec","shareName":"sh","secretNamespace":"app"}}})"},
        RoundTrip{
            "CinderSecretRefDropped",
            R"({"metadata":{"name":"pv"},"spec":{"cinder":{"volumeID":"v","secretRef":{"name":"s"}}}})",
            R"({"metadata":{"name":"pv"},"spec":{"cinder":{"volumeID":"v"}}})"},
        RoundTrip{
            "VspherePathAndPolicyLost",
            R"({"metadata":{"name":"pv"},"spec":{"vsphereVolume":{"volumePath":"[ds] a.vmdk","storagePolicyName":"gold","storagePolicyID":"i"}}})",
            R"({"metadata":{"name":"pv"},"spec":{"vsphereVolume":{"volumePath":""}}})"},
        RoundTrip{
            "PortworxReadOnlyAndSecretAnnotationsKeptOnlyAsAnnotations",
            R"({"metadata":{"name":"pv"},"spec":{"portworxVolume":{"volumeID":"px","readOnly":true}}})",
            R"({"metadata":{"name":"pv"},"spec":{"portworxVolume":{"volumeID":"px"}}})"},
        RoundTrip{
            "RbdMonitorsUserKeyringAccessModesLost",
            R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadWriteMany"],"rbd":{"monitors":["m1"],
                      "image":"kubernetes-dynamic-pvc-u1","pool":"p","user":"u","keyring":"/k"}}})",
            R"({"metadata":{"name":"pv","annotations":{"rbd.csi.ceph.com/volume-handle":"mig_mons-ae7be26cdaa742ca148068d5ac90eaca_image-u1_70",
                      "clusterID":"ae7be26cdaa742ca148068d5ac90eaca","journalPool":"","imageFeatures":"layering","imageFormat":""}},
                      "spec":{"accessModes":["ReadWriteOnce"],"rbd":{"monitors":[""],"image":"kubernetes-dynamic-pvc-u1","pool":"p","user":"admin"}}})"},
        RoundTrip{
            "FlexVolumeKubeletAndExcludedOptionsDropped",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":"v","debug":"1",
                      "kubernetes.io/fsType":"ext4","keep":"k"}}}})",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":"v","keep":"k"}}}})"}),
    [](const testing::TestParamInfo<RoundTrip>& info) { return info.param.name; });

}  // namespace
}  // namespace translator
}  // namespace flexcsi
