#include "common/flex_call_limits.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/bridge_protocol.h"

namespace flexcsi {
namespace {

std::string Options(const std::map<std::string, std::string>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[k] = v;
  j["kubernetes.io/pvOrVolumeName"] = j.value("kubernetes.io/pvOrVolumeName", "pv-1");
  return j.dump();
}

void ExpectRefused(const Status& s, const std::string& fragment) {
  EXPECT_EQ(Code::kInvalidArgument, s.code()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(fragment)) << s.message();
}

TEST(FlexCallLimitsTest, OrdinaryCallsPass) {
  const std::string o = Options({{"volumeID", "vol-1"}, {"kubernetes.io/fsType", "ext4"}});
  EXPECT_TRUE(CheckFlexCallLimits("mount", {"/var/lib/kubelet/pods/x/volumes/v", o}).ok());
  EXPECT_TRUE(CheckFlexCallLimits("attach", {o, "node-1"}).ok());
  EXPECT_TRUE(CheckFlexCallLimits("expandfs", {o, "dev", "/p", "1073741824", "0"}).ok());
  EXPECT_TRUE(CheckFlexCallLimits("init", {}).ok());
  EXPECT_TRUE(CheckFlexCallLimits("mount", {"/p", "not json"}).ok());  // the parser says why
}

// Found by bridge_request_fuzz: the name of a too long key was cut at 64 bytes, inside a
// character, and the message was no longer UTF-8 (the bridge then could not encode its reply).
TEST(FlexCallLimitsTest, LongNameIsCutBeforeACharacterNotInsideIt) {
  std::string name = "ab";
  for (int i = 0; i < 200; ++i) name += "\xc3\xa9";  // e acute, two bytes
  Status s =
      CheckFlexCallLimits("mount", {"/p", Options({{"kubernetes.io/secret/" + name, "eA=="}})});
  // "kubernetes.io/secret/ab" is 23 bytes; 20 whole characters fit in the 64, the 21st does not.
  std::string shown = "kubernetes.io/secret/ab";
  for (int i = 0; i < 20; ++i) shown += "\xc3\xa9";
  ExpectRefused(s, "the name of secret option \"" + shown + "...\" is 402 bytes");
}

TEST(FlexCallLimitsTest, LongVolumeIdIsRefusedNamingOptionAndLimit) {
  const std::string o = Options({{"volumeID", std::string(70000, 'a')}});
  Status s = CheckFlexCallLimits("mount", {"/p", o});
  ExpectRefused(s, "option \"volumeID\" is 70000 bytes; the limit is 4096 bytes");
  // The value itself is not echoed back.
  EXPECT_EQ(std::string::npos, s.message().find("aaaa"));
  EXPECT_TRUE(
      CheckFlexCallLimits("mount", {"/p", Options({{"volumeID", std::string(4096, 'a')}})}).ok());
}

TEST(FlexCallLimitsTest, EveryArgumentKindHasItsLimit) {
  const std::string o = Options({});
  ExpectRefused(CheckFlexCallLimits("mount", {std::string(4096, '/'), o}), "4095 bytes");
  ExpectRefused(CheckFlexCallLimits("attach", {o, std::string(254, 'n')}), "253 bytes");
  ExpectRefused(CheckFlexCallLimits("detach", {std::string(254, 'v'), "node"}), "a name");
  ExpectRefused(CheckFlexCallLimits("mountdevice", {"/p", std::string(65537, 'd'), o}), "device");
  ExpectRefused(CheckFlexCallLimits("expandvolume", {o, "/p", std::string(33, '1'), "0"}),
                "a size");
  ExpectRefused(
      CheckFlexCallLimits(
          "mount", {"/p", Options({{"kubernetes.io/pvOrVolumeName", std::string(300, 'p')}})}),
      "kubernetes.io/pvOrVolumeName");
  ExpectRefused(CheckFlexCallLimits("mount", {"/p", Options({{std::string(5000, 'k'), "v"}})}),
                "the name of option");
}

TEST(FlexCallLimitsTest, OptionsJsonAsAWholeIsBounded) {
  const std::string big(kMaxOptionsJsonBytes + 1, ' ');
  ExpectRefused(CheckFlexCallLimits("mount", {"/p", big}), "the options argument");
}

TEST(FlexCallLimitsTest, SecretsMayReachOneMebibyteButNotMore) {
  // 1 MiB of secret bytes is 1398104 bytes of base64: allowed, as in a Kubernetes Secret.
  const std::string b64_1mib(((kMaxSecretBytes + 2) / 3) * 4 - 4, 'A');
  EXPECT_TRUE(
      CheckFlexCallLimits("mount", {"/p", Options({{"kubernetes.io/secret/key", b64_1mib}})}).ok());
  const std::string b64_more(b64_1mib.size() + 8, 'A');
  Status s =
      CheckFlexCallLimits("mount", {"/p", Options({{"kubernetes.io/secret/key", b64_more}})});
  ExpectRefused(s, "secrets");
  EXPECT_EQ(std::string::npos, s.message().find("AAAA"));  // never the value
}

TEST(FlexCallLimitsTest, LargestAllowedRequestFitsAFrameAfterEscaping) {
  // Options made of quotes double in size when the request JSON escapes them again.
  nlohmann::json request = {
      {"args", {std::string(kMaxPathBytes, '/'), std::string(kMaxOptionsJsonBytes, '"')}}};
  EXPECT_LE(request.dump().size(), kMaxFrameBytes);
}

TEST(FlexCallLimitsTest, CsiVolumeMustHaveABoundedNonEmptyId) {
  EXPECT_TRUE(CheckCsiVolumeLimits("vol-1", {{"a", "b"}}).ok());
  ExpectRefused(CheckCsiVolumeLimits("", {}), "empty");
  ExpectRefused(CheckCsiVolumeLimits(std::string(4097, 'x'), {}), "the volume ID is 4097 bytes");
  ExpectRefused(CheckCsiVolumeLimits("v", {{"a", std::string(4097, 'x')}}),
                "volume attribute \"a\"");
}

}  // namespace
}  // namespace flexcsi
