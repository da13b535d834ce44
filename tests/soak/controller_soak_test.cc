// Controller soak (issue #37): flexcsi-controller through provision/delete cycles against the
// stand-in API server (tests/apiserver: real TLS, a PV controller that binds and releases) and a
// real csi-loopback must not grow. A cycle is one claim: created, provisioned and Bound, deleted,
// its PV and CSI volume gone; four claims go through their cycles at once. After each batch the
// controller's memory, open files, threads, log and intent journal (and its WAL) are sampled,
// with csi-loopback's, and JudgeLevelsOff (levels_off.h) judges every figure at the end.
//
//   FLEXCSI_SOAK_CONTROLLER_CYCLES=N        claims (default 500: the CI run)
//   FLEXCSI_SOAK_CONTROLLER_SAMPLE_EVERY=N  claims per sample (default 25; rounded up to whole
//                                           batches of four)
//   FLEXCSI_SOAK_REPORT_DIR=DIR             also write DIR/controller-soak.json
//   FLEXCSI_SOAK_CONTROLLER_REMEMBERED_EVENTS=N  the event recorder's caches (default 64); a
//                                           million never evicts, as before a790260: the leak
// The long run is bench/soak_bench.py.

#include "tests/controller/controller_world.h"
#include "tests/soak/process_resources.h"
#include "tests/soak/soak_report.h"

namespace flexcsi::soak {
namespace {

using namespace std::chrono_literals;
using controller_test::ControllerWorld;

constexpr int kClaimsAtOnce = 4;
constexpr const char* kNamespace = "soak";
// A busy machine slows the stand-in API server's binding and the driver's CreateVolume.
constexpr auto kClaimBound = 120s;
// Events the controller remembers: two per claim, so full after 32 cycles.
constexpr int kRememberedEvents = 64;

std::vector<MetricRule> ControllerRules() {
  return {MemoryKibRule("controller_rss_kib"),
          ExactCountRule("controller_fds"),
          ExactCountRule("controller_threads"),
          FileBytesRule("controller_journal_bytes"),
          WalBytesRule("controller_journal_wal_bytes"),
          LoggedBytesRule("controller_log_bytes"),
          MemoryKibRule("driver_rss_kib"),
          ExactCountRule("driver_fds"),
          ExactCountRule("driver_threads")};
}

::testing::AssertionResult Sample(ControllerWorld& world, int64_t cycle, SoakReport* report) {
  const std::vector<ProcessResources> at_rest =
      SampleProcessesAtRest({world.ControllerPid(0), world.env().driver_pid()});
  const ProcessResources& controller = at_rest[0];
  const ProcessResources& driver = at_rest[1];
  if (!controller.ok() || !driver.ok()) {
    return ::testing::AssertionFailure()
           << "after " << cycle << " cycles flexcsi-controller (pid " << world.ControllerPid(0)
           << ") or csi-loopback (pid " << world.env().driver_pid() << ") is gone";
  }
  report->Add(cycle, {{"controller_rss_kib", controller.rss_kib},
                      {"controller_fds", controller.open_fds},
                      {"controller_threads", controller.threads},
                      {"controller_journal_bytes", FileBytes(world.JournalPath())},
                      {"controller_journal_wal_bytes", FileBytes(world.JournalPath() + "-wal")},
                      {"controller_log_bytes", FileBytes(world.ControllerLogPath(0))},
                      {"driver_rss_kib", driver.rss_kib},
                      {"driver_fds", driver.open_fds},
                      {"driver_threads", driver.threads}});
  return ::testing::AssertionSuccess();
}

std::string VolumeIdOf(const nlohmann::json& pv) {
  return pv["spec"]["flexVolume"]["options"].value("volumeID", "");
}

TEST(ControllerSoakTest, ControllerLevelsOffOverProvisionAndDelete) {
  const int64_t cycles = EnvInt("FLEXCSI_SOAK_CONTROLLER_CYCLES", 500);
  const int64_t sample_every = EnvInt("FLEXCSI_SOAK_CONTROLLER_SAMPLE_EVERY", 25);
  ASSERT_GT(sample_every, 0);
  ControllerWorld world;
  ASSERT_TRUE(world.Start());
  world.CreateNamespace(kNamespace);
  world.CreateStorageClass(kNamespace, {{"parameters", {{"csi.storage.k8s.io/fstype", "ext4"}}}});
  // The event recorder's caches (1024 events, two per claim) full within the warm-up, so that
  // what grows after it is a leak and not a cache filling up (controller/event_recorder.h).
  controller_test::ControllerFlags flags;
  flags.env["FLEXCSI_CONTROLLER_REMEMBERED_EVENTS"] =
      std::to_string(EnvInt("FLEXCSI_SOAK_CONTROLLER_REMEMBERED_EVENTS", kRememberedEvents));
  ASSERT_TRUE(world.StartController(0, flags));
  // Sampled once it serves, not while it is still loading.
  ASSERT_TRUE(world.WaitFor(
      [&] { return world.ControllerLog(0).find("controller-0 started") != std::string::npos; },
      kClaimBound))
      << world.ControllerLog(0);
  const size_t volumes_before = world.DriverVolumes().size();

  SoakReport report("controller-soak", ControllerRules());
  ASSERT_TRUE(Sample(world, 0, &report));
  int64_t done = 0, next_sample = sample_every;
  while (done < cycles) {
    std::vector<std::string> claims;
    for (int i = 0; i < kClaimsAtOnce; ++i) {
      claims.push_back("claim-" + std::to_string(done + i));
      world.CreateClaim(kNamespace, claims.back(), "16Mi", kNamespace);
    }
    std::vector<std::pair<std::string, std::string>> pvs;  // PV name, CSI volume id
    for (const std::string& claim : claims) {
      ASSERT_TRUE(world.WaitBound(kNamespace, claim, kClaimBound))
          << claim << ": " << world.GetClaim(kNamespace, claim).dump();
      const std::string pv = world.GetClaim(kNamespace, claim)["spec"]["volumeName"];
      pvs.push_back({pv, VolumeIdOf(world.GetPV(pv))});
    }
    for (const std::string& claim : claims) {
      auto deleted = world.api().Delete(
          kube::ResourcePath::Core("persistentvolumeclaims", kNamespace).Named(claim));
      ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
    }
    for (const auto& [pv, volume_id] : pvs) {
      ASSERT_TRUE(world.WaitFor([&] { return world.GetPV(pv).is_null(); }, kClaimBound))
          << "PV " << pv << " not deleted: " << world.GetPV(pv).dump();
      ASSERT_TRUE(
          world.WaitFor([&] { return world.DriverVolumes().count(volume_id) == 0; }, kClaimBound))
          << "CSI volume " << volume_id << " of " << pv << " left behind";
    }
    done += kClaimsAtOnce;
    ASSERT_EQ(volumes_before, world.DriverVolumes().size()) << "after " << done << " cycles";
    if (done >= next_sample || done >= cycles) {
      ASSERT_TRUE(Sample(world, done, &report));
      next_sample += sample_every;
    }
  }

  EXPECT_TRUE(report.Conclude());
}

}  // namespace
}  // namespace flexcsi::soak
