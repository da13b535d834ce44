// Issue 18: inline FlexVolume volumes put a pod author's JSON straight into flexexec and the
// bridge. Seven pods whose volumeID is hostile or broken go through kubelet's whole sequence in
// every driver shape where the path differs; each must fail with a clear reason and leave
// nothing behind: no record, no repair the bridge keeps retrying, no mount, nothing in the
// driver. And secrets passed along the way appear nowhere the bridge writes or serves.
#include <sys/mount.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/bridge_client.h"
#include "common/flex_call_limits.h"
#include "tests/kubelet/go_json.h"
#include "tests/kubelet/scenario_test_util.h"

namespace flexcsi {
namespace kubelet {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

struct Shape {
  const char* name;
  EnvOptions options;
};

void PrintTo(const Shape& shape, std::ostream* out) { *out << shape.name; }

EnvOptions NoCsiAttach() {
  EnvOptions o;
  o.csi_controller_attach = false;  // csi-loopback --no-attach
  return o;
}

EnvOptions NotAttachable() {
  EnvOptions o;
  o.flex_attach = false;  // the bridge stages on mount
  o.csi_controller_attach = false;
  return o;
}

EnvOptions StageWithoutMount() {
  EnvOptions o;
  o.csi_controller_attach = false;
  o.csi_stage_without_mount = true;  // record-only staging: the bridge's marker
  return o;
}

EnvOptions NoStage() {
  EnvOptions o;
  o.csi_controller_attach = false;
  o.csi_stage_unstage = false;
  return o;
}

struct HostileId {
  const char* name;
  std::string id;
};

std::vector<HostileId> HostileIds() {
  return {{"climbing", "../../../../etc"},
          {"absolute", "/etc/passwd"},
          {"dotdot inside", "vol-1/../../x"},
          {"70000 bytes", std::string(70000, 'a')},
          {"shell", "vol\"; rm -rf /"},
          {"newline", "vol-1\nvol-2"},
          {"empty", ""}};
}

// What kubelet and kube-controller-manager do for a pod with this inline volume, up to the first
// failure, and then for the pod's deletion. Returns the failing step's result (or the mount's).
DriverResult RunPodLikeKubelet(KubeletCaller& caller, const FlexVolumeSource& v,
                               const PodInfo& pod) {
  DriverResult failed;
  bool attached = false;
  [&] {
    if (caller.CapabilityAttach()) {
      failed = caller.Attach(v);
      if (!failed.success()) return;
      attached = true;
      const std::string device = failed.reply.value("device", "");
      failed = caller.WaitForAttach(device, v);
      if (!failed.success()) return;
      failed = caller.MountDevice(v, device);
      if (!failed.success()) return;
    }
    failed = caller.SetUp(v, pod);
  }();
  // The pod is deleted: TearDown, UnmountDevice and Detach as far as each is due.
  EXPECT_DRIVER_OK(caller.TearDown(v, pod));
  if (caller.CapabilityAttach()) {
    EXPECT_DRIVER_OK(caller.UnmountDevice(v));
    if (attached) {
      EXPECT_DRIVER_OK(caller.Detach(v));
    }
  }
  return failed;
}

class HostileVolumeIdTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    env_ = std::make_unique<TestEnvironment>(GetParam().options);
    ASSERT_TRUE(env_->Start());
    ASSERT_DRIVER_OK(env_->caller().Init());
    // A volume that does exist, so the driver has state to compare against afterwards.
    ASSERT_FALSE(env_->CreateVolume("vol-real", 64 * kMiB, "ext4").empty());
  }

  // No record, no repair pending or failing, for a few reconcile intervals (2 s each).
  void ExpectNoRecordsAndNoRetries() {
    for (int round = 0; round < 3; ++round) {
      std::string error;
      nlohmann::json state = env_->BridgeState(&error);
      ASSERT_TRUE(state.is_object()) << error;
      for (const char* table : {"attachments", "stagings", "publications"}) {
        EXPECT_TRUE(state[table].empty()) << "round " << round << ": the bridge still records "
                                          << table << ": " << state[table].dump().substr(0, 2000);
      }
      nlohmann::json health = env_->BridgeHealth(&error);
      ASSERT_TRUE(health.is_object()) << error;
      EXPECT_EQ(0, health.value("pendingRollbacks", -1)) << health.dump().substr(0, 2000);
      EXPECT_TRUE(health.value("failingRepairs", nlohmann::json::array()).empty())
          << health["failingRepairs"].dump().substr(0, 2000);
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    const std::string log = env_->ReadBridgeLog();
    EXPECT_EQ(std::string::npos, log.find("could not roll back")) << "the reconciler retried";
  }

  std::unique_ptr<TestEnvironment> env_;
};

TEST_P(HostileVolumeIdTest, EachFailsClearlyAndLeavesNothingToRetry) {
  int n = 0;
  for (const HostileId& hostile : HostileIds()) {
    SCOPED_TRACE(hostile.name);
    FlexVolumeSource v = env_->VolumeSource("inline-" + std::to_string(n), hostile.id);
    DriverResult r =
        RunPodLikeKubelet(env_->caller(), v, env_->Pod("hostile-" + std::to_string(n)));
    ++n;
    EXPECT_EQ(DriverResult::Outcome::kFailure, r.outcome) << r.Describe();
    EXPECT_TRUE(r.reply.is_object()) << r.output.substr(0, 2000);
    EXPECT_EQ(std::string::npos, r.error.find("RESOURCE_EXHAUSTED")) << r.error.substr(0, 2000);
    EXPECT_EQ(std::string::npos, r.error.find("rollback failed")) << r.error.substr(0, 2000);
    EXPECT_EQ(std::string::npos, r.error.find("rollback pending")) << r.error.substr(0, 2000);
    if (hostile.id.size() > kMaxCsiStringBytes) {
      // Refused by flexexec before anything was sent, naming the option and the limit.
      EXPECT_NE(std::string::npos,
                r.error.find("option \"volumeID\" is 70000 bytes; the limit is 4096 bytes"))
          << r.error.substr(0, 2000);
    } else if (hostile.id.empty()) {
      EXPECT_NE(std::string::npos, r.error.find("volumeID")) << r.error;
    } else {
      EXPECT_NE(std::string::npos, r.error.find("does not exist")) << r.error;
    }
  }
  ExpectNoRecordsAndNoRetries();
  ExpectNothingLeaked(*env_);
}

// The same refusal when a caller skips flexexec and talks to the bridge itself.
TEST_P(HostileVolumeIdTest, BridgeRefusesOverLongFieldsWithoutFlexexec) {
  FlexVolumeSource v = env_->VolumeSource("inline-long", std::string(70000, 'a'));
  PodInfo pod = env_->Pod("long-0");
  BridgeRequest req;
  req.driver = kTestDriver;
  req.call = env_->caller().CapabilityAttach() ? "attach" : "mount";
  req.args = req.call == "attach" ? std::vector<std::string>{BaseOptionsJson(v), kTestNode}
                                  : std::vector<std::string>{env_->caller().PodVolumeDirFor(pod, v),
                                                             MountOptionsJson(v, pod)};
  req.timeout_ms = 20000;
  auto reply =
      CallBridge(env_->bridge_socket(), req, std::chrono::seconds(2), std::chrono::seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ("Failure", reply->value("status", ""));
  EXPECT_NE(std::string::npos, reply->value("message", "").find("the limit is 4096 bytes"))
      << reply->dump().substr(0, 2000);
  ExpectNoRecordsAndNoRetries();
}

// Found by bridge_request_fuzz: a secret name of two-byte characters, too long, was cut inside a
// character in the refusal's message, the reply then could not be encoded, and the exception in
// the serving thread ended the bridge. flexexec refuses the same call itself, so only a caller
// talking to the socket directly could do it; the bridge must answer it all the same.
TEST_P(HostileVolumeIdTest, BridgeAnswersWhenItsMessageCutsAName) {
  FlexVolumeSource v = env_->VolumeSource("inline-utf8", "vol-utf8");
  std::string name = "ab";
  for (int i = 0; i < 200; ++i) name += "\xc3\xa9";
  v.secret = {{name, "x"}};
  PodInfo pod = env_->Pod("utf8-0");
  BridgeRequest req;
  req.driver = kTestDriver;
  req.call = "mount";
  req.args = {env_->caller().PodVolumeDirFor(pod, v), MountOptionsJson(v, pod)};
  req.timeout_ms = 20000;
  auto reply =
      CallBridge(env_->bridge_socket(), req, std::chrono::seconds(2), std::chrono::seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ("Failure", reply->value("status", ""));
  EXPECT_NE(std::string::npos, reply->value("message", "").find("the limit is 253 bytes"))
      << reply->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string error;
  EXPECT_TRUE(env_->BridgeHealth(&error).is_object()) << "the bridge is gone: " << error;
  ExpectNoRecordsAndNoRetries();
}

INSTANTIATE_TEST_SUITE_P(
    Shape, HostileVolumeIdTest,
    ::testing::Values(Shape{"Default", EnvOptions()}, Shape{"NoCsiAttach", NoCsiAttach()},
                      Shape{"NotAttachable", NotAttachable()},
                      Shape{"StageWithoutMount", StageWithoutMount()}, Shape{"NoStage", NoStage()}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

#ifdef FLEXCSI_CLI_BINARY
// `flexcsi <args>`: its stdout and stderr together.
std::string RunCli(const std::string& args) {
  std::string output;
  FILE* p = ::popen((std::string(FLEXCSI_CLI_BINARY) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "cannot run flexcsi " << args;
    return output;
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) output.append(buf, n);
  ::pclose(p);
  return output;
}
#endif

// Secrets go to the driver on mount and nowhere else: not into the bridge's log, the replies
// kubelet reads (pod events show their messages), its state database, its metrics, bridge.state
// (`flexcsi state`) or bridge.health (`flexcsi doctor`), neither on the successful path nor on the
// failing ones.
TEST(SecretsTest, NeverLeakOnSuccessOrFailure) {
  EnvOptions options = NotAttachable();
  options.metrics = true;
  TestEnvironment env(options);
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  const std::string id = env.CreateVolume("vol-secret", 64 * kMiB, "ext4");
  ASSERT_FALSE(id.empty());
  const std::vector<std::string> secrets = {"Pa55-w0rd-Xq7-never-shown", "tok-9b1f-ZZ-never-shown"};

  // A successful mount and unmount.
  FlexVolumeSource v = env.VolumeSource("pv-secret", id);
  v.secret = {{"password", secrets[0]}, {"token", secrets[1]}};
  PodInfo pod = env.Pod("secret-0");
  ASSERT_DRIVER_OK(env.caller().SetUp(v, pod));
  // Failing mounts with the same secrets: unknown and over-long volume IDs, a bad option. What
  // kubelet reads from each (and shows in the pod's events) is checked below too.
  std::string replies;
  for (const std::string& bad : {std::string("no-such-volume"), std::string(5000, 'b')}) {
    FlexVolumeSource h = env.VolumeSource("pv-bad-" + std::to_string(bad.size()), bad);
    h.secret = v.secret;
    DriverResult failed = env.caller().SetUp(h, env.Pod("secret-bad"));
    EXPECT_FALSE(failed.success());
    replies += failed.output;
  }
  FlexVolumeSource ro = v;
  ro.volume_name = "pv-bad-rw";
  std::string dir = env.caller().PodVolumeDirFor(env.Pod("secret-rw"), ro);
  std::string options_json = MountOptionsJson(ro, env.Pod("secret-rw"));
  options_json.replace(options_json.find("\"kubernetes.io/readwrite\":\"rw\""),
                       std::string("\"kubernetes.io/readwrite\":\"rw\"").size(),
                       "\"kubernetes.io/readwrite\":\"sideways\"");
  DriverResult sideways = env.caller().Exec({"mount", dir, options_json});
  EXPECT_FALSE(sideways.success());
  replies += sideways.output;

  auto check = [&](const std::string& where, const std::string& text) {
    EXPECT_FALSE(text.empty()) << where << " is empty: the check would prove nothing";
    for (const std::string& s : secrets) {
      EXPECT_EQ(std::string::npos, text.find(s)) << "secret in " << where;
      EXPECT_EQ(std::string::npos, text.find(Base64Encode(s))) << "base64 secret in " << where;
    }
  };
  check("bridge log", env.ReadBridgeLog());
  check("the failing calls' replies to kubelet", replies);
  check("metrics", env.ScrapeMetrics());
  check("bridge.state", env.BridgeState().dump());
  check("bridge.health", env.BridgeHealth().dump());
  for (const char* suffix : {"", "-wal"}) {
    check(std::string("state database") + suffix, env.ReadFile(env.state_db() + suffix));
  }
#ifdef FLEXCSI_CLI_BINARY
  const std::string config = " --config " + env.bridge_config_path();
  const std::string plugins = " --plugin-dir " + env.root() + "/volume-plugins";
  for (const std::string& args :
       {"state" + config, "state -o json" + config, "doctor" + config + plugins,
        "doctor -o json" + config + plugins}) {
    const std::string output = RunCli(args);
    // The command really ran and showed the mounted volume (or the checks).
    EXPECT_TRUE(output.find(id) != std::string::npos || output.find("PASS") != std::string::npos)
        << "flexcsi " << args << ":\n"
        << output;
    check("flexcsi " + args, output);
  }
#endif
  ASSERT_DRIVER_OK(env.caller().TearDown(v, pod));
  check("bridge log after unmount", env.ReadBridgeLog());
  ExpectNothingLeaked(env);
}

// A cleanup that really fails is retried with backoff and shown to `flexcsi doctor` with its
// attempts and last error, and finishes once the cause is gone. Here the pod's mount vanished
// (as after a node reboot) while the driver is down, so unmount's NodeUnpublishVolume fails and
// the reconciler owns the unpublishing record.
TEST(RepairBackoffScenarioTest, FailingUnpublishIsReportedThenFinishedWhenDriverReturns) {
  EnvOptions options;
  options.metrics = true;
  options.unavailable_retry_seconds = 1;
  TestEnvironment env(options);
  ASSERT_TRUE(env.Start());
  ASSERT_DRIVER_OK(env.caller().Init());
  const std::string id = env.CreateVolume("vol-retry", 64 * kMiB, "ext4");
  ASSERT_FALSE(id.empty());
  FlexVolumeSource v = env.VolumeSource("pv-retry", id);
  PodInfo pod = env.Pod("retry-0");
  DriverResult attached = env.caller().Attach(v);
  ASSERT_DRIVER_OK(attached);
  const std::string device = attached.reply.value("device", "");
  ASSERT_DRIVER_OK(env.caller().WaitForAttach(device, v));
  ASSERT_DRIVER_OK(env.caller().MountDevice(v, device));
  ASSERT_DRIVER_OK(env.caller().SetUp(v, pod));
  env.KillDriver(SIGKILL);
  ASSERT_EQ(0, ::umount2(env.caller().PodVolumeDirFor(pod, v).c_str(), 0)) << strerror(errno);
  DriverResult down = env.caller().TearDown(v, pod);
  EXPECT_FALSE(down.success()) << down.Describe();

  // The reconciler (every 2 s, or when a backoff is due) keeps failing on the record.
  nlohmann::json failing;
  for (int i = 0; i < 60 && (failing.empty() || failing[0].value("attempts", 0) < 3); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    failing = env.BridgeHealth().value("failingRepairs", nlohmann::json::array());
  }
  ASSERT_FALSE(failing.empty()) << "no failing repair reported";
  EXPECT_GE(failing[0].value("attempts", 0), 3);
  EXPECT_NE(std::string::npos, failing[0].value("record", "").find("publication "))
      << failing.dump();
  EXPECT_NE(std::string::npos, failing[0].value("lastError", "").find("UNAVAILABLE"))
      << failing.dump();
  EXPECT_NE(std::string::npos,
            env.ScrapeMetrics().find("flexcsi_failing_repairs{kind=\"publication\"} 1\n"));
  // Backoff: 1 s, 2 s, 4 s, 8 s between attempts, not one per 1 s reconcile tick.
  const int before = failing[0].value("attempts", 0);
  std::this_thread::sleep_for(std::chrono::seconds(8));
  failing = env.BridgeHealth().value("failingRepairs", nlohmann::json::array());
  ASSERT_FALSE(failing.empty());
  EXPECT_LE(failing[0].value("attempts", 0), before + 2) << failing.dump();
  EXPECT_GT(failing[0].value("nextAttemptSeconds", 0), 0) << failing.dump();

  ASSERT_TRUE(env.StartDriver());
  // The next attempt (at most 16 s away by now) finishes the record, without kubelet's help.
  nlohmann::json state;
  for (int i = 0; i < 40; ++i) {
    state = env.BridgeState();
    if (state.is_object() && state["publications"].empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_TRUE(state["publications"].empty()) << state.dump();
  EXPECT_TRUE(env.BridgeHealth().value("failingRepairs", nlohmann::json::array()).empty());
  EXPECT_NE(std::string::npos,
            env.ScrapeMetrics().find("flexcsi_failing_repairs{kind=\"publication\"} 0\n"));
  EXPECT_DRIVER_OK(env.caller().TearDown(v, pod));
  EXPECT_DRIVER_OK(env.caller().UnmountDevice(v));
  EXPECT_DRIVER_OK(env.caller().Detach(v));
  ExpectNothingLeaked(env);
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
