#include "bridge/bridge_config.h"

#include <gtest/gtest.h>

#include "bridge/kubelet_paths.h"
#include "common/yaml_json.h"

namespace flexcsi {
namespace {

constexpr char kValid[] = R"(
kubeletRoot: /var/lib/kubelet/
socket: /run/flexcsi/bridge.sock
stateDatabase: /var/lib/flexcsi/state.db
drivers:
  - flexDriver: acme/disk
    csiEndpoint: unix:///csi/csi.sock
    attach: false
    accessMode: ReadWriteMany
    mountFlags: [noatime]
    podInfoOnMount: true
    nodeIdMap: {node-1: i-0abc}
    rule:
      csiDriver: disk.csi.acme.io
      volumeHandle: {fromOption: volumeID}
      defaultFsType: xfs
)";

StatusOr<BridgeConfig> Load(const std::string& yaml) {
  auto doc = ParseYamlDocument(yaml);
  if (!doc.ok()) return doc.status();
  return BridgeConfig::FromJson(*doc);
}

// Found with bridge_config_fuzz's check that numbers are kept exactly: 4294967298 was read as 2
// and 2147483648 as a negative interval, which silently turned the reconciler off.
TEST(BridgeConfigTest, IntegerBeyondIntIsRefusedNotWrapped) {
  for (const char* value : {"4294967298", "2147483648", "18446744073709551615", "-1"}) {
    auto c = Load(std::string("reconcileIntervalSeconds: ") + value + "\n" + (kValid + 1));
    ASSERT_FALSE(c.ok()) << value;
    EXPECT_NE(std::string::npos, c.status().message().find("reconcileIntervalSeconds must be a "
                                                           "non-negative integer of at most "
                                                           "2147483647"))
        << c.status().ToString();
  }
  auto c = Load(std::string("unavailableRetrySeconds: 2147483647\n") + (kValid + 1));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(2147483647, c->unavailable_retry_seconds);
}

TEST(BridgeConfigTest, LoadsEveryFieldOfADriver) {
  auto c = Load(kValid);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kubelet_root, "/var/lib/kubelet");
  ASSERT_EQ(c->drivers.size(), 1u);
  const DriverConfig* d = c->FindDriver("acme/disk");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->attach);
  EXPECT_EQ(d->access_mode, "ReadWriteMany");
  EXPECT_EQ(d->mount_flags, std::vector<std::string>{"noatime"});
  EXPECT_TRUE(d->pod_info_on_mount);
  EXPECT_EQ(d->CsiDriver(), "disk.csi.acme.io");
  EXPECT_EQ(d->NodeIdFor("node-1"), "i-0abc");
  EXPECT_EQ(d->NodeIdFor("node-2"), "node-2");
  EXPECT_EQ(c->FindDriver("other/x"), nullptr);
}

TEST(BridgeConfigTest, RefusesMistakesWithAMessageNamingTheField) {
  struct Case {
    std::string from;
    std::string to;
    std::string message_part;
  };
  for (const Case& c : std::vector<Case>{
           {"flexDriver: acme/disk", "flexDriver: disk", "flexDriver"},
           {"unix:///csi/csi.sock", "/csi/csi.sock", "csiEndpoint"},
           {"accessMode: ReadWriteMany", "accessMode: RWX", "accessMode"},
           {"attach: false", "attach: maybe", "attach"},
           {"volumeHandle: {fromOption: volumeID}", "volumeHandle: {}", "rule"},
           {"kubeletRoot: /var/lib/kubelet/", "kubeletRoot: relative", "kubeletRoot"},
       }) {
    std::string yaml = kValid;
    yaml.replace(yaml.find(c.from), c.from.size(), c.to);
    auto config = Load(yaml);
    ASSERT_FALSE(config.ok()) << c.to;
    EXPECT_EQ(config.status().code(), Code::kInvalidArgument) << c.to;
    EXPECT_NE(config.status().message().find(c.message_part), std::string::npos)
        << config.status().message();
  }
}

TEST(BridgeConfigTest, KubeletRootNoneIsTheControlPlaneBridgesAndRefusesKubeletsPaths) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("/var/lib/kubelet/"), std::string("/var/lib/kubelet/").size(), "none");
  auto c = Load(yaml);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kubelet_root, "");
  auto path = CheckUnderKubeletRoot("/var/lib/kubelet/pods/u/volumes/a~b/v", c->kubelet_root);
  EXPECT_EQ(path.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(path.status().message().find("kubeletRoot: none"), std::string::npos);
}

TEST(BridgeConfigTest, RefusesNoDriversAndDuplicateDrivers) {
  EXPECT_FALSE(Load("kubeletRoot: /var/lib/kubelet\n").ok());
  std::string twice = kValid;
  const auto start = twice.find("  - flexDriver");
  twice += twice.substr(start);
  auto config = Load(twice);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("twice"), std::string::npos);
}

TEST(BridgeConfigTest, ControllerEndpointDefaultOrNone) {
  auto c = Load(kValid);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->drivers[0].controller_endpoint, "unix:///csi/csi.sock");
  std::string yaml = kValid;
  const std::string endpoint = "    csiEndpoint: unix:///csi/csi.sock\n";
  yaml.replace(yaml.find(endpoint), endpoint.size(), endpoint + "    controllerEndpoint: none\n");
  c = Load(yaml);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->drivers[0].controller_endpoint, "none");
  yaml.replace(yaml.find("none"), 4, "tcp://10.0.0.1:9000");
  c = Load(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("controllerEndpoint"), std::string::npos);
}

TEST(BridgeConfigTest, ReportsAMissingFileByName) {
  auto c = BridgeConfig::LoadFile("/nonexistent/bridge.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/bridge.yaml"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi
