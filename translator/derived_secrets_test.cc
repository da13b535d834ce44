// DeriveSecrets, the one computation of a rule's derived secret keys (the bridge's calls and the
// Secret `flexcsi migrate` writes), and the translation that names that Secret.
#include "translator/derived_secrets.h"

#include <gtest/gtest.h>

#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

using Map = std::map<std::string, std::string>;

const char kRookRules[] = R"(
flexVolumeRules:
  - flexDriver: ceph.rook.io/rook
    csiDriver: cephfs.csi.ceph.com
    volumeHandle: {template: "${kubernetes.io/pvOrVolumeName}"}
    attributes: {rename: {clusterNamespace: clusterID}, static: {staticVolume: "true"}}
    secrets:
      secretName: {fromOption: mountSecret}
      singleKeyAs: userKey
      fromOptions: {mountUser: userID}
      defaults: {userID: admin}
    secretRefs: [nodeStage]
)";

CsiVolume RookVolume() {
  CsiVolume volume;
  volume.read_secret = SecretReference{"ceph-user", "app"};
  volume.read_secret_single_key_as = "userKey";
  volume.secret_values = {{"userID", "admin"}};
  return volume;
}

TEST(DeriveSecretsTest, SingleKeyGoesUnderItsNewNameBesideDefaults) {
  const Map data = {{"whatever-rook-called-it", "AQB-key"}};
  auto got = DeriveSecrets(RookVolume(), "app", &data);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Map{{"userID", "admin"}, {"userKey", "AQB-key"}}));
  EXPECT_TRUE(DerivesSecrets(RookVolume()));
}

TEST(DeriveSecretsTest, ASecretOfTwoKeysIsRefusedWithoutShowingThem) {
  const Map data = {{"a", "value-one"}, {"b", "value-two"}};
  auto got = DeriveSecrets(RookVolume(), "app", &data);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(got.status().message(),
            "secret app/ceph-user holds 2 keys; the mapping rule (secrets.singleKeyAs) takes "
            "exactly one");
}

TEST(DeriveSecretsTest, WithoutSingleKeyAsEveryKeyOfTheSecretGoesOverTheDefaults) {
  CsiVolume volume = RookVolume();
  volume.read_secret_single_key_as.clear();
  const Map data = {{"userID", "team"}, {"userKey", "k"}};
  auto got = DeriveSecrets(volume, "app", &data);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, data);
}

TEST(DeriveSecretsTest, NoSecretReadGivesTheOptionsAndDefaults) {
  CsiVolume volume;
  volume.secret_values = {{"userID", "admin"}};
  auto got = DeriveSecrets(volume, "", nullptr);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (Map{{"userID", "admin"}}));
}

TEST(DeriveSecretsTest, MigrateNamesTheSecretItWritesInTheClaimsNamespace) {
  auto rules = ParseFlexVolumeRulesText(kRookRules);
  ASSERT_TRUE(rules.ok());
  const nlohmann::json pv = J(R"({"metadata":{"name":"pv-a"},"spec":{
      "claimRef":{"namespace":"app","name":"c"},
      "flexVolume":{"driver":"ceph.rook.io/rook","options":{"clusterNamespace":"rook-ceph",
        "mountSecret":"ceph-user","mountUser":"team"}}}})");
  Translator migrate(*rules, DerivedSecrets::kNameWrittenSecret);
  auto got = migrate.TranslateInTreePVToCSI(pv);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)["spec"]["csi"], J(R"({"driver":"cephfs.csi.ceph.com","volumeHandle":"pv-a",
                  "volumeAttributes":{"clusterID":"rook-ceph","staticVolume":"true"},
                  "nodeStageSecretRef":{"name":"pv-a-flexcsi-secret","namespace":"app"}})"));
  // What migrate derives the Secret's keys from: the rook Secret in the claim's namespace.
  auto volume = migrate.FlexVolumeOfPV(pv);
  ASSERT_TRUE(volume.ok()) << volume.status().ToString();
  ASSERT_TRUE(volume->read_secret.has_value());
  EXPECT_EQ(volume->read_secret->namespace_name, "app");
  EXPECT_EQ(volume->secret_values, (Map{{"userID", "team"}}));
  // `flexcsi translate` writes nothing, so it still refuses.
  Translator translate(*rules);
  EXPECT_EQ(translate.TranslateInTreePVToCSI(pv).status().code(), Code::kFailedPrecondition);
}

TEST(DeriveSecretsTest, MigrateRefusesAPVThatAlsoHasASecretRef) {
  auto rules = ParseFlexVolumeRulesText(kRookRules);
  ASSERT_TRUE(rules.ok());
  Translator migrate(*rules, DerivedSecrets::kNameWrittenSecret);
  auto got = migrate.TranslateInTreePVToCSI(J(R"({"metadata":{"name":"pv-a"},"spec":{
      "claimRef":{"namespace":"app","name":"c"},
      "flexVolume":{"driver":"ceph.rook.io/rook","secretRef":{"name":"typed"},
        "options":{"mountSecret":"ceph-user"}}}})"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "the volume names a Secret (secretRef typed) and its rule derives secrets: a CSI PV "
            "names one Secret");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
