#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

struct Case {
  const char* name;
  const char* input;
  Expected want;
};

const char kUri[] = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk1";

class AzureDiskPVTest : public testing::TestWithParam<Case> {};
TEST_P(AzureDiskPVTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(GetParam().input)), GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(
    Table, AzureDiskPVTest,
    testing::Values(
        Case{
            "PointerFieldsSetEvenWhenEmpty",
            R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"1"}},"spec":{"azureDisk":{
                 "diskName":"disk1","diskURI":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk1",
                 "cachingMode":"","fsType":"","readOnly":false,"kind":"managed"}}})",
            {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"1"}},"spec":{"csi":{
                 "driver":"disk.csi.azure.com","volumeHandle":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk1",
                 "volumeAttributes":{"kind":"Managed","cachingmode":"","fstype":""}}}})",
             ""}},
        Case{
            "AllSet",
            R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"d","diskURI":"u","cachingMode":"ReadOnly",
                 "fsType":"ext4","readOnly":true}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com","volumeHandle":"u","fsType":"ext4",
                 "readOnly":true,"volumeAttributes":{"kind":"Managed","cachingmode":"ReadOnly","fstype":"ext4"}}}})",
             ""}},
        Case{
            "SharedKindRejected",
            R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"d","diskURI":"u","kind":"Shared"}}})",
            {"", "kind(Shared) is not supported in csi migration"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

class AzureDiskBackTest : public testing::TestWithParam<Case> {};
TEST_P(AzureDiskBackTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateCSIPVToInTree(J(GetParam().input)), GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(
    Table, AzureDiskBackTest,
    testing::Values(
        Case{"Managed",
             R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com",
                 "volumeHandle":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk1",
                 "volumeAttributes":{"cachingMode":"ReadOnly","FsType":"xfs","kind":"Dedicated"}}}})",
             {R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"disk1",
                 "diskURI":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk1",
                 "cachingMode":"ReadOnly","fsType":"xfs","readOnly":false,"kind":"Managed"}}})",
              ""}},
        Case{
            "BlobBecomesManagedKind",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com","readOnly":true,
                 "volumeHandle":"https://acct.blob.core.windows.net/vhds/x.vhd","fsType":"ext4"}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"x.vhd",
                 "diskURI":"https://acct.blob.core.windows.net/vhds/x.vhd","fsType":"ext4","readOnly":true,"kind":"Managed"}}})",
             ""}},
        Case{
            "UpperCaseHttpFails",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com","volumeHandle":"HTTPS://a/vhds/x"}}})",
            {"",
             "could not get disk name from HTTPS://a/vhds/x, correct format: "
             "http(?:.*)://(?:.*)/vhds/(.+)"}},
        Case{"DotMatchesAnyCharacter",
             R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com",
                 "volumeHandle":"x/subscriptions/a/resourceGroups/b/providers/MicrosoftXCompute/disks/n/more"}}})",
             {R"({"metadata":{"name":"pv"},"spec":{"azureDisk":{"diskName":"n/more",
                 "diskURI":"x/subscriptions/a/resourceGroups/b/providers/MicrosoftXCompute/disks/n/more",
                 "fsType":"","readOnly":false,"kind":"Managed"}}})",
              ""}},
        Case{
            "NotADiskUri",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"disk.csi.azure.com","volumeHandle":"disk1"}}})",
            {"",
             "could not get disk name from disk1, correct format: "
             ".*/subscriptions/(?:.*)/resourceGroups/(?:.*)/providers/Microsoft.Compute/disks/"
             "(.+)"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(AzureDiskTest, InlineDropsEmptyCachingMode) {
  Translator t;
  std::string volume = std::string(R"({"name":"v","azureDisk":{"diskName":"d","diskURI":")") +
                       kUri + R"(","cachingMode":"","fsType":"ext4"}})";
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(J(volume), "ns"),
      {std::string(R"({"metadata":{"name":")") + kUri +
           R"("},"spec":{"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",
                   "csi":{"driver":"disk.csi.azure.com","volumeHandle":")" +
           kUri + R"(","fsType":"ext4","volumeAttributes":{"kind":"Managed","fstype":"ext4"}}}})",
       ""});
}

TEST(AzureDiskTest, StorageClassZonesAndNumericFaultDomains) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/azure-disk",
          J(R"({"parameters":{"fstype":"ext4","zones":"eastus-1,0,1234","skuName":"Premium_LRS"}})")),
      {R"({"parameters":{"fstype":"ext4","skuName":"Premium_LRS"},
                   "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.disk.csi.azure.com/zone","values":["eastus-1","",""]}]}]})",
       ""});
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/azure-disk",
          J(R"({"allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["2","westus-2"]},
                        {"key":"other","values":["3"]}]}]})")),
      {R"({"allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.disk.csi.azure.com/zone","values":["","westus-2"]},
                        {"key":"other","values":["3"]}]}]})",
       ""});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
