#include "translator/topology.h"

#include "tests/support/test_json.h"

namespace flexcsi {
namespace translator {
namespace {

struct FamilyCase {
  const char* name;
  const char* pv;
  const char* zone_key;
};

class LabelFamilyTest : public testing::TestWithParam<FamilyCase> {};
TEST_P(LabelFamilyTest, Section31Order) {
  EXPECT_STREQ(DetermineLabelFamily(J(GetParam().pv)).zone_key, GetParam().zone_key);
}
INSTANTIATE_TEST_SUITE_P(
    Table, LabelFamilyTest,
    testing::Values(
        FamilyCase{"Default", R"({})", kLabelZoneGA},
        FamilyCase{"BetaLabel",
                   R"({"metadata":{"labels":{"failure-domain.beta.kubernetes.io/zone":"z"}}})",
                   kLabelZoneBeta},
        FamilyCase{
            "GALabelBeatsBetaLabel",
            R"({"metadata":{"labels":{"failure-domain.beta.kubernetes.io/zone":"z","topology.kubernetes.io/zone":"z"}}})",
            kLabelZoneGA},
        FamilyCase{
            "BetaAffinityBeatsGALabel",
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"z"}},"spec":{"nodeAffinity":{"required":{
                       "nodeSelectorTerms":[{"matchExpressions":[{"key":"failure-domain.beta.kubernetes.io/zone","values":["z"]}]}]}}}})",
            kLabelZoneBeta},
        FamilyCase{"GAAffinityBeatsBetaAffinity",
                   R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
                       {"matchExpressions":[{"key":"failure-domain.beta.kubernetes.io/zone","values":["z"]}]},
                       {"matchExpressions":[{"key":"topology.kubernetes.io/zone","values":["z"]}]}]}}}})",
                   kLabelZoneGA}),
    [](const testing::TestParamInfo<FamilyCase>& info) { return info.param.name; });

TEST(TopologyTest, TopologyKeyExist) {
  nlohmann::json affinity =
      J(R"({"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","values":[]}]}]}})");
  EXPECT_TRUE(TopologyKeyExist("k", &affinity));
  EXPECT_FALSE(TopologyKeyExist("other", &affinity));
  EXPECT_FALSE(TopologyKeyExist("k", nullptr));
}

TEST(TopologyTest, EmptyLabelAddsNothing) {
  nlohmann::json pv =
      J(R"({"metadata":{"labels":{"topology.kubernetes.io/zone":" __ "}},"spec":{}})");
  nlohmann::json before = pv;
  TranslateTopologyInTreeToCsi(pv, "csi/zone");
  EXPECT_JSON_EQ(pv, before);
}

TEST(TopologyTest, GcePParser) {
  EXPECT_EQ(*GceRegionFromZones({"us-central1-c"}), "us-central1");
  EXPECT_EQ(GceRegionFromZones({}).status().message(), "no zones specified");
  EXPECT_EQ(GceRegionFromZones({"a-b-c-d"}).status().message(),
            "zone in unexpected format, expected: {locale}-{region}-{zone}, got: a-b-c-d");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi

namespace flexcsi {
namespace translator {
namespace {

struct CsiToInTreeCase {
  const char* name;
  const char* pv;
  bool with_region_parser;
  const char* want;
};

class TopologyCsiToInTreeTest : public testing::TestWithParam<CsiToInTreeCase> {};
TEST_P(TopologyCsiToInTreeTest, Section33) {
  nlohmann::json pv = J(GetParam().pv);
  Status s = TranslateTopologyCsiToInTree(
      pv, "topology.gke.io/zone", GetParam().with_region_parser ? GceRegionFromZones : nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_JSON_EQ(pv, J(GetParam().want));
}
INSTANTIATE_TEST_SUITE_P(
    Table, TopologyCsiToInTreeTest,
    testing::Values(
        CsiToInTreeCase{
            "ExistingLabelsAreNeverOverwritten",
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"old","topology.kubernetes.io/region":"old"}},
                            "spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                              {"key":"topology.gke.io/zone","operator":"In","values":["us-east1-a"]}]}]}}}})",
            true,
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"old","topology.kubernetes.io/region":"old"}},
                            "spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                              {"key":"topology.kubernetes.io/zone","operator":"In","values":["us-east1-a"]},
                              {"key":"topology.kubernetes.io/region","operator":"In","values":["us-east1"]}]}]}}}})"},
        CsiToInTreeCase{
            "EveryTermGetsItsRegion",
            R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
                              {"matchExpressions":[{"key":"topology.gke.io/zone","operator":"In","values":["us-east1-c"]}]},
                              {"matchExpressions":[{"key":"topology.gke.io/zone","operator":"In","values":["us-east1-a"]}]}]}}}})",
            true,
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"us-east1-a__us-east1-c",
                                                  "topology.kubernetes.io/region":"us-east1"}},
                            "spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
                              {"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["us-east1-c"]},
                                                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-east1"]}]},
                              {"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["us-east1-a"]},
                                                   {"key":"topology.kubernetes.io/region","operator":"In","values":["us-east1"]}]}]}}}})"},
        CsiToInTreeCase{"EmptyTermListIsLeftAlone",
                        R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[]}}}})", true,
                        R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[]}}}})"},
        CsiToInTreeCase{
            "WithoutParserOnlyZoneLabel",
            R"({"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                              {"key":"topology.gke.io/zone","operator":"In","values":["z"]}]}]}}}})",
            false,
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":"z"}},
                            "spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
                              {"key":"topology.kubernetes.io/zone","operator":"In","values":["z"]}]}]}}}})"}),
    [](const testing::TestParamInfo<CsiToInTreeCase>& info) { return info.param.name; });

}  // namespace
}  // namespace translator
}  // namespace flexcsi
