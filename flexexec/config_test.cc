#include "flexexec/config.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

using std::chrono::milliseconds;

TEST(FlexexecConfigTest, ParsesDocumentedExample) {
  auto c = ParseFlexexecConfig(R"({"capabilities": {"attach": true, "selinuxRelabel": true,
      "supportsMetrics": true, "fsGroup": true, "requiresFSResize": true},
      "bridgeSocket": "/run/x/bridge.sock",
      "timeoutSeconds": {"default": 100, "isattached": 20, "waitforattach": 500}})",
                               "/p/flexcsi.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(true, c->capabilities["attach"]);
  EXPECT_EQ(5u, c->capabilities.size());
  EXPECT_EQ("/run/x/bridge.sock", c->bridge_socket);
  EXPECT_EQ(milliseconds(100000), c->TimeoutFor("mount"));
  EXPECT_EQ(milliseconds(20000), c->TimeoutFor("isattached"));
  EXPECT_EQ(milliseconds(500000), c->TimeoutFor("waitforattach"));
}

TEST(FlexexecConfigTest, DefaultsForSocketAndTimeouts) {
  auto c = ParseFlexexecConfig(R"({"capabilities": {"attach": false}})", "f");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ("/run/flexcsi/bridge.sock", c->bridge_socket);
  EXPECT_EQ(milliseconds(120000), c->TimeoutFor("mount"));
  EXPECT_EQ(milliseconds(120000), c->TimeoutFor("attach"));
  EXPECT_EQ(milliseconds(30000), c->TimeoutFor("isattached"));
  EXPECT_EQ(milliseconds(540000), c->TimeoutFor("waitforattach"));
}

TEST(FlexexecConfigTest, FractionalAndPerCallTimeouts) {
  auto c = ParseFlexexecConfig(
      R"({"capabilities": {}, "timeoutSeconds": {"default": 1.5, "unmount": 7}})", "f");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(milliseconds(1500), c->TimeoutFor("mount"));
  EXPECT_EQ(milliseconds(7000), c->TimeoutFor("unmount"));
  EXPECT_EQ(milliseconds(30000), c->TimeoutFor("isattached"));
}

void ExpectInvalid(const std::string& text, const std::string& fragment) {
  auto c = ParseFlexexecConfig(text, "/p/v~n/flexcsi.json");
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_NE(std::string::npos, c.status().message().find("/p/v~n/flexcsi.json"))
      << c.status().message();
  EXPECT_NE(std::string::npos, c.status().message().find(fragment)) << c.status().message();
}

TEST(FlexexecConfigTest, InvalidFilesNameFileAndProblem) {
  ExpectInvalid("{", "not valid JSON");
  ExpectInvalid("[]", "not a JSON object");
  ExpectInvalid("{}", "no \"capabilities\"");
  ExpectInvalid(R"({"capabilities": null})", "\"capabilities\" is not an object");
  ExpectInvalid(R"({"capabilities": {"attach": "false"}})", "capability \"attach\"");
  ExpectInvalid(R"({"capabilities": {}, "bridgeSocket": "rel.sock"})", "absolute path");
  ExpectInvalid(R"({"capabilities": {}, "timeoutSeconds": {"default": -1}})",
                "timeoutSeconds.default");
  ExpectInvalid(R"({"capabilities": {}, "timeoutSeconds": {"mount": "60"}})",
                "timeoutSeconds.mount");
  ExpectInvalid(R"({"capabilities": {}, "timeoutSeconds": {"waitforattach": 600}})", "below 600");
}

TEST(FlexexecConfigTest, MissingFileNamesThePath) {
  auto c = LoadFlexexecConfig("/nonexistent/flexcsi~x");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string::npos,
            c.status().message().find("/nonexistent/flexcsi~x/flexcsi.json: No such file"))
      << c.status().message();
}

}  // namespace
}  // namespace flexcsi
