#include "translator/flexvolume_rules.h"

#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

const char kRules[] = R"(
flexVolumeRules:
  - flexDriver: acme/lvm
    csiDriver: lvm.csi.acme.io
    volumeHandle: {fromOption: volumeID}
    attributes:
      exclude: [debug]
      rename: {vg: volumeGroup}
      static: {migratedFrom: flexVolume}
    secretRefs: [nodeStage, controllerExpand]
    defaultFsType: ext4
  - flexDriver: acme/rbd
    csiDriver: rbd.acme.io
    volumeHandle: {template: "${pool}/${image}-$$x"}
  - flexDriver: acme/keep
    csiDriver: keep.acme.io
    volumeHandle: {fromOption: id}
    keepHandleOptions: true
    secretRefs: []
)";

FlexVolumeRules LoadRules() {
  auto rules = ParseFlexVolumeRulesText(kRules);
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  return *rules;
}

struct Case {
  const char* name;
  const char* input;
  Expected want;
};

class FlexVolumePVTest : public testing::TestWithParam<Case> {};
TEST_P(FlexVolumePVTest, FollowsSection12) {
  Translator t(LoadRules());
  ExpectResult(t.TranslateInTreePVToCSI(J(GetParam().input)), GetParam().want);
}
INSTANTIATE_TEST_SUITE_P(
    Table, FlexVolumePVTest,
    testing::Values(
        Case{
            "FromOptionWithRenameExcludeStaticAndClaimNamespace",
            R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app"},"accessModes":["ReadWriteOnce"],
                 "mountOptions":["noatime"],"flexVolume":{"driver":"acme/lvm","readOnly":true,"secretRef":{"name":"s"},
                 "options":{"volumeID":"v1","vg":"vg0","debug":"1","size":"1Gi","kubernetes.io/fsType":"xfs","migratedFrom":"x"}}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"claimRef":{"namespace":"app"},"accessModes":["ReadWriteOnce"],
                 "mountOptions":["noatime"],"csi":{"driver":"lvm.csi.acme.io","volumeHandle":"v1","fsType":"ext4","readOnly":true,
                 "volumeAttributes":{"volumeGroup":"vg0","size":"1Gi","migratedFrom":"flexVolume"},
                 "nodeStageSecretRef":{"name":"s","namespace":"app"},"controllerExpandSecretRef":{"name":"s","namespace":"app"}}}})",
             ""}},
        Case{
            "TemplateHandleDropsUsedOptions",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/rbd","fsType":"xfs",
                 "secretRef":{"name":"s","namespace":"sec"},"options":{"pool":"p","image":"i","extra":"e"}}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"rbd.acme.io","volumeHandle":"p/i-$x","fsType":"xfs",
                 "volumeAttributes":{"extra":"e"},
                 "nodeStageSecretRef":{"name":"s","namespace":"sec"},"nodePublishSecretRef":{"name":"s","namespace":"sec"}}}})",
             ""}},
        Case{
            "KeepHandleOptionsAndNoSecretRefs",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/keep","secretRef":{"name":"s","namespace":"n"},
                 "options":{"id":"42"}}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"keep.acme.io","volumeHandle":"42",
                 "volumeAttributes":{"id":"42"}}}})",
             ""}},
        Case{
            "MissingTemplateOption",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/rbd","options":{"pool":"p","image":""}}}})",
            {"",
             "flexVolume rule for acme/rbd: volume handle option \"image\" is missing or empty"}},
        Case{"MissingHandleOption",
             R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm"}}})",
             {"",
              "flexVolume rule for acme/lvm: volume handle option \"volumeID\" is missing or "
              "empty"}},
        Case{
            "NoSecretNamespace",
            R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm","secretRef":{"name":"s"},
                 "options":{"volumeID":"v"}}}})",
            {"", "cannot determine secret namespace for flexVolume secretRef s"}},
        Case{"NoRuleForDriver",
             R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"other/x"}}})",
             {"", "no flexVolume rule for driver other/x"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(FlexVolumeTest, WithoutRulesFlexVolumeIsRejectedLikeUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(
                   J(R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm"}}})")),
               {"", "could not find in-tree plugin translation logic for \"pv\""});
}

TEST(FlexVolumeTest, InlineUsesPodNamespace) {
  Translator t(LoadRules());
  const char* volume = R"({"name":"v","flexVolume":{"driver":"acme/lvm","secretRef":{"name":"s"},
      "options":{"volumeID":"v1"}}})";
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(J(volume), "team"),
      {R"({"metadata":{"name":"lvm.csi.acme.io-v1"},"spec":{"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",
                   "csi":{"driver":"lvm.csi.acme.io","volumeHandle":"v1","fsType":"ext4",
                   "volumeAttributes":{"migratedFrom":"flexVolume"},
                   "nodeStageSecretRef":{"name":"s","namespace":"team"},"controllerExpandSecretRef":{"name":"s","namespace":"team"}}}})",
       ""});
  ExpectResult(t.TranslateInTreeInlineVolumeToCSI(J(volume), ""),
               {"", "cannot determine secret namespace for flexVolume secretRef s"});
}

TEST(FlexVolumeTest, CsiBackToFlexVolume) {
  Translator t(LoadRules());
  ExpectResult(
      t.TranslateCSIPVToInTree(J(
          R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"lvm.csi.acme.io","volumeHandle":"v1",
          "fsType":"ext4","readOnly":true,"volumeAttributes":{"volumeGroup":"vg0","size":"1Gi","migratedFrom":"flexVolume"},
          "controllerExpandSecretRef":{"name":"s2","namespace":"n2"},"nodeStageSecretRef":{"name":"s","namespace":"app"}}}})")),
      {R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm","fsType":"ext4","readOnly":true,
          "secretRef":{"name":"s","namespace":"app"},"options":{"vg":"vg0","size":"1Gi","volumeID":"v1"}}}})",
       ""});
  ExpectResult(
      t.TranslateCSIPVToInTree(J(
          R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"rbd.acme.io","volumeHandle":"p/i"}}})")),
      {"", "flexVolume rule for rbd.acme.io uses a template handle and cannot be reversed"});
}

TEST(FlexVolumeTest, BridgeCallUsesTheSameMapping) {
  FlexVolumeRules rules = LoadRules();
  auto got = MapFlexVolumeCallToCsi(rules, "acme/lvm",
                                    {{"volumeID", "v1"},
                                     {"vg", "vg0"},
                                     {"kubernetes.io/fsType", "xfs"},
                                     {"kubernetes.io/readwrite", "ro"},
                                     {"kubernetes.io/pod.namespace", "app"},
                                     {"kubernetes.io/secret/key", "c2VjcmV0"}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->driver, "lvm.csi.acme.io");
  EXPECT_EQ(got->volume_handle, "v1");
  EXPECT_EQ(got->fs_type, "xfs");
  EXPECT_TRUE(got->read_only);
  EXPECT_FALSE(got->secret.has_value());
  EXPECT_EQ(got->volume_attributes, (std::map<std::string, std::string>{
                                        {"volumeGroup", "vg0"}, {"migratedFrom", "flexVolume"}}));
  auto none = MapFlexVolumeCallToCsi(rules, "acme/lvm", {{"volumeID", "v1"}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->fs_type, "ext4");  // defaultFsType
  EXPECT_FALSE(none->read_only);
}

TEST(FlexVolumeTest, JsonAndYamlNodeFormsAreEquivalent) {
  auto from_json =
      ParseFlexVolumeRules(J(R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c",
      "volumeHandle":{"fromOption":"id"},"attributes":{"static":{"n":3}}}]})"));
  ASSERT_TRUE(from_json.ok()) << from_json.status().message();
  auto from_yaml = ParseFlexVolumeRules(YAML::Load(
      "flexVolumeRules:\n- flexDriver: a/b\n  csiDriver: c\n  volumeHandle: {fromOption: id}\n"
      "  attributes: {static: {n: 3}}\n"));
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status().message();
  ASSERT_EQ(from_json->rules().size(), 1u);
  ASSERT_EQ(from_yaml->rules().size(), 1u);
  EXPECT_EQ(from_json->rules()[0].static_attributes, from_yaml->rules()[0].static_attributes);
  EXPECT_EQ(from_yaml->rules()[0].static_attributes.at("n"), "3");
  EXPECT_EQ(
      from_yaml->rules()[0].secret_refs,
      (std::vector<SecretRefField>{SecretRefField::kNodeStage, SecretRefField::kNodePublish}));
}

struct BadRules {
  const char* name;
  const char* text;
  const char* error;
};

class FlexVolumeRulesValidationTest : public testing::TestWithParam<BadRules> {};
TEST_P(FlexVolumeRulesValidationTest, RejectsAtLoadTime) {
  auto rules = ParseFlexVolumeRulesText(GetParam().text);
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().message(), GetParam().error);
}
INSTANTIATE_TEST_SUITE_P(
    Table, FlexVolumeRulesValidationTest,
    testing::Values(
        BadRules{"MissingFlexDriver",
                 R"({"flexVolumeRules":[{"csiDriver":"c","volumeHandle":{"fromOption":"id"}}]})",
                 "flexVolumeRules[0]: flexDriver is required"},
        BadRules{"MissingCsiDriver",
                 R"({"flexVolumeRules":[{"flexDriver":"a/b","volumeHandle":{"fromOption":"id"}}]})",
                 "flexVolumeRules[0]: csiDriver is required"},
        BadRules{
            "Whitespace",
            R"({"flexVolumeRules":[{"flexDriver":"a /b","csiDriver":"c","volumeHandle":{"fromOption":"id"}}]})",
            "flexVolumeRules[0]: flexDriver \"a /b\" contains whitespace"},
        BadRules{"NeitherHandle",
                 R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c","volumeHandle":{}}]})",
                 "flexVolumeRules[0]: volumeHandle needs exactly one of fromOption and template"},
        BadRules{
            "BothHandles",
            R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c","volumeHandle":{"fromOption":"x","template":"${x}"}}]})",
            "flexVolumeRules[0]: volumeHandle needs exactly one of fromOption and template"},
        BadRules{"NoHandle", R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c"}]})",
                 "flexVolumeRules[0]: volumeHandle is required and must be a map"},
        BadRules{
            "TemplateWithoutPlaceholder",
            R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c","volumeHandle":{"template":"$$fixed"}}]})",
            "flexVolumeRules[0]: volumeHandle.template \"$$fixed\" has no ${KEY} placeholder"},
        BadRules{
            "UnknownSecretRef",
            R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c","volumeHandle":{"fromOption":"id"},"secretRefs":["nodeStage","provision"]}]})",
            "flexVolumeRules[0]: unknown secretRefs entry \"provision\" (allowed: "
            "controllerPublish, nodeStage, "
            "nodePublish, controllerExpand, nodeExpand)"},
        BadRules{
            "RenameCollidesWithStatic",
            R"({"flexVolumeRules":[{"flexDriver":"a/b","csiDriver":"c","volumeHandle":{"fromOption":"id"},
                     "attributes":{"rename":{"vg":"k"},"static":{"k":"v"}}}]})",
            "flexVolumeRules[0]: attributes.rename target \"k\" (from \"vg\") collides with a "
            "static attribute"},
        BadRules{"UnknownField",
                 "flexVolumeRules:\n- flexDriver: a/b\n  csiDriver: c\n  volumeHandle: "
                 "{fromOption: id}\n  keepHandleOption: true\n",
                 "flexVolumeRules[0]: unknown field \"keepHandleOption\""},
        BadRules{"NotAList", R"({"flexVolumeRules":{"a":1}})",
                 "flexVolume rules: flexVolumeRules must be a list"},
        BadRules{"NoList", R"({"rules":[]})", "flexVolume rules: no flexVolumeRules list"},
        BadRules{"BadYaml", "flexVolumeRules: [",
                 "flexVolume rules: invalid YAML: line 2, column 1: did not find expected node "
                 "content (while parsing a flow node)"}),
    [](const testing::TestParamInfo<BadRules>& info) { return info.param.name; });

TEST(FlexVolumeRulesTest, DuplicateDriverWarnsAndFirstWins) {
  auto rules = ParseFlexVolumeRulesText(R"({"flexVolumeRules":[
      {"flexDriver":"a/b","csiDriver":"first","volumeHandle":{"fromOption":"id"}},
      {"flexDriver":"a/b","csiDriver":"second","volumeHandle":{"fromOption":"id"}}]})");
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_EQ(rules->FindByFlexDriver("a/b")->csi_driver, "first");
  ASSERT_EQ(rules->warnings().size(), 1u);
  EXPECT_EQ(
      rules->warnings()[0],
      "flexVolumeRules[1]: flexDriver a/b is already matched by flexVolumeRules[0], which wins");
}

TEST(FlexVolumeRulesTest, MissingFileIsNotFound) {
  auto rules = LoadFlexVolumeRulesFile("/nonexistent/rules.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), Code::kNotFound);
  EXPECT_EQ(rules.status().message(), "cannot open flexVolume rules file /nonexistent/rules.yaml");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
