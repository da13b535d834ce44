// End-to-end tests of `flexcsi translate`: they run the flexcsi-translate binary with JSON or
// YAML on stdin and check stdout, stderr and the exit status, exactly as an operator sees them.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/test_json.h"

namespace flexcsi {
namespace translator {
namespace {

struct RunResult {
  int status;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/translate_command_test." + std::to_string(getpid()) + "." + name;
}

// Runs the binary with `args` (shell words) and `stdin_text` on stdin.
RunResult RunBinary(const std::string& args, const std::string& stdin_text) {
  std::string in = TempPath("in"), out = TempPath("out"), err = TempPath("err");
  std::ofstream(in, std::ios::binary) << stdin_text;
  std::string command =
      std::string(FLEXCSI_TRANSLATE_BINARY) + " " + args + " <" + in + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  RunResult r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, ReadFile(out), ReadFile(err)};
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

std::string WriteRules() {
  std::string path = TempPath("rules.yaml");
  std::ofstream(path) << "flexVolumeRules:\n"
                         "  - flexDriver: acme/lvm\n"
                         "    csiDriver: lvm.csi.acme.io\n"
                         "    volumeHandle: {fromOption: volumeID}\n";
  return path;
}

TEST(TranslateCommandTest, ToCsiPV) {
  RunResult r = RunBinary("to-csi pv",
                          R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},
      "spec":{"awsElasticBlockStore":{"volumeID":"vol-1"}}})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_JSON_EQ(J(r.out),
                 J(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},
      "spec":{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-1","volumeAttributes":{"partition":"0"}}}})"));
}

TEST(TranslateCommandTest, ToCsiPVErrorWritesNothingToStdout) {
  RunResult r =
      RunBinary("to-csi pv", R"({"metadata":{"name":"pv"},"spec":{"hostPath":{"path":"/"}}})");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: could not find in-tree plugin translation logic for \"pv\"\n");
}

TEST(TranslateCommandTest, ToCsiInline) {
  RunResult r = RunBinary("to-csi inline --pod-namespace team",
                          R"({"name":"v","azureFile":{"secretName":"s","shareName":"sh"}})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(J(r.out),
                 J(R"({"metadata":{"name":"#s#sh#v#team"},"spec":{"accessModes":["ReadWriteMany"],
      "volumeMode":"Filesystem","csi":{"driver":"file.csi.azure.com","volumeHandle":"#s#sh#v#team",
      "volumeAttributes":{"sharename":"sh"},"nodeStageSecretRef":{"name":"s","namespace":"team"}}}})"));
}

TEST(TranslateCommandTest, ToCsiStorageClass) {
  RunResult r = RunBinary("to-csi storageclass --plugin kubernetes.io/gce-pd",
                          R"({"kind":"StorageClass","parameters":{"fstype":"ext4"}})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(J(r.out),
                 J(R"({"kind":"StorageClass","parameters":{"csi.storage.k8s.io/fstype":"ext4"}})"));
  RunResult bad =
      RunBinary("to-csi storageclass --plugin pd.csi.storage.gke.io", R"({"kind":"StorageClass"})");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err,
            "error: could not find in-tree storage class parameter translation logic for "
            "\"pd.csi.storage.gke.io\"\n");
}

TEST(TranslateCommandTest, ToInTreePV) {
  RunResult r = RunBinary(
      "to-intree pv",
      R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"pxd.portworx.com","volumeHandle":"px"}}})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(J(r.out),
                 J(R"({"metadata":{"name":"pv"},"spec":{"portworxVolume":{"volumeID":"px"}}})"));
}

TEST(TranslateCommandTest, RepairHandle) {
  RunResult r = RunBinary(
      "repair-handle --driver pd.csi.storage.gke.io --handle "
      "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/baz "
      "--node-id projects/bing/zones/bada/instances/boom",
      "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(J(r.out), J(R"({"volumeHandle":"projects/bing/zones/bada/disks/baz"})"));
  RunResult bad = RunBinary("repair-handle --driver x --handle h --node-id n", "");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err, "error: could not find In-Tree driver name for CSI plugin x\n");
}

TEST(TranslateCommandTest, RulesFlagForFlexVolume) {
  std::string rules = WriteRules();
  const char* pv =
      R"({"metadata":{"name":"pv"},"spec":{"flexVolume":{"driver":"acme/lvm","options":{"volumeID":"v1"}}}})";
  RunResult r = RunBinary("to-csi pv --rules " + rules, pv);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(
      J(r.out),
      J(R"({"metadata":{"name":"pv"},"spec":{"csi":{"driver":"lvm.csi.acme.io","volumeHandle":"v1"}}})"));
  RunResult back = RunBinary("to-intree pv --rules " + rules, r.out);
  EXPECT_EQ(back.status, 0) << back.err;
  EXPECT_JSON_EQ(J(back.out), J(pv));
  RunResult no_rules = RunBinary("to-csi pv", pv);
  EXPECT_EQ(no_rules.status, 1);
  EXPECT_EQ(no_rules.err,
            "error: could not find in-tree plugin translation logic for \"pv\" (flexVolume needs "
            "--rules)\n");
  RunResult bad_rules = RunBinary("to-csi pv --rules /nonexistent", pv);
  EXPECT_EQ(bad_rules.status, 1);
  EXPECT_EQ(bad_rules.out, "");
  EXPECT_EQ(bad_rules.err, "error: cannot open flexVolume rules file /nonexistent\n");
  std::remove(rules.c_str());
}

TEST(TranslateCommandTest, ListTranslatesWhatItCanAndSummarises) {
  RunResult r = RunBinary("to-csi pv", R"({"apiVersion":"v1","kind":"PersistentVolumeList","items":[
      {"metadata":{"name":"a"},"spec":{"cinder":{"volumeID":"c1"}}},
      {"metadata":{"name":"b"},"spec":{"nfs":{"server":"s","path":"/"}}},
      {"metadata":{"name":"c"},"spec":{"awsElasticBlockStore":{"volumeID":"aws://vol-1"}}},
      {"metadata":{"name":"d"},"spec":{"flexVolume":{"driver":"acme/lvm"}}}]})");
  EXPECT_EQ(r.status, 2);
  EXPECT_JSON_EQ(J(r.out), J(R"({"apiVersion":"v1","kind":"PersistentVolumeList","items":[
      {"metadata":{"name":"a"},"spec":{"csi":{"driver":"cinder.csi.openstack.org","volumeHandle":"c1"}}},
      {"metadata":{"name":"b"},"spec":{"nfs":{"server":"s","path":"/"}}}]})"));
  EXPECT_EQ(
      r.err,
      "error: object \"c\" (item 3): failed to translate Kubernetes ID to EBS Volume ID Invalid "
      "format for "
      "AWS volume (aws://vol-1)\n"
      "error: object \"d\" (item 4): could not find in-tree plugin translation logic for \"d\" "
      "(flexVolume needs --rules)\n"
      "summary: 1 translated, 1 unchanged, 2 failed\n"
      "  flexVolume: 1 failed\n"
      "  kubernetes.io/aws-ebs: 1 failed\n"
      "  kubernetes.io/cinder: 1 translated\n");
}

TEST(TranslateCommandTest, MultiDocumentYamlInYamlOut) {
  RunResult r = RunBinary(
      "to-csi pv",
      "kind: PersistentVolume\nmetadata: {name: a}\nspec:\n  portworxVolume: {volumeID: p1}\n"
      "---\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {x: \"true\"}\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "---\nkind: PersistentVolume\nmetadata:\n  name: a\nspec:\n  csi:\n    driver: "
      "pxd.portworx.com\n"
      "    volumeHandle: p1\n---\ndata:\n  x: \"true\"\nkind: ConfigMap\nmetadata:\n  name: cm\n");
  EXPECT_EQ(r.err,
            "summary: 1 translated, 1 unchanged, 0 failed\n  kubernetes.io/portworx-volume: 1 "
            "translated\n");
}

TEST(TranslateCommandTest, OutputFormatFlag) {
  RunResult r =
      RunBinary("to-csi pv -o yaml",
                R"({"metadata":{"name":"a"},"spec":{"portworxVolume":{"volumeID":"p1"}}})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "metadata:\n  name: a\nspec:\n  csi:\n    driver: pxd.portworx.com\n    volumeHandle: p1\n");
}

struct BadInput {
  const char* name;
  const char* args;
  const char* stdin_text;
  const char* err;
};

class TranslateCommandBadInputTest : public testing::TestWithParam<BadInput> {};
TEST_P(TranslateCommandBadInputTest, ExitOneMessageOnStderrNothingOnStdout) {
  RunResult r = RunBinary(GetParam().args, GetParam().stdin_text);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1), GetParam().err);
}
INSTANTIATE_TEST_SUITE_P(
    Table, TranslateCommandBadInputTest,
    testing::Values(BadInput{"MalformedJson", "to-csi pv", "{\"metadata\":",
                             "error: stdin: invalid JSON: parse error at line 1, column 13: syntax "
                             "error while parsing value - "
                             "unexpected end of input; expected '[', '{', or a literal\n"},
                    BadInput{"MalformedYaml", "to-csi pv", "a: [b\n",
                             "error: stdin: invalid YAML: line 2, column 1: did not find expected "
                             "',' or ']' (while parsing a flow sequence)\n"},
                    BadInput{"Empty", "to-csi pv", "", "error: no object in the input\n"},
                    BadInput{"WrongKind", "to-csi pv", R"({"kind":"Pod","metadata":{"name":"p"}})",
                             "error: expected a PersistentVolume, got kind \"Pod\"\n"},
                    BadInput{"ScalarDocument", "to-intree pv", "42",
                             "error: expected a PersistentVolume object, got number\n"},
                    BadInput{"UnknownCommand", "frobnicate", "",
                             "error: unknown command: frobnicate\n"},
                    BadInput{"MissingFlagValue", "to-csi storageclass --plugin", "",
                             "error: flag --plugin needs a value\n"},
                    BadInput{"BadOutputFormat", "to-csi pv -o xml", "",
                             "error: unknown output format \"xml\" (want yaml or json)\n"},
                    BadInput{"RepairNeedsFlags", "repair-handle --driver d", "",
                             "error: repair-handle needs --driver, --handle and --node-id\n"},
                    BadInput{"MissingFile", "to-csi pv /nonexistent.yaml", "",
                             "error: cannot open /nonexistent.yaml\n"}),
    [](const testing::TestParamInfo<BadInput>& info) { return info.param.name; });

}  // namespace
}  // namespace translator
}  // namespace flexcsi

namespace flexcsi {
namespace translator {
namespace {

TEST(TranslateCommandTest, InlineFromPodUsesPodNamespaceAndSkipsOtherVolumes) {
  RunResult r =
      RunBinary("to-csi inline",
                R"({"kind":"Pod","metadata":{"name":"p","namespace":"team"},"spec":{"volumes":[
      {"name":"cfg","configMap":{"name":"c"}},
      {"name":"data","rbd":{"monitors":["m"],"image":"img","secretRef":{"name":"s"}}}]}})");
  EXPECT_EQ(r.status, 0) << r.err;
  nlohmann::json out = J(r.out);
  ASSERT_EQ(out["kind"], "List");
  ASSERT_EQ(out["items"].size(), 1u);
  EXPECT_JSON_EQ(out["items"][0]["spec"]["csi"]["nodeStageSecretRef"],
                 J(R"({"name":"s","namespace":"team"})"));
}

TEST(TranslateCommandTest, Names) {
  RunResult r = RunBinary("names --plugin kubernetes.io/cinder", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(
      J(r.out),
      J(R"({"inTreePluginName":"kubernetes.io/cinder","csiDriverName":"cinder.csi.openstack.org"})"));
  RunResult all = RunBinary("names", "");
  EXPECT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(J(all.out).size(), 8u);
  RunResult bad = RunBinary("names --driver nope", "");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "error: could not find In-Tree driver name for CSI plugin nope\n");
}

TEST(TranslateCommandTest, StorageClassListUsesProvisionerWithoutPluginFlag) {
  RunResult r = RunBinary("to-csi storageclass", R"({"kind":"List","items":[
      {"kind":"StorageClass","metadata":{"name":"a"},"provisioner":"kubernetes.io/portworx-volume"},
      {"kind":"StorageClass","metadata":{"name":"b"},"provisioner":"example.com/other"}]})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_JSON_EQ(J(r.out), J(R"({"kind":"List","items":[
      {"kind":"StorageClass","metadata":{"name":"a"},"provisioner":"pxd.portworx.com"},
      {"kind":"StorageClass","metadata":{"name":"b"},"provisioner":"example.com/other"}]})"));
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
