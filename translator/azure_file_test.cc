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

class AzureFilePVTest : public testing::TestWithParam<Case> {};
TEST_P(AzureFilePVTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(GetParam().input)), GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(
    Table, AzureFilePVTest,
    testing::Values(
        Case{
            "ClaimNamespaceAndResourceGroup",
            R"({"metadata":{"name":"pv","annotations":{"kubernetes.io/azure-file-resource-group":"rg"}},
                 "spec":{"claimRef":{"namespace":"app"},"azureFile":{"secretName":"azure-storage-account-accountname-dup-secret",
                 "shareName":"share","readOnly":true}}})",
            {R"({"metadata":{"name":"pv","annotations":{"kubernetes.io/azure-file-resource-group":"rg"}},
                 "spec":{"claimRef":{"namespace":"app"},"csi":{"driver":"file.csi.azure.com",
                 "volumeHandle":"rg#accountname-dup#share#pv#app","readOnly":true,"volumeAttributes":{"sharename":"share"},
                 "nodeStageSecretRef":{"name":"azure-storage-account-accountname-dup-secret","namespace":"app"}}}})",
             ""}},
        Case{
            "SecretNamespaceWinsAndOddSecretNameIsTheAccount",
            R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app"},"azureFile":{"secretName":"mysecret",
                 "shareName":"share","secretNamespace":"sec"}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app"},"csi":{"driver":"file.csi.azure.com",
                 "volumeHandle":"#mysecret#share#pv#sec","volumeAttributes":{"sharename":"share"},
                 "nodeStageSecretRef":{"name":"mysecret","namespace":"sec"}}}})",
             ""}},
        Case{
            "EmptySecretNamespaceFailsDespiteClaim",
            R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app"},"azureFile":{"secretName":"s",
                 "shareName":"share","secretNamespace":""}}})",
            {"", "could not find a secret namespace in PersistentVolumeSource or ClaimRef"}},
        Case{
            "NoNamespaceAtAll",
            R"({"metadata":{"name":"pv"},"spec":{"azureFile":{"secretName":"s","shareName":"share"}}})",
            {"", "could not find a secret namespace in PersistentVolumeSource or ClaimRef"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

class AzureFileBackTest : public testing::TestWithParam<Case> {};
TEST_P(AzureFileBackTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateCSIPVToInTree(J(GetParam().input)), GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(
    Table, AzureFileBackTest,
    testing::Values(
        Case{
            "FromHandle",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"file.csi.azure.com","volumeHandle":"rg#acct#share#pv#ns"}}})",
            {R"({"metadata":{"name":"pv","annotations":{"kubernetes.io/azure-file-resource-group":"rg"}},
                 "spec":{"azureFile":{"secretName":"azure-storage-account-acct-secret","shareName":"share","secretNamespace":"default"}}})",
             ""}},
        Case{
            "FromAttributesAndNodeStageRef",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"file.csi.azure.com","volumeHandle":"bad","readOnly":true,
                 "volumeAttributes":{"ShareName":"s1","secretname":"ignored","secretNamespace":"ns1"},
                 "nodeStageSecretRef":{"name":"sec"}}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"azureFile":{"secretName":"sec","shareName":"s1","readOnly":true,
                 "secretNamespace":""}}})",
             ""}},
        Case{
            "BadHandle",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"file.csi.azure.com","volumeHandle":"a#b"}}})",
            {"", "error parsing volume id: \"a#b\", should at least contain two #"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(AzureFileTest, InlineUsesPodNamespaceOrDefault) {
  Translator t;
  const char* volume =
      R"({"name":"vol","azureFile":{"secretName":"azure-storage-account-a-secret","shareName":"sh"}})";
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(J(volume), ""),
      {R"({"metadata":{"name":"#a#sh#vol#default"},"spec":{"accessModes":["ReadWriteMany"],"volumeMode":"Filesystem",
                   "csi":{"driver":"file.csi.azure.com","volumeHandle":"#a#sh#vol#default","volumeAttributes":{"sharename":"sh"},
                   "nodeStageSecretRef":{"name":"azure-storage-account-a-secret","namespace":"default"}}}})",
       ""});
  auto in_ns = t.TranslateInTreeInlineVolumeToCSI(J(volume), "team");
  ASSERT_TRUE(in_ns.ok());
  EXPECT_EQ((*in_ns)["spec"]["csi"]["volumeHandle"], "#a#sh#vol#team");
}

TEST(AzureFileTest, StorageClassUntouched) {
  Translator t;
  const char* sc =
      R"({"provisioner":"kubernetes.io/azure-file","parameters":{"fstype":"x","zone":"z"},
      "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["z"]}]}]})";
  ExpectResult(t.TranslateInTreeStorageClassToCSI("kubernetes.io/azure-file", J(sc)), {sc, ""});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
