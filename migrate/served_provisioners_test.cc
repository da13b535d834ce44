// Finding flexcsi-controller's configuration in the cluster's objects (served_provisioners.h):
// the manifests deploy/kubernetes/provisioner installs, and the ways a ConfigMap can be mounted.
#include "migrate/served_provisioners.h"

#include <gtest/gtest.h>

#include "tests/support/provisioner_deployment.h"

namespace flexcsi::migrate {
namespace {

using nlohmann::json;

// deploy/kubernetes/provisioner/bridge-provisioner.yaml, with a second driver named by a
// `provisioner:` of its own.
constexpr char kConfig[] = R"(
kubeletRoot: none
socket: /run/flexcsi/provisioner/unused.sock
drivers:
  - flexDriver: flexcsi/loopback
    csiEndpoint: unix:///csi/csi.sock
    provisioner: loopback.csi.flexcsi.io
    rule:
      csiDriver: loopback.csi.flexcsi.io
      volumeHandle: {fromOption: volumeID}
      defaultFsType: ext4
  - flexDriver: acme/lvm
    csiEndpoint: unix:///csi/lvm.sock
    rule:
      csiDriver: lvm.csi.acme.io
      volumeHandle: {fromOption: volumeID}
)";

TEST(ServedProvisionersTest, FindsTheDeployedControllerAndItsConfigMap) {
  ClusterObjects objects;
  objects.deployments.push_back(ProvisionerDeployment(2));
  objects.deployments.push_back(
      {{"metadata", {{"namespace", "shop"}, {"name", "web"}}},
       {"spec",
        {{"template", {{"spec", {{"containers", {{{"name", "c"}, {"command", {"nginx"}}}}}}}}}}}});
  const auto found = FindControllerWorkloads(objects);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, "Deployment");
  EXPECT_EQ(found[0].namespace_, "flexcsi");
  EXPECT_EQ(found[0].name, "flexcsi-provisioner");
  EXPECT_EQ(found[0].replicas, 2);
  EXPECT_EQ(found[0].config_map, "flexcsi-provisioner-config-7h2k9");
  EXPECT_EQ(found[0].config_key, "bridge.yaml");
  EXPECT_EQ(found[0].config_error, "");
}

TEST(ServedProvisionersTest, ResolvesSubPathItemsTheDefaultPathAndSaysWhyNot) {
  json pod = {{"metadata", {{"namespace", "ops"}, {"name", "ctl"}}},
              {"status", {{"phase", "Running"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"command", {"/usr/bin/flexcsi-controller"}},  // the default --bridge-config
                   {"volumeMounts",
                    {{{"name", "cfg"},
                      {"mountPath", "/etc/flexcsi/bridge.yaml"},
                      {"subPath", "controller.yaml"}}}}}}},
                {"volumes", {{{"name", "cfg"}, {"configMap", {{"name", "ctl-config"}}}}}}}}};
  json ds = {{"metadata", {{"namespace", "flexcsi"}, {"name", "per-node"}}},
             {"status", {{"desiredNumberScheduled", 3}}},
             {"spec",
              {{"template",
                {{"spec",
                  {{"containers",
                    {{{"name", "c"},
                      {"command", {"flexcsi-controller"}},
                      {"args", {"--bridge-config", "/config/b.yaml"}},
                      {"volumeMounts", {{{"name", "v"}, {"mountPath", "/config/"}}}}}}},
                   {"volumes",
                    {{{"name", "v"},
                      {"configMap",
                       {{"name", "per-node-config"},
                        {"items", {{{"key", "bridge.yaml"}, {"path", "b.yaml"}}}}}}}}}}}}}}}};
  json sts = {{"metadata", {{"namespace", "flexcsi"}, {"name", "baked"}}},
              {"spec",
               {{"replicas", 0},
                {"template",
                 {{"spec",
                   {{"containers",
                     {{{"name", "c"}, {"args", {"flexcsi-controller", "--in-cluster"}}}}}}}}}}}};
  ClusterObjects objects;
  objects.pods.push_back(pod);
  objects.daemonsets.push_back(ds);
  objects.statefulsets.push_back(sts);
  std::map<std::string, ControllerWorkload> by_name;
  for (auto& w : FindControllerWorkloads(objects)) by_name[w.name] = w;
  ASSERT_EQ(by_name.size(), 3u);
  EXPECT_EQ(by_name["ctl"].config_map, "ctl-config");
  EXPECT_EQ(by_name["ctl"].config_key, "controller.yaml");
  EXPECT_EQ(by_name["ctl"].replicas, 1);
  EXPECT_EQ(by_name["per-node"].config_map, "per-node-config");
  EXPECT_EQ(by_name["per-node"].config_key, "bridge.yaml");
  EXPECT_EQ(by_name["per-node"].replicas, 3);
  EXPECT_EQ(by_name["baked"].config_map, "");
  EXPECT_EQ(by_name["baked"].replicas, 0);
  EXPECT_NE(by_name["baked"].config_error.find("/etc/flexcsi/bridge.yaml is not mounted from a "
                                               "ConfigMap"),
            std::string::npos)
      << by_name["baked"].config_error;
}

TEST(ServedProvisionersTest, DriversGiveProvisionerNamesAndRules) {
  ControllerWorkload w;
  ServedProvisioners served;
  ASSERT_TRUE(AddServedDrivers(kConfig, &w, &served).ok());
  EXPECT_TRUE(served.read_any);
  EXPECT_EQ(served.flex_driver_of,
            (std::map<std::string, std::string>{{"loopback.csi.flexcsi.io", "flexcsi/loopback"},
                                                {"lvm.csi.acme.io", "acme/lvm"}}));
  EXPECT_EQ(w.provisioners,
            (std::vector<std::string>{"loopback.csi.flexcsi.io", "lvm.csi.acme.io"}));
  ASSERT_EQ(served.rules.size(), 2u);
  EXPECT_EQ(served.rules[0]["flexDriver"], "flexcsi/loopback");
  EXPECT_EQ(served.rules[0]["defaultFsType"], "ext4");
  // A second replica's copy of the same configuration adds no second rule.
  ControllerWorkload again;
  ASSERT_TRUE(AddServedDrivers(kConfig, &again, &served).ok());
  EXPECT_EQ(served.rules.size(), 2u);

  ControllerWorkload bad;
  ServedProvisioners none;
  Status s =
      AddServedDrivers("drivers:\n  - flexDriver: a/b\n    rule: {csiDriver: x}\n", &bad, &none);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(none.read_any);
  EXPECT_TRUE(bad.provisioners.empty());
}

}  // namespace
}  // namespace flexcsi::migrate
