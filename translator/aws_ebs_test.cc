#include "translator/aws_ebs.h"

#include "tests/support/test_json.h"
#include "translator/topology.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

struct Case {
  const char* name;
  const char* input;
  Expected want;
};

struct IdCase {
  const char* input;
  const char* want;
  const char* error;
};

class EbsVolumeIdTest : public testing::TestWithParam<IdCase> {};

TEST_P(EbsVolumeIdTest, MatchesUpstream) {
  auto got = KubernetesVolumeIDToEBSVolumeID(GetParam().input);
  if (*GetParam().error != '\0') {
    ASSERT_FALSE(got.ok()) << *got;
    EXPECT_EQ(got.status().message(), GetParam().error);
  } else {
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, GetParam().want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, EbsVolumeIdTest,
    testing::Values(
        IdCase{"aws://us-west-2a/vol-0123", "vol-0123", ""},
        IdCase{"aws:///vol-0123", "vol-0123", ""}, IdCase{"vol-0123", "vol-0123", ""},
        IdCase{"not-a-vol", "not-a-vol", ""}, IdCase{"aws://z/vol-%41b", "vol-Ab", ""},
        IdCase{"aws://vol-1", "", "Invalid format for AWS volume (aws://vol-1)"},
        IdCase{"aws://us-west-2a/02399794d890f9375", "",
               "Invalid format for AWS volume (aws://us-west-2a/02399794d890f9375)"},
        IdCase{"aws://z/vol-1/extra", "", "Invalid format for AWS volume (aws://z/vol-1/extra)"},
        IdCase{"aws://z/vol-%zz", "",
               "Invalid disk name (aws://z/vol-%zz): parse \"aws://z/vol-%zz\": invalid URL "
               "escape \"%zz\""},
        IdCase{"aws://z/vol-\x01", "",
               "Invalid disk name (aws://z/vol-\x01): parse \"aws://z/vol-\\x01\": "
               "net/url: invalid control character in URL"}));

TEST(AwsRegionParserTest, Forms) {
  EXPECT_EQ(*AwsRegionFromZones({"us-west-2a"}), "us-west-2");
  EXPECT_EQ(*AwsRegionFromZones({"us-gov-east-1a"}), "us-gov-east-1");
  EXPECT_EQ(*AwsRegionFromZones({"us-west-2-lax-1a"}), "us-west-2");
  EXPECT_EQ(*AwsRegionFromZones({"us-east-1-wl1-bos-wlz-1"}), "us-east-1");
  EXPECT_EQ(*AwsRegionFromZones({"us-west-2a", "us-west-2b"}), "us-west-2");
  for (const char* bad : {"us-west-2", "us-west-2ab", "us-west"}) {
    auto got = AwsRegionFromZones({bad});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().message(),
              std::string("Unexpected zone format: ") + bad + " is not a valid AWS zone");
  }
  EXPECT_EQ(AwsRegionFromZones({}).status().message(), "no zones specified");
  EXPECT_EQ(AwsRegionFromZones({"us-west-2a", "us-east-1a"}).status().message(),
            "multiple or no regions gotten from zones, got: map[us-east-1:{} us-west-2:{}]");
}

class AwsEbsTest : public testing::TestWithParam<Case> {};

INSTANTIATE_TEST_SUITE_P(
    PVToCsi, AwsEbsTest,
    testing::Values(
        Case{
            "UrlFormZeroPartitionBetaLabel",
            R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"us-east-1a",
                 "failure-domain.beta.kubernetes.io/region":"us-east-1"}},
                 "spec":{"accessModes":["ReadWriteMany"],"awsElasticBlockStore":{"volumeID":"aws://us-east-1a/vol-1","fsType":"ext4"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"failure-domain.beta.kubernetes.io/region","operator":"In","values":["us-east-1"]}]}]}}}})",
            {R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"us-east-1a",
                 "failure-domain.beta.kubernetes.io/region":"us-east-1"}},
                 "spec":{"accessModes":["ReadWriteMany"],
                 "csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1","fsType":"ext4","volumeAttributes":{"partition":"0"}},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-east-1"]},
                   {"key":"topology.ebs.csi.aws.com/zone","operator":"In","values":["us-east-1a"]}]}]}}}})",
             ""}},
        Case{
            "Partition",
            R"({"metadata":{"name":"pv"},"spec":{"awsElasticBlockStore":{"volumeID":"vol-2","partition":7,"readOnly":true}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-2","readOnly":true,
                 "volumeAttributes":{"partition":"7"}}}})",
             ""}},
        Case{
            "InvalidUrl",
            R"({"metadata":{"name":"pv"},"spec":{"awsElasticBlockStore":{"volumeID":"aws://vol-1"}}})",
            {"",
             "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume "
             "(aws://vol-1)"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST_P(AwsEbsTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(GetParam().input)), GetParam().want);
}

class AwsEbsBackTest : public testing::TestWithParam<Case> {};

TEST_P(AwsEbsBackTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateCSIPVToInTree(J(GetParam().input)), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    CsiToInTree, AwsEbsBackTest,
    testing::Values(
        Case{
            "SpecExample",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1",
                 "volumeAttributes":{"partition":"0"}},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.ebs.csi.aws.com/zone","operator":"In","values":["us-west-2b","us-west-2a"]}]}]}}}})",
            {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-west-2a__us-west-2b",
                 "topology.kubernetes.io/region":"us-west-2"}},
                 "spec":{"awsElasticBlockStore":{"volumeID":"vol-1"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-west-2b","us-west-2a"]},
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-west-2"]}]}]}}}})",
             ""}},
        Case{
            "PartitionAndFlags",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1","fsType":"xfs",
                 "readOnly":true,"volumeAttributes":{"partition":"+3"}}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"awsElasticBlockStore":{"volumeID":"vol-1","fsType":"xfs","readOnly":true,"partition":3}}})",
             ""}},
        Case{
            "EmptyPartitionIsAnError",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1",
                 "volumeAttributes":{"partition":""}}}})",
            {"",
             "failed to convert partition  to integer: strconv.Atoi: parsing \"\": invalid "
             "syntax"}},
        Case{
            "RegionAlreadyPresentInTerm",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["r1"]},
                   {"key":"topology.ebs.csi.aws.com/zone","operator":"In","values":["bogus"]}]}]}}}})",
            {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"bogus","topology.kubernetes.io/region":"r1"}},
                 "spec":{"awsElasticBlockStore":{"volumeID":"vol-1"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["r1"]},
                   {"key":"topology.kubernetes.io/zone","operator":"In","values":["bogus"]}]}]}}}})",
             ""}},
        Case{
            "BadZone",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.ebs.csi.aws.com/zone","operator":"In","values":["us-west"]}]}]}}}})",
            {"",
             "failed to translate topology. PV:pv. Error:Failed to handle region topology. error: "
             "Unexpected zone format: us-west is not a valid AWS zone"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(AwsEbsTest, InlineIsAlwaysReadWriteOnce) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeInlineVolumeToCSI(
          J(R"({"name":"v","awsElasticBlockStore":{"volumeID":"aws:///vol-9","readOnly":true}})"),
          ""),
      {R"({"metadata":{"name":"ebs.csi.aws.com-vol-9"},"spec":{"accessModes":["ReadWriteOnce"],
                   "volumeMode":"Filesystem","csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-9","readOnly":true,
                   "volumeAttributes":{"partition":"0"}}}})",
       ""});
}

TEST(AwsEbsTest, StorageClass) {
  Translator t;
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI(
          "kubernetes.io/aws-ebs",
          J(R"({"provisioner":"kubernetes.io/aws-ebs","parameters":{"fsType":"ext4","IopsPerGB":"10","type":"io1","zones":"a,b"}})")),
      {R"({"provisioner":"kubernetes.io/aws-ebs","parameters":{"csi.storage.k8s.io/fstype":"ext4",
                   "IopsPerGB":"10","allowautoiopspergbincrease":"true","type":"io1"},
                   "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.ebs.csi.aws.com/zone","values":["a","b"]}]}]})",
       ""});
  // The lookup is by in-tree plugin name, never by CSI driver name.
  ExpectResult(
      t.TranslateInTreeStorageClassToCSI("ebs.csi.aws.com", J("{}")),
      {"",
       "could not find in-tree storage class parameter translation logic for \"ebs.csi.aws.com\""});
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
