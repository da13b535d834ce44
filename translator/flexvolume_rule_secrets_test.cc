// The rule's `secrets` and `attributes.defaults` (docs/mapping-rules.md): a rook CephFS PV as
// rook's FlexVolume driver wrote it, and a flexcsi-controller PV whose Secret is Opaque.
#include "translator/flexvolume_rules.h"

#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

using Map = std::map<std::string, std::string>;

const char kRules[] = R"(
flexVolumeRules:
  - flexDriver: ceph.rook.io/rook
    csiDriver: cephfs.csi.ceph.com
    volumeHandle: {template: "${kubernetes.io/pvOrVolumeName}"}
    attributes:
      rename: {clusterNamespace: clusterID, path: rootPath}
      exclude: [clusterName, storageClass]
      defaults: {rootPath: /}
      static: {staticVolume: "true", mounter: fuse}
    secrets:
      secretName: {fromOption: mountSecret}
      singleKeyAs: userKey
      fromOptions: {mountUser: userID}
      defaults: {userID: admin}
    secretRefs: [nodeStage]
  - flexDriver: flexcsi/cephfs
    csiDriver: cephfs.csi.ceph.com
    volumeHandle: {fromOption: volumeHandle}
    secrets:
      secretName: {fromOption: nodeStageSecretName}
      secretNamespace: {fromOption: nodeStageSecretNamespace}
    secretRefs: [nodeStage]
)";

FlexVolumeRules LoadRules() {
  auto rules = ParseFlexVolumeRulesText(kRules);
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  return *rules;
}

TEST(FlexVolumeRuleSecretsTest, RookCephFSCallNamesTheSecretAndMakesTheUser) {
  auto got = MapFlexVolumeCallToCsi(LoadRules(), "ceph.rook.io/rook",
                                    {{"fsName", "myfs"},
                                     {"clusterNamespace", "rook-ceph"},
                                     {"mountSecret", "ceph-user"},
                                     {"kubernetes.io/fsType", "ceph"},
                                     {"kubernetes.io/pvOrVolumeName", "pv-a"},
                                     {"kubernetes.io/pod.namespace", "app"}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->volume_handle, "pv-a");
  EXPECT_EQ(got->volume_attributes, (Map{{"clusterID", "rook-ceph"},
                                         {"fsName", "myfs"},
                                         {"rootPath", "/"},
                                         {"staticVolume", "true"},
                                         {"mounter", "fuse"}}));
  ASSERT_TRUE(got->read_secret.has_value());
  EXPECT_EQ(got->read_secret->name, "ceph-user");
  // A bridge call has no fallback namespace: the bridge uses the pod's.
  EXPECT_EQ(got->read_secret->namespace_name, "");
  EXPECT_EQ(got->read_secret_single_key_as, "userKey");
  EXPECT_EQ(got->secret_values, (Map{{"userID", "admin"}}));
  EXPECT_FALSE(got->secret.has_value());
}

TEST(FlexVolumeRuleSecretsTest, OptionsOverrideDefaultsAndNeverBecomeAttributes) {
  auto got = MapFlexVolumeCallToCsi(LoadRules(), "ceph.rook.io/rook",
                                    {{"fsName", "myfs"},
                                     {"clusterNamespace", "rook-ceph"},
                                     {"path", "/team"},
                                     {"mountUser", "team-user"},
                                     {"mountSecret", "ceph-user"},
                                     {"kubernetes.io/pvOrVolumeName", "pv-b"}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->volume_attributes.at("rootPath"), "/team");
  EXPECT_EQ(got->volume_attributes.count("mountUser"), 0u);
  EXPECT_EQ(got->volume_attributes.count("mountSecret"), 0u);
  EXPECT_EQ(got->secret_values, (Map{{"userID", "team-user"}}));
}

TEST(FlexVolumeRuleSecretsTest, NoSecretNamedReadsNone) {
  auto got = MapFlexVolumeCallToCsi(
      LoadRules(), "ceph.rook.io/rook",
      {{"fsName", "f"}, {"clusterNamespace", "c"}, {"kubernetes.io/pvOrVolumeName", "pv"}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_FALSE(got->read_secret.has_value());
  EXPECT_EQ(got->secret_values, (Map{{"userID", "admin"}}));
}

TEST(FlexVolumeRuleSecretsTest, ControllerPVNamesItsOpaqueSecretInOptionsNotSecretRef) {
  FlexVolumeRules rules = LoadRules();
  CsiVolume made;
  made.driver = "cephfs.csi.ceph.com";
  made.volume_handle = "0001-x";
  made.volume_attributes = {{"subvolumeName", "csi-vol-1"}};
  made.secret = SecretReference{"cephfs-node", "ceph-csi"};
  auto flex = MapCsiToFlexVolume(*rules.FindByFlexDriver("flexcsi/cephfs"), made);
  ASSERT_TRUE(flex.ok()) << flex.status().message();
  EXPECT_FALSE(flex->secret_ref.has_value());
  EXPECT_EQ(flex->options, (Map{{"volumeHandle", "0001-x"},
                                {"subvolumeName", "csi-vol-1"},
                                {"nodeStageSecretName", "cephfs-node"},
                                {"nodeStageSecretNamespace", "ceph-csi"}}));
  // And back, as the bridge sees it: the same Secret, to be read by the bridge.
  auto back = MapFlexVolumeToCsi(rules, *flex, "app");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->volume_attributes, made.volume_attributes);
  ASSERT_TRUE(back->read_secret.has_value());
  EXPECT_EQ(back->read_secret->name, "cephfs-node");
  EXPECT_EQ(back->read_secret->namespace_name, "ceph-csi");
}

TEST(FlexVolumeRuleSecretsTest, PVWithANamedSecretBecomesACsiSecretRef) {
  Translator t(LoadRules());
  ExpectResult(
      t.TranslateInTreePVToCSI(J(R"({"metadata":{"name":"pv"},"spec":{
        "claimRef":{"namespace":"app","name":"c"},
        "flexVolume":{"driver":"flexcsi/cephfs","options":{"volumeHandle":"0001-x",
          "nodeStageSecretName":"cephfs-node","nodeStageSecretNamespace":"ceph-csi"}}}})")),
      {R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app","name":"c"},
        "csi":{"driver":"cephfs.csi.ceph.com","volumeHandle":"0001-x",
        "nodeStageSecretRef":{"name":"cephfs-node","namespace":"ceph-csi"}}}})",
       ""});
}

TEST(FlexVolumeRuleSecretsTest, PVWhoseSecretIsDerivedIsRefusedClearly) {
  Translator t(LoadRules());
  auto got = t.TranslateInTreePVToCSI(J(R"({"metadata":{"name":"pv"},"spec":{
      "claimRef":{"namespace":"app","name":"c"},
      "flexVolume":{"driver":"ceph.rook.io/rook","fsType":"ceph","options":{"fsName":"myfs",
        "clusterNamespace":"rook-ceph","mountSecret":"ceph-user"}}}})"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("a CSI PV can only name a Secret"), std::string::npos)
      << got.status().message();
}

TEST(FlexVolumeRuleSecretsTest, RejectsBadSecretsAtLoadTime) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"secretNamespace":{"value":"n"}})",
       "flexVolumeRules[0].secrets: secretNamespace and singleKeyAs need secretName"},
      {R"({"secretName":{"fromOption":"a","value":"b"}})",
       "flexVolumeRules[0].secrets.secretName needs exactly one of fromOption and value, not "
       "empty"},
      {R"({})",
       "flexVolumeRules[0].secrets gives no secret: set secretName, fromOptions or defaults"},
      {R"({"secretName":{"value":"s"},"keys":{}})",
       "flexVolumeRules[0].secrets: unknown field \"keys\""},
  };
  for (const auto& [secrets, error] : cases) {
    auto rules = ParseFlexVolumeRulesText(
        std::string(R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c",)"
                    R"("volumeHandle":{"fromOption":"id"},"secrets":)") +
        secrets + "}]}");
    ASSERT_FALSE(rules.ok()) << secrets;
    EXPECT_EQ(rules.status().message(), error);
  }
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
