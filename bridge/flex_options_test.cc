#include "bridge/flex_options.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

// The mount options of flexvolume.md §7.1, exactly as kubelet emits them.
constexpr char kMountOptions[] =
    R"({"kubernetes.io/fsType":"ext4","kubernetes.io/mounterArgs.FsGroup":"2000",)"
    R"("kubernetes.io/pod.name":"web-0","kubernetes.io/pod.namespace":"shop",)"
    R"("kubernetes.io/pod.uid":"6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10",)"
    R"("kubernetes.io/pvOrVolumeName":"pv-data","kubernetes.io/readwrite":"rw",)"
    R"("kubernetes.io/secret/password":"czNjcjN0","kubernetes.io/secret/username":"YWRtaW4=",)"
    R"("kubernetes.io/serviceAccount.name":"default","volumeID":"vol-0123"})";

TEST(FlexOptionsTest, ParsesEveryKeyKubeletSendsOnMount) {
  auto o = FlexOptions::Parse(kMountOptions);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->volume_name, "pv-data");
  EXPECT_EQ(o->fs_type, "ext4");
  EXPECT_FALSE(o->readonly);
  EXPECT_EQ(o->pod_name, "web-0");
  EXPECT_EQ(o->pod_namespace, "shop");
  EXPECT_EQ(o->pod_uid, "6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10");
  EXPECT_EQ(o->service_account, "default");
  ASSERT_TRUE(o->fs_group.has_value());
  EXPECT_EQ(*o->fs_group, 2000);
  EXPECT_EQ(o->secrets, (std::map<std::string, std::string>{{"password", "s3cr3t"},
                                                            {"username", "admin"}}));
  EXPECT_EQ(o->all.at("volumeID"), "vol-0123");
}

TEST(FlexOptionsTest, WithoutSecretsDropsOnlyTheSecretKeys) {
  auto o = FlexOptions::Parse(kMountOptions);
  ASSERT_TRUE(o.ok());
  auto safe = o->WithoutSecrets();
  EXPECT_EQ(safe.size(), o->all.size() - 2);
  for (const auto& [k, v] : safe) EXPECT_EQ(k.find("kubernetes.io/secret/"), std::string::npos);
}

TEST(FlexOptionsTest, ReadsReadOnlyAndTheLegacyFsGroupKey) {
  auto o = FlexOptions::Parse(
      R"({"kubernetes.io/pvOrVolumeName":"v","kubernetes.io/readwrite":"ro","kubernetes.io/fsGroup":"7"})");
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->readonly);
  EXPECT_EQ(*o->fs_group, 7);
}

TEST(FlexOptionsTest, HandlesGoStyleUnicodeEscapes) {
  auto o = FlexOptions::Parse(R"({"kubernetes.io/pvOrVolumeName":"v","q":"a\u003cb\u0026c"})");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->all.at("q"), "a<b&c");
}

TEST(FlexOptionsTest, RejectsBadInputWithClearMessages) {
  struct Case {
    const char* json;
    const char* expected_message_part;
  };
  for (const Case& c : {
           Case{"{not json", "not valid JSON"},
           Case{"[1,2]", "not a JSON object"},
           Case{R"({"kubernetes.io/pvOrVolumeName":"v","n":5})", "\"n\" is not a string"},
           Case{R"({"kubernetes.io/fsType":"ext4"})", "pvOrVolumeName is missing"},
           Case{R"({"kubernetes.io/pvOrVolumeName":"v","kubernetes.io/readwrite":"x"})",
                "readwrite"},
           Case{R"({"kubernetes.io/pvOrVolumeName":"v","kubernetes.io/mounterArgs.FsGroup":"-1"})",
                "fsGroup"},
       }) {
    auto o = FlexOptions::Parse(c.json);
    ASSERT_FALSE(o.ok()) << c.json;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.expected_message_part), std::string::npos)
        << o.status().message();
  }
}

TEST(FlexOptionsTest, BadSecretNamesTheKeyButNeverTheValue) {
  auto o = FlexOptions::Parse(
      R"({"kubernetes.io/pvOrVolumeName":"v","kubernetes.io/secret/token":"hunter2!!"})");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("token"), std::string::npos);
  EXPECT_EQ(o.status().message().find("hunter2"), std::string::npos);
}

TEST(RedactSecretValuesTest, EveryOccurrenceOfEverySecretGoes) {
  const std::map<std::string, std::string> secrets = {{"password", "hunter22"},
                                                      {"token", "abc"},  // too short to matter
                                                      {"key", "k3y-k3y"}};
  EXPECT_EQ("login failed for <redacted>/<redacted>: <redacted> abc",
            RedactSecretValues("login failed for hunter22/k3y-k3y: hunter22 abc", secrets));
  EXPECT_EQ("nothing here", RedactSecretValues("nothing here", secrets));
  // A secret that contains the replacement text does not loop forever.
  EXPECT_EQ("<redacted>", RedactSecretValues("<redacted>", {{"s", "<redacted>"}}));
}

}  // namespace
}  // namespace flexcsi
