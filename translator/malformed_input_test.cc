// Bad input: wrong JSON types, missing fields, wrong shapes. Every case must give a clear
// InvalidArgument error (or a defined translation), never a crash or an exception.
#include "tests/support/test_json.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace {

struct BadCase {
  const char* name;
  const char* pv;
  const char* error;
};

class MalformedPVTest : public testing::TestWithParam<BadCase> {};
TEST_P(MalformedPVTest, ClearError) {
  Translator t;
  auto got = t.TranslateInTreePVToCSI(J(GetParam().pv));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(got.status().message(), GetParam().error);
}
INSTANTIATE_TEST_SUITE_P(
    Table, MalformedPVTest,
    testing::Values(
        BadCase{"NotAnObject", R"([1,2])", "persistent volume must be a JSON object, got array"},
        BadCase{"PdNameNumber", R"({"spec":{"gcePersistentDisk":{"pdName":5}}})",
                "invalid field spec.gcePersistentDisk.pdName: expected string, got number"},
        BadCase{"SourceNotObject", R"({"spec":{"gcePersistentDisk":"disk"}})",
                "invalid field spec.gcePersistentDisk: expected object, got string"},
        BadCase{"PartitionTooLarge",
                R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":4294967296}}})",
                "invalid field spec.awsElasticBlockStore.partition: expected int32, got number"},
        BadCase{"PartitionFloat",
                R"({"spec":{"awsElasticBlockStore":{"volumeID":"v","partition":1.5}}})",
                "invalid field spec.awsElasticBlockStore.partition: expected int32, got number"},
        BadCase{"LabelsNotMap",
                R"({"metadata":{"labels":[]},"spec":{"gcePersistentDisk":{"pdName":"d"}}})",
                "invalid field metadata.labels: expected object, got array"},
        BadCase{
            "LabelValueNotString",
            R"({"metadata":{"labels":{"topology.kubernetes.io/zone":1}},"spec":{"gcePersistentDisk":{"pdName":"d"}}})",
            "invalid field metadata.labels.topology.kubernetes.io/zone: expected string, got "
            "number"},
        BadCase{
            "TermsNotArray",
            R"({"spec":{"cinder":{"volumeID":"v"},"nodeAffinity":{"required":{"nodeSelectorTerms":{}}}}})",
            "invalid field spec.nodeAffinity.required.nodeSelectorTerms: expected array, got "
            "object"},
        BadCase{
            "RequirementValuesNotStrings",
            R"({"spec":{"cinder":{"volumeID":"v"},"nodeAffinity":{"required":{"nodeSelectorTerms":[
                    {"matchExpressions":[{"key":"k","values":[1]}]}]}}}})",
            "invalid field "
            "spec.nodeAffinity.required.nodeSelectorTerms[].matchExpressions[].values[]: "
            "expected string, got number"},
        BadCase{"AccessModesNotArray",
                R"({"spec":{"accessModes":"RWO","gcePersistentDisk":{"pdName":"d"}}})",
                "invalid field spec.accessModes: expected array, got string"},
        BadCase{"RbdMonitorsNotArray", R"({"spec":{"rbd":{"image":"i","monitors":"m"}}})",
                "invalid field spec.rbd.monitors: expected array, got string"},
        BadCase{"SpecNotObject", R"({"spec":3})",
                "could not find in-tree plugin translation logic for \"\""}),
    [](const testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(MalformedInputTest, CsiSideErrors) {
  Translator t;
  EXPECT_EQ(t.TranslateCSIPVToInTree(J(R"({"spec":{"csi":"x"}})")).status().message(),
            "invalid field spec.csi: expected object, got string");
  EXPECT_EQ(t.TranslateCSIPVToInTree(J(R"({"spec":{"csi":{"driver":1}}})")).status().message(),
            "invalid field spec.csi.driver: expected string, got number");
  EXPECT_EQ(
      t.TranslateCSIPVToInTree(J(R"({"spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"v",
                                        "volumeAttributes":{"partition":2}}}})"))
          .status()
          .message(),
      "invalid field spec.csi.volumeAttributes.partition: expected string, got number");
  EXPECT_EQ(t.TranslateInTreeStorageClassToCSI("kubernetes.io/gce-pd",
                                               J(R"({"parameters":{"zone":["a"]}})"))
                .status()
                .message(),
            "invalid field parameters.zone: expected string, got array");
  EXPECT_EQ(
      t.TranslateInTreeStorageClassToCSI("kubernetes.io/gce-pd", J(R"("sc")")).status().message(),
      "storage class must be a JSON object, got string");
}

TEST(MalformedInputTest, HugeObjectTranslates) {
  Translator t;
  nlohmann::json pv =
      J(R"({"metadata":{"name":"big"},"spec":{"gcePersistentDisk":{"pdName":"d"}}})");
  for (int i = 0; i < 100000; ++i)
    pv["metadata"]["annotations"]["k" + std::to_string(i)] = std::string(10, 'x');
  auto got = t.TranslateInTreePVToCSI(pv);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)["metadata"]["annotations"].size(), 100000u);
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
