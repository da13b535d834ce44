// What the upgrade tests share: the previous release (built once per test binary), a world
// started on a chosen pairing of flexexec and bridge versions, the two halves of a DaemonSet
// rollout, and what "fails cleanly" means to kubelet.
#pragma once

#include <signal.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/kubelet/scenario_test_util.h"
#include "tests/kubelet/test_environment.h"
#include "tests/upgrade/previous_release.h"

namespace flexcsi {
namespace upgrade {

using kubelet::DriverResult;
using kubelet::EnvOptions;
using kubelet::TestEnvironment;

enum class Version { kPrevious, kCurrent };

inline const char* VersionName(Version v) {
  return v == Version::kPrevious ? "previous" : "current";
}

class UpgradeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (release_) return;
    PreviousRelease found;
    auto r = FindPreviousRelease({"flexexec", "flexcsi-bridge"}, &found);
    if (r) {
      release_ = found;
      std::printf("previous release: %s\n", found.version.c_str());
    } else {
      release_error_ = r.message();
    }
  }

  void SetUp() override { ASSERT_TRUE(release_) << release_error_; }

  static std::string Flexexec(Version v) {
    return v == Version::kPrevious ? release_->Binary("flexexec") : FLEXEXEC_BINARY;
  }
  static std::string Bridge(Version v) {
    return v == Version::kPrevious ? release_->Binary("flexcsi-bridge") : FLEXCSI_BRIDGE_BINARY;
  }

  // A started world whose flexexec and bridge are of the versions given.
  static std::unique_ptr<TestEnvironment> StartWorld(Version flexexec, Version bridge) {
    EnvOptions options;
    options.flexexec_binary = Flexexec(flexexec);
    options.bridge_binary = Bridge(bridge);
    auto env = std::make_unique<TestEnvironment>(options);
    auto started = env->Start();
    EXPECT_TRUE(started) << "flexexec " << VersionName(flexexec) << ", bridge "
                         << VersionName(bridge);
    return started ? std::move(env) : nullptr;
  }

  // The bridge half of a rollout: the running bridge gets SIGTERM, as the DaemonSet's old pod
  // does, `while_down` runs (kubelet's calls in that gap), and `to` starts on the same config,
  // state database and socket.
  static ::testing::AssertionResult RollBridge(TestEnvironment& env, Version to,
                                               const std::function<void()>& while_down = {}) {
    env.KillBridge(SIGTERM);
    if (while_down) while_down();
    env.UseBridgeBinary(Bridge(to));
    auto started = env.StartBridge();
    if (!started) started << " (starting the " << VersionName(to) << " bridge)";
    return started;
  }

  // The flexexec half: the new pod's installer puts `to` in the plugin dir.
  static ::testing::AssertionResult RollFlexexec(TestEnvironment& env, Version to) {
    return env.InstallFlexexec(Flexexec(to));
  }

  static std::optional<PreviousRelease> release_;
  static std::string release_error_;
};

inline std::optional<PreviousRelease> UpgradeTest::release_;
inline std::string UpgradeTest::release_error_;

// What kubelet can live with during a rollout: success, "Not supported", or a Failure reply
// with a message (kubelet logs it and retries). Never a hang, a crash or output that is not one
// FlexVolume reply.
inline ::testing::AssertionResult SuccessOrCleanFailure(const char* call, const DriverResult& r) {
  if (r.outcome != DriverResult::Outcome::kFailure) return ::testing::AssertionSuccess();
  const bool reply = r.reply.is_object() && r.reply.value("status", "") == "Failure" &&
                     !r.reply.value("message", "").empty();
  if (reply && r.exit_code >= 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << call << " did not fail cleanly (exit " << r.exit_code << "): " << r.Describe();
}

// The reply as printed, for the test's log of what each pairing answered.
inline std::string Reply(const DriverResult& r) {
  return r.reply.is_object() ? r.reply.dump() : r.Describe();
}

// Nothing differs between the bridge's records and the mount table, with a word on where.
inline void ExpectRecordsMatchMounts(const TestEnvironment& env, const std::string& when) {
  EXPECT_EQ("", env.RecordsVersusMountTable()) << when;
}

}  // namespace upgrade
}  // namespace flexcsi
