#include "cli/state_command.h"

#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/fake_bridge_test_util.h"

namespace flexcsi {
namespace {

nlohmann::json StateReply() {
  return {{"status", "Success"},
          {"attachments",
           {{{"flex_driver", "flexcsi/loopback"},
             {"volume_name", "pv1"},
             {"node_name", "node1"},
             {"volume_id", "vol-1"},
             {"node_id", "node1"},
             {"state", "attached"},
             {"updated_at", 1700000000}}}},
          {"stagings",
           {{{"stagingPath",
              "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/flexcsi/loopback/"
              "mounts/pv1"},
             {"flexDriver", "flexcsi/loopback"},
             {"volumeId", "vol-1"},
             {"owner", "kubelet"},
             {"shape", "record-only"},
             {"marker", true},
             {"state", "staged"}}}},
          {"publications",
           {{{"targetPath", "/var/lib/kubelet/pods/u/volumes/flexcsi~loopback/pv1"},
             {"flexDriver", "flexcsi/loopback"},
             {"volumeId", "vol-1"},
             {"podUid", "u"},
             {"readonly", 0},
             {"state", "published"}}}}};
}

TEST(StateCommandTest, PrintsTablesFromTheBridgesReply) {
  const std::string socket = "/tmp/flexcsi-state-test-" + std::to_string(getpid()) + ".sock";
  FakeBridge bridge(socket, StateReply());
  ASSERT_TRUE(bridge.ok());
  std::ostringstream out, err;
  ASSERT_EQ(RunStateCommand({"--socket", socket}, out, err), 0) << err.str();
  EXPECT_EQ(bridge.last_call(), "bridge.state");
  const std::string text = out.str();
  EXPECT_NE(text.find("attachments (1)"), std::string::npos) << text;
  EXPECT_NE(text.find("stagings (1)"), std::string::npos);
  // Each staging's shape says what the reconciler and doctor expect at its path.
  EXPECT_NE(text.find("kubelet  record-only  staged"), std::string::npos) << text;
  EXPECT_NE(text.find("publications (1)"), std::string::npos);
  EXPECT_NE(text.find("2023-11-14T22:13:20Z"), std::string::npos) << text;
  // snake_case and camelCase rows both land in their columns.
  EXPECT_NE(text.find("/var/lib/kubelet/pods/u/volumes/flexcsi~loopback/pv1  flexcsi/loopback"),
            std::string::npos)
      << text;
}

TEST(StateCommandTest, JsonOutputIsTheBridgesReply) {
  const std::string socket = "/tmp/flexcsi-state-json-" + std::to_string(getpid()) + ".sock";
  FakeBridge bridge(socket, StateReply());
  std::ostringstream out, err;
  ASSERT_EQ(RunStateCommand({"--socket", socket, "-o", "json"}, out, err), 0);
  EXPECT_EQ(nlohmann::json::parse(out.str()), StateReply());
}

TEST(StateCommandTest, UnreachableBridgeExitsOneWithTheSocketNamed) {
  std::ostringstream out, err;
  EXPECT_EQ(RunStateCommand({"--socket", "/tmp/flexcsi-nobody-here.sock"}, out, err), 1);
  EXPECT_NE(err.str().find("/tmp/flexcsi-nobody-here.sock"), std::string::npos);
  EXPECT_EQ(RunStateCommand({"-o", "yaml"}, out, err), 2);
}

}  // namespace
}  // namespace flexcsi
