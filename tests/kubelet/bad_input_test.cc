// Wrong input reaches the bridge the way a misconfigured cluster would send it; each must be a
// clear Failure that says what is wrong, and must leave no mount, loop device or record.
#include <sys/stat.h>

#include <filesystem>

#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.Start());
    ASSERT_DRIVER_OK(env_.caller().Init());
    id_ = env_.CreateVolume("vol-bad", 64 * kMiB, "ext4");
    ASSERT_FALSE(id_.empty());
  }

  // A failure whose kubelet error contains `fragment`.
  void ExpectFailure(const DriverResult& r, const std::string& fragment) {
    EXPECT_EQ(DriverResult::Outcome::kFailure, r.outcome) << r.Describe();
    EXPECT_TRUE(r.called);
    EXPECT_NE(std::string::npos, r.error.find(fragment))
        << "expected \"" << fragment << "\" in: " << r.error;
    // The reply is one JSON object (kubelet parsed it), not a crash dump.
    EXPECT_TRUE(r.reply.is_object()) << r.output;
  }

  TestEnvironment env_;
  std::string id_;
};

TEST_F(BadInputTest, MalformedOptionsJsonIsFailureNamingJson) {
  FlexVolumeSource v = env_.VolumeSource("pv-bad", id_);
  const std::string dir = env_.caller().PodVolumeDirFor(env_.Pod("bad-0"), v);
  std::filesystem::create_directories(dir);
  DriverResult r = env_.caller().Exec({"mount", dir, "{\"volumeID\": " + id_});
  ExpectFailure(r, "JSON");
  DriverResult attach = env_.caller().Exec({"attach", "not json", kTestNode});
  ExpectFailure(attach, "JSON");
  std::filesystem::remove(dir);
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, MissingArgumentsIsFailureNamingExpectedArgv) {
  FlexVolumeSource v = env_.VolumeSource("pv-bad", id_);
  DriverResult r = env_.caller().Exec({"mount", env_.caller().PodVolumeDirFor(env_.Pod("p"), v)});
  ExpectFailure(r, "mount expects 2 arguments, got 1");
  ExpectFailure(env_.caller().Exec({"attach", BaseOptionsJson(v)}), "<node name>");
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, MissingVolumeIdOptionIsFailure) {
  FlexVolumeSource v = env_.VolumeSource("pv-bad", id_);
  v.options.clear();
  DriverResult r = env_.caller().Attach(v);
  ExpectFailure(r, "volumeID");
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, UnknownCsiVolumeIsFailureWithoutLeaks) {
  FlexVolumeSource v = env_.VolumeSource("pv-missing", "no-such-volume-id");
  DriverResult r = env_.caller().Attach(v);
  EXPECT_EQ(DriverResult::Outcome::kFailure, r.outcome) << r.Describe();
  EXPECT_NE(std::string::npos, r.error.find("no-such-volume-id")) << r.error;
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, DriverMissingFromBridgeConfigIsFailureNamingIt) {
  // Installed on the node, but the bridge serves only flexcsi/loopback.
  KubeletCaller other(env_.root() + "/volume-plugins", env_.kubelet_root(), "acme/other",
                      kTestNode);
  std::string error;
  ASSERT_TRUE(other.InstallDriver(
      FLEXEXEC_BINARY,
      {{"capabilities", {{"attach", true}}}, {"bridgeSocket", env_.bridge_socket()}}, &error))
      << error;
  ASSERT_DRIVER_OK(other.Init());  // init never needs the bridge
  FlexVolumeSource v = env_.VolumeSource("pv-other", id_);
  DriverResult r = other.Attach(v);
  ExpectFailure(r, "acme/other");
  DriverResult m = other.SetUp(v, env_.Pod("other-0"));
  ExpectFailure(m, "acme/other");
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, PathOutsideKubeletRootIsRefused) {
  FlexVolumeSource v = env_.VolumeSource("pv-bad", id_);
  ASSERT_DRIVER_OK(env_.caller().Attach(v));
  const std::string outside = env_.root() + "/outside/mnt";
  std::filesystem::create_directories(outside);
  DriverResult md = env_.caller().Exec({"mountdevice", outside, "", BaseOptionsJson(v)});
  ExpectFailure(md, outside);
  DriverResult m = env_.caller().Exec({"mount", outside, MountOptionsJson(v, env_.Pod("o"))});
  ExpectFailure(m, outside);
  // ".." climbing out of the kubelet root is outside too.
  const std::string climbing = env_.kubelet_root() + "/pods/../../outside/mnt";
  ExpectFailure(env_.caller().Exec({"mount", climbing, MountOptionsJson(v, env_.Pod("o"))}),
                "kubelet");
  EXPECT_FALSE(IsLikelyMountPoint(outside));
  ExpectFailure(env_.caller().Exec({"unmount", "/"}), "/");
  ASSERT_DRIVER_OK(env_.caller().Detach(v));
  ExpectNothingLeaked(env_);
}

// Issue 46: a pod author names an inline volume like an attached PV (or a PV is recreated with
// another volumeID while the old attachment stands). The attach of the other CSI volume under the
// same name and node is refused, and the recorded attachment keeps its volume, so detach still
// releases the right one.
TEST_F(BadInputTest, AttachOfAnotherVolumeUnderAnAttachedNameIsRefused) {
  const std::string other_id = env_.CreateVolume("vol-other", 64 * kMiB, "ext4");
  ASSERT_FALSE(other_id.empty());
  FlexVolumeSource v = env_.VolumeSource("pv-taken", id_);
  ASSERT_DRIVER_OK(env_.caller().Attach(v));
  FlexVolumeSource impostor = env_.VolumeSource("pv-taken", other_id);
  DriverResult r = env_.caller().Attach(impostor);
  ExpectFailure(r, "pv-taken");
  EXPECT_NE(std::string::npos, r.error.find(id_)) << r.error;
  EXPECT_NE(std::string::npos, r.error.find(other_id)) << r.error;
  // The same attach again is still idempotent, and detach releases the first volume.
  ASSERT_DRIVER_OK(env_.caller().Attach(v));
  nlohmann::json state = env_.BridgeState();
  ASSERT_TRUE(state.contains("attachments")) << state.dump();
  ASSERT_EQ(state["attachments"].size(), 1u) << state.dump();
  EXPECT_EQ(state["attachments"][0].value("volumeId", ""), id_) << state.dump();
  ASSERT_DRIVER_OK(env_.caller().Detach(v));
  ExpectNothingLeaked(env_);
}

TEST_F(BadInputTest, DaemonDownIsFailureTellingHowToStartIt) {
  env_.KillBridge(SIGKILL);
  FlexVolumeSource v = env_.VolumeSource("pv-bad", id_);
  PodInfo pod = env_.Pod("down-0");
  DriverResult r = env_.caller().SetUp(v, pod);
  ExpectFailure(r, "flexcsi-bridge is not running");
  EXPECT_NE(std::string::npos, r.error.find("systemctl start flexcsi-bridge")) << r.error;
  // kubelet removed the pod dir after the failure; nothing mounted.
  EXPECT_FALSE(std::filesystem::exists(env_.caller().PodVolumeDirFor(pod, v)));
  EXPECT_TRUE(env_.MountsUnderRoot().empty());
  ASSERT_TRUE(env_.StartBridge());
  ExpectNothingLeaked(env_);
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
