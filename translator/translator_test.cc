#include "translator/translator.h"

#include "tests/support/test_json.h"

namespace flexcsi {
namespace translator {
namespace {

struct NameCase {
  const char* in_tree;
  const char* csi;
  const char* pv_field;
};

class PluginNamesTest : public testing::TestWithParam<NameCase> {};
TEST_P(PluginNamesTest, MappingsAndDetection) {
  Translator t;
  const NameCase& c = GetParam();
  EXPECT_TRUE(t.IsMigratableIntreePluginByName(c.in_tree));
  EXPECT_TRUE(t.IsMigratedCSIDriverByName(c.csi));
  EXPECT_FALSE(t.IsMigratedCSIDriverByName(c.in_tree));
  EXPECT_EQ(*t.GetCSINameFromInTreeName(c.in_tree), c.csi);
  EXPECT_EQ(*t.GetInTreeNameFromCSIName(c.csi), c.in_tree);
  nlohmann::json pv = {{"spec", {{c.pv_field, nlohmann::json::object()}}}};
  nlohmann::json volume = {{"name", "v"}, {c.pv_field, nlohmann::json::object()}};
  EXPECT_TRUE(t.IsPVMigratable(pv));
  EXPECT_TRUE(t.IsInlineMigratable(volume));
  EXPECT_EQ(*t.GetInTreePluginNameFromSpec(&pv, nullptr), c.in_tree);
  EXPECT_EQ(*t.GetInTreePluginNameFromSpec(nullptr, &volume), c.in_tree);
  // Repair is the identity for everything but GCE PD.
  if (std::string(c.csi) != "pd.csi.storage.gke.io") {
    EXPECT_EQ(*t.RepairVolumeHandle(c.csi, "h/x", "n"), "h/x");
  }
}
INSTANTIATE_TEST_SUITE_P(
    AllPlugins, PluginNamesTest,
    testing::Values(NameCase{"kubernetes.io/aws-ebs", "ebs.csi.aws.com", "awsElasticBlockStore"},
                    NameCase{"kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "gcePersistentDisk"},
                    NameCase{"kubernetes.io/azure-disk", "disk.csi.azure.com", "azureDisk"},
                    NameCase{"kubernetes.io/azure-file", "file.csi.azure.com", "azureFile"},
                    NameCase{"kubernetes.io/cinder", "cinder.csi.openstack.org", "cinder"},
                    NameCase{"kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com",
                             "vsphereVolume"},
                    NameCase{"kubernetes.io/portworx-volume", "pxd.portworx.com", "portworxVolume"},
                    NameCase{"kubernetes.io/rbd", "rbd.csi.ceph.com", "rbd"}));

TEST(TranslatorTest, NameErrors) {
  Translator t;
  EXPECT_EQ(t.GetCSINameFromInTreeName("kubernetes.io/nfs").status().message(),
            "could not find CSI Driver name for plugin kubernetes.io/nfs");
  EXPECT_EQ(t.GetInTreeNameFromCSIName("nfs.csi.k8s.io").status().message(),
            "could not find In-Tree driver name for CSI plugin nfs.csi.k8s.io");
  EXPECT_EQ(t.RepairVolumeHandle("nfs.csi.k8s.io", "h", "n").status().message(),
            "could not find In-Tree driver name for CSI plugin nfs.csi.k8s.io");
  EXPECT_EQ(t.GetInTreePluginNameFromSpec(nullptr, nullptr).status().message(),
            "both persistent volume and volume are nil");
  nlohmann::json hostpath = J(R"({"metadata":{"name":"h"},"spec":{"hostPath":{"path":"/"}}})");
  EXPECT_FALSE(t.IsPVMigratable(hostpath));
  EXPECT_FALSE(t.GetInTreePluginNameFromSpec(&hostpath, nullptr).ok());
  // A null source field is Go's nil: not claimed.
  EXPECT_FALSE(t.IsPVMigratable(J(R"({"spec":{"gcePersistentDisk":null}})")));
}

TEST(TranslatorTest, NilInputs) {
  Translator t;
  EXPECT_EQ(t.TranslateInTreePVToCSI(nullptr).status().message(), "persistent volume was nil");
  EXPECT_EQ(t.TranslateInTreeInlineVolumeToCSI(nullptr, "").status().message(),
            "persistent volume was nil");
  EXPECT_EQ(t.TranslateCSIPVToInTree(nullptr).status().message(), "CSI persistent volume was nil");
}

TEST(TranslatorTest, FlexVolumeNamesWithRules) {
  auto rules = ParseFlexVolumeRulesText(
      R"({"flexVolumeRules":[{"flexDriver":"acme/lvm","csiDriver":"lvm.csi.acme.io","volumeHandle":{"fromOption":"id"}}]})");
  ASSERT_TRUE(rules.ok());
  Translator t(*rules);
  nlohmann::json pv = J(R"({"spec":{"flexVolume":{"driver":"acme/lvm"}}})");
  EXPECT_TRUE(t.IsPVMigratable(pv));
  EXPECT_EQ(*t.GetInTreePluginNameFromSpec(&pv, nullptr), "flexvolume-acme~lvm");
  EXPECT_EQ(*t.GetCSINameFromInTreeName("flexvolume-acme~lvm"), "lvm.csi.acme.io");
  EXPECT_EQ(*t.GetInTreeNameFromCSIName("lvm.csi.acme.io"), "flexvolume-acme~lvm");
  EXPECT_TRUE(t.IsMigratedCSIDriverByName("lvm.csi.acme.io"));
  EXPECT_FALSE(t.IsPVMigratable(J(R"({"spec":{"flexVolume":{"driver":"other/x"}}})")));
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
