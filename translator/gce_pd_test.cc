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

class GcePdPVToCsiTest : public testing::TestWithParam<Case> {};

TEST_P(GcePdPVToCsiTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreePVToCSI(J(GetParam().input)), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GcePdPVToCsiTest,
    testing::Values(
        Case{"ZonalLabelAddsAffinityAndCollapsesAccessModes",
             R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a"}},
                 "spec":{"accessModes":["ReadWriteMany","ReadOnlyMany"],
                         "gcePersistentDisk":{"pdName":"d","fsType":"ext4","readOnly":true}}})",
             {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a"}},
                  "spec":{"accessModes":["ReadWriteOnce"],
                          "csi":{"driver":"pd.csi.storage.gke.io","fsType":"ext4","readOnly":true,
                                 "volumeHandle":"projects/UNSPECIFIED/zones/us-central1-a/disks/d",
                                 "volumeAttributes":{"partition":""}},
                          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                            {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-a"]}]}]}}}})",
              ""}},
        Case{
            "RegionalBetaLabelGivesRegionalHandle",
            R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"us-central1-c__us-central1-a"}},
                 "spec":{"gcePersistentDisk":{"pdName":"d","partition":3}}})",
            {R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"us-central1-c__us-central1-a"}},
                  "spec":{"csi":{"driver":"pd.csi.storage.gke.io",
                                 "volumeHandle":"projects/UNSPECIFIED/regions/us-central1/disks/d",
                                 "volumeAttributes":{"partition":"3"}},
                          "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                            {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-a","us-central1-c"]}]}]}}}})",
             ""}},
        Case{
            "NoLabelsUnspecifiedHandleAccessModesAbsentStayAbsent",
            R"({"metadata":{"name":"pv"},"spec":{"gcePersistentDisk":{"pdName":"d","partition":0},"x-unknown":1}})",
            {R"({"metadata":{"name":"pv"},"spec":{"x-unknown":1,
                  "csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                         "volumeAttributes":{"partition":""}}}})",
             ""}},
        Case{
            "ReadOnlyManyStaysReadWriteOncePodBecomesReadWriteOnce",
            R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadOnlyMany","ReadWriteOncePod"],"gcePersistentDisk":{"pdName":"d"}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadOnlyMany"],
                  "csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                         "volumeAttributes":{"partition":""}}}})",
             ""}},
        Case{
            "ReadWriteOncePodAloneBecomesReadWriteOnce",
            R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadWriteOncePod"],"gcePersistentDisk":{"pdName":"d"}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"accessModes":["ReadWriteOnce"],
                  "csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                         "volumeAttributes":{"partition":""}}}})",
             ""}},
        Case{"BetaAffinityRenamesZoneToCsiAndRegionToGA",
             R"({"metadata":{"name":"pv"},"spec":{"gcePersistentDisk":{"pdName":"d"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"failure-domain.beta.kubernetes.io/zone","operator":"In","values":["us-central1-b","us-central1-a"]},
                   {"key":"failure-domain.beta.kubernetes.io/region","operator":"In","values":["us-central1"]}]}]}}}})",
             {R"({"metadata":{"name":"pv"},"spec":{
                  "csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                         "volumeAttributes":{"partition":""}},
                  "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-b","us-central1-a"]},
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-central1"]}]}]}}}})",
              ""}},
        Case{
            "TrailingDelimiterInLabelFailsRegionParsing",
            R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":" b-c-d __a-b-c__a-b-c__"}},
                 "spec":{"gcePersistentDisk":{"pdName":"d"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[
                   {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}]},
                   {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n2"]}]}]}}}})",
            {"",
             "failed to get region from zones: zone in unexpected format, expected: "
             "{locale}-{region}-{zone}, got: "}},
        Case{
            "MultipleRegionsInLabelFail",
            R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a__us-east1-b"}},
                 "spec":{"gcePersistentDisk":{"pdName":"d"}}})",
            {"",
             "failed to get region from zones: multiple or no regions gotten from zones, got: "
             "map[us-central1:{} us-east1:{}]"}},
        Case{"NoPluginClaimsThePV",
             R"({"metadata":{"name":"pv"},"spec":{"hostPath":{"path":"/x"}}})",
             {"", "could not find in-tree plugin translation logic for \"pv\""}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(GcePdTest, LabelZonesAreTrimmedDeduplicatedAndAddedToEveryTerm) {
  Translator t;
  // A beta label takes the zonal handle path; topology uses the GA label: the upstream quirk.
  auto got = t.TranslateInTreePVToCSI(J(R"({"metadata":{"name":"pv","labels":{
      "failure-domain.beta.kubernetes.io/zone":"us-central1-a",
      "topology.kubernetes.io/zone":" us-central1-b__us-central1-a__us-central1-b__"}},
      "spec":{"gcePersistentDisk":{"pdName":"d"},
      "nodeAffinity":{"required":{"nodeSelectorTerms":[
        {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}]},
        {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n2"]}]}]}}}})"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)["spec"]["csi"]["volumeHandle"],
            "projects/UNSPECIFIED/zones/us-central1-a/disks/d");
  EXPECT_JSON_EQ((*got)["spec"]["nodeAffinity"], J(R"({"required":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]},
                           {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-a","us-central1-b"]}]},
      {"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n2"]},
                           {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-a","us-central1-b"]}]}]}})"));
}

TEST(GcePdTest, InputIsNotModified) {
  Translator t;
  nlohmann::json in =
      J(R"({"metadata":{"name":"pv"},"spec":{"gcePersistentDisk":{"pdName":"d"}}})");
  nlohmann::json copy = in;
  ASSERT_TRUE(t.TranslateInTreePVToCSI(in).ok());
  EXPECT_EQ(in, copy);
}

class GcePdInlineTest : public testing::TestWithParam<Case> {};

TEST_P(GcePdInlineTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreeInlineVolumeToCSI(J(GetParam().input), "ns"), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GcePdInlineTest,
    testing::Values(
        Case{
            "ReadOnly",
            R"({"name":"v","gcePersistentDisk":{"pdName":"d","readOnly":true,"fsType":"xfs","partition":1}})",
            {R"({"metadata":{"name":"pd.csi.storage.gke.io-d"},
                  "spec":{"accessModes":["ReadOnlyMany"],"volumeMode":"Filesystem",
                          "csi":{"driver":"pd.csi.storage.gke.io","readOnly":true,"fsType":"xfs",
                                 "volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                                 "volumeAttributes":{"partition":"1"}}}})",
             ""}},
        Case{"ReadWrite",
             R"({"name":"v","gcePersistentDisk":{"pdName":"d"}})",
             {R"({"metadata":{"name":"pd.csi.storage.gke.io-d"},
                  "spec":{"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",
                          "csi":{"driver":"pd.csi.storage.gke.io",
                                 "volumeHandle":"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
                                 "volumeAttributes":{"partition":""}}}})",
              ""}},
        Case{"NoPlugin",
             R"({"name":"cfg","configMap":{"name":"c"}})",
             {"", "could not find in-tree plugin translation logic for \"cfg\""}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

class GcePdCsiToInTreeTest : public testing::TestWithParam<Case> {};

TEST_P(GcePdCsiToInTreeTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateCSIPVToInTree(J(GetParam().input)), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GcePdCsiToInTreeTest,
    testing::Values(
        Case{
            "ZoneAffinityGetsRegionAndLabels",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pd.csi.storage.gke.io",
                 "volumeHandle":"projects/p/zones/us-central1-c/disks/d","fsType":"ext4","readOnly":true,
                 "volumeAttributes":{"partition":"5"}},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.gke.io/zone","operator":"In","values":["us-central1-c","us-central1-a"]}]}]}}}})",
            {R"({"metadata":{"name":"pv","labels":{"topology.kubernetes.io/zone":"us-central1-a__us-central1-c",
                                                   "topology.kubernetes.io/region":"us-central1"}},
                  "spec":{"gcePersistentDisk":{"pdName":"d","fsType":"ext4","readOnly":true,"partition":5},
                  "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-central1-c","us-central1-a"]},
                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-central1"]}]}]}}}})",
             ""}},
        Case{
            "BetaLabelFamilyAndExistingLabelsKept",
            R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"keep"}},
                 "spec":{"csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/p/regions/r/disks/d/extra",
                 "volumeAttributes":{"partition":""}},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"topology.gke.io/zone","operator":"In","values":["europe-west1-b"]}]}]}}}})",
            {R"({"metadata":{"name":"pv","labels":{"failure-domain.beta.kubernetes.io/zone":"keep",
                                                   "failure-domain.beta.kubernetes.io/region":"europe-west1"}},
                  "spec":{"gcePersistentDisk":{"pdName":"d"},
                  "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"failure-domain.beta.kubernetes.io/zone","operator":"In","values":["europe-west1-b"]},
                   {"key":"failure-domain.beta.kubernetes.io/region","operator":"In","values":["europe-west1"]}]}]}}}})",
             ""}},
        Case{
            "NoAffinityNoLabels",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/p/zones/z/disks/d"}}})",
            {R"({"metadata":{"name":"pv"},"spec":{"gcePersistentDisk":{"pdName":"d"}}})", ""}},
        Case{
            "ShortHandle",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/p/zones/z/disks"}}})",
            {"", "failed to get id components.Got: 5, wanted 6 components or more. "}},
        Case{
            "BadPartition",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/p/zones/z/disks/d",
                 "volumeAttributes":{"partition":"x1"}}}})",
            {"",
             "Failed to convert partition x1 to integer: strconv.Atoi: parsing \"x1\": invalid "
             "syntax"}},
        Case{
            "HostnameOnlyTermCannotGoBack",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pd.csi.storage.gke.io","volumeHandle":"projects/p/zones/z/disks/d"},
                 "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                   {"key":"kubernetes.io/hostname","operator":"In","values":["n"]}]}]}}}})",
            {"",
             "failed to translate topology. PV:pv. Error:Failed to handle region topology. "
             "error: no zones specified"}},
        Case{
            "UnknownDriver",
            R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"other.example.com","volumeHandle":"h"}}})",
            {"", "could not find in-tree plugin translation logic for other.example.com"}},
        Case{"NoCsi",
             R"({"metadata":{"name":"pv"},"spec":{}})",
             {"", "CSI persistent volume was nil"}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

class GcePdStorageClassTest : public testing::TestWithParam<Case> {};

TEST_P(GcePdStorageClassTest, MatchesUpstream) {
  Translator t;
  ExpectResult(t.TranslateInTreeStorageClassToCSI("kubernetes.io/gce-pd", J(GetParam().input)),
               GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GcePdStorageClassTest,
    testing::Values(
        Case{"FsTypeRenamedZonesBecomeTopologyUntrimmed",
             R"({"kind":"StorageClass","provisioner":"kubernetes.io/gce-pd",
                 "parameters":{"FSType":"ext4","type":"pd-ssd","replication-type":"regional-pd","Zones":"a, b"}})",
             {R"({"kind":"StorageClass","provisioner":"kubernetes.io/gce-pd",
                  "parameters":{"csi.storage.k8s.io/fstype":"ext4","type":"pd-ssd","replication-type":"regional-pd"},
                  "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.gke.io/zone","values":["a"," b"]}]}]})",
              ""}},
        Case{
            "ZoneParameter",
            R"({"parameters":{"zone":"us-central1-a"}})",
            {R"({"allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.gke.io/zone","values":["us-central1-a"]}]}]})",
             ""}},
        Case{
            "ZoneAndAllowedTopologiesConflict",
            R"({"parameters":{"zone":"z"},"allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["z"]}]}]})",
            {"", "cannot simultaneously set allowed topologies and zone/zones parameters"}},
        Case{"AllowedTopologiesTranslated",
             R"({"allowedTopologies":[{"matchLabelExpressions":[
                 {"key":"failure-domain.beta.kubernetes.io/zone","values":["b","a"]},
                 {"key":"topology.kubernetes.io/region","values":["r"]},
                 {"key":"topology.kubernetes.io/zone","values":["c"]}]}]})",
             {R"({"allowedTopologies":[{"matchLabelExpressions":[
                 {"key":"topology.gke.io/zone","values":["b","a"]},
                 {"key":"topology.kubernetes.io/region","values":["r"]},
                 {"key":"topology.gke.io/zone","values":["c"]}]}]})",
              ""}}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

struct RepairCase {
  const char* name;
  const char* handle;
  const char* node;
  const char* want;
  const char* error;
};

class GcePdRepairTest : public testing::TestWithParam<RepairCase> {};

TEST_P(GcePdRepairTest, MatchesUpstream) {
  Translator t;
  auto got = t.RepairVolumeHandle("pd.csi.storage.gke.io", GetParam().handle, GetParam().node);
  if (*GetParam().error != '\0') {
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().message(), GetParam().error);
  } else {
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, GetParam().want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, GcePdRepairTest,
    testing::Values(
        RepairCase{"RegionalFromNodeZone", "projects/UNSPECIFIED/regions/UNSPECIFIED/disks/baz",
                   "projects/bing/zones/us-central1-c/instances/boom",
                   "projects/bing/regions/us-central1/disks/baz", ""},
        RepairCase{"ZonalFromNode", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/baz",
                   "projects/bing/zones/bada/instances/boom", "projects/bing/zones/bada/disks/baz",
                   ""},
        RepairCase{"ZoneKept", "projects/UNSPECIFIED/zones/z1/disks/baz",
                   "projects/bing/zones/bada/instances/boom", "projects/bing/zones/z1/disks/baz",
                   ""},
        RepairCase{"SpecifiedProjectUnchanged", "projects/p/zones/UNSPECIFIED/disks/baz", "junk",
                   "projects/p/zones/UNSPECIFIED/disks/baz", ""},
        RepairCase{"ShortHandle", "projects/UNSPECIFIED/zones/z", "n", "",
                   "volume handle has wrong number of elements; got 4, wanted 6 or more"},
        RepairCase{"ShortNode", "projects/UNSPECIFIED/zones/z/disks/d", "projects/p", "",
                   "node handle has wrong number of elements; got 2, wanted 6 or more"},
        RepairCase{
            "BadRegionality", "projects/UNSPECIFIED/planets/z/disks/d",
            "projects/p/zones/z/instances/i", "",
            "expected volume handle to have zones or regions regionality value, got: planets"},
        RepairCase{"BadNodeZoneForRegion", "projects/UNSPECIFIED/regions/UNSPECIFIED/disks/d",
                   "projects/p/zones/bada/instances/i", "",
                   "failed to get region from zone bada: zone in unexpected format, expected: "
                   "{locale}-{region}-{zone}, got: bada"}),
    [](const testing::TestParamInfo<RepairCase>& info) { return info.param.name; });

}  // namespace
}  // namespace translator
}  // namespace flexcsi
