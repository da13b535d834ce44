#include "controller/served_drivers.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

DriverConfig Entry(const std::string& flex_driver, const std::string& provisioner) {
  DriverConfig d;
  d.flex_driver = flex_driver;
  d.provisioner = provisioner;
  return d;
}

TEST(CheckOneEntryPerProvisionerTest, TwoEntriesOfOneProvisionerAreRefused) {
  BridgeConfig config;
  config.drivers = {Entry("ceph.rook.io/rook", "cephfs.csi.ceph.com"),
                    Entry("flexcsi/cephfs", "cephfs.csi.ceph.com")};
  Status s = CheckOneEntryPerProvisioner(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("driver entries ceph.rook.io/rook and flexcsi/cephfs both "
                             "provision for cephfs.csi.ceph.com"),
            std::string::npos)
      << s.message();
}

TEST(CheckOneEntryPerProvisionerTest, OneEntryPerProvisionerIsFine) {
  BridgeConfig config;
  config.drivers = {Entry("ceph.rook.io/rook", "rook-legacy.flexcsi.io"),
                    Entry("flexcsi/cephfs", "cephfs.csi.ceph.com")};
  EXPECT_TRUE(CheckOneEntryPerProvisioner(config).ok());
}

}  // namespace
}  // namespace flexcsi::controller
