// The soak judge on synthetic series: what levels off passes, what grows fails, whatever the
// clock says (no timing here: the soak runs feed it real samples).
#include "tests/soak/levels_off.h"

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "tests/soak/soak_report.h"

namespace flexcsi::soak {
namespace {

// Samples every 50 cycles from 0 to `cycles`, the value given by `f(cycle)`.
std::vector<SamplePoint> Series(int64_t cycles, const std::function<double(int64_t)>& f) {
  std::vector<SamplePoint> points;
  for (int64_t c = 0; c <= cycles; c += 50) points.push_back({c, f(c)});
  return points;
}

// The soak's own rules (soak_report.h), on the CI run's schedule: what they pass and fail here
// is what node_soak_test and controller_soak_test pass and fail.
LevelsOffBounds MemoryBounds() { return MemoryKibRule("rss_kib").bounds; }
LevelsOffBounds ExactBounds() { return ExactCountRule("fds").bounds; }
LevelsOffBounds FileBounds() { return FileBytesRule("db_bytes").bounds; }
LevelsOffBounds WalBounds() { return WalBytesRule("wal_bytes").bounds; }
LevelsOffBounds LogBounds() { return LoggedBytesRule("log_bytes").bounds; }

// Samples after every 20 of 500 life cycles, the node soak's CI schedule, with these values.
std::vector<SamplePoint> NodeSchedule(const std::vector<double>& values) {
  std::vector<SamplePoint> points;
  for (size_t i = 0; i < values.size(); ++i) {
    points.push_back({static_cast<int64_t>(20 * i), values[i]});
  }
  return points;
}

// RSS in KiB of a 500-cycle node soak of the fixed code (posix_spawn in csi-loopback, lanes in
// threads; load average 9-15): what the memory rule must pass, and the noise a leak rides on.
const std::vector<double> kFixedBridgeRss = {
    25464, 25896, 25980, 26056, 26076, 26108, 26128, 26160, 26176, 26192, 26212, 26224, 26336,
    26352, 26372, 26380, 26388, 26396, 26412, 26416, 26424, 26432, 26436, 26444, 26448, 26456};
const std::vector<double> kFixedDriverRss = {
    19080, 21212, 21432, 21464, 21468, 21484, 21508, 21588, 21612, 21624, 21636, 21652, 21672,
    21680, 21684, 21680, 21700, 21716, 21720, 21728, 21740, 21732, 21748, 21740, 21756, 21756};

// RSS in KiB of 500-claim controller soaks (sampled after whole batches of four), both at load
// average 40-75: the controller before a790260's fix (its event recorder never forgetting:
// FLEXCSI_SOAK_CONTROLLER_REMEMBERED_EVENTS=1000000) and fixed, and the fixed run's csi-loopback.
const std::vector<int64_t> kControllerCycles = {0,   28,  52,  76,  100, 128, 152,
                                                176, 200, 228, 252, 276, 300, 328,
                                                352, 376, 400, 428, 452, 476, 500};
const std::vector<double> kLeakyControllerRss = {30620, 33092, 33184, 33236, 33304, 33332, 33376,
                                                 33416, 33516, 33556, 33596, 33616, 33668, 33724,
                                                 33780, 33804, 33852, 33888, 33908, 33964, 34028};
const std::vector<double> kFixedControllerRss = {30792, 33272, 33360, 33400, 33424, 33448, 33460,
                                                 33464, 33472, 33484, 33484, 33500, 33520, 33524,
                                                 33524, 33536, 33544, 33544, 33548, 33564, 33572};
const std::vector<double> kFixedControllerSoakDriverRss = {
    19036, 19640, 19752, 19808, 19848, 19908, 19960, 19980, 20008, 20028, 20064,
    20080, 20104, 20112, 20132, 20156, 20164, 20176, 20184, 20204, 20228};

std::vector<SamplePoint> ControllerSchedule(const std::vector<double>& values) {
  std::vector<SamplePoint> points;
  for (size_t i = 0; i < values.size(); ++i) points.push_back({kControllerCycles[i], values[i]});
  return points;
}

// `series` with `kib_per_cycle` more at every sample: a leak from the start.
std::vector<SamplePoint> WithLeak(std::vector<SamplePoint> series, double kib_per_cycle) {
  for (SamplePoint& p : series) p.value += kib_per_cycle * static_cast<double>(p.cycle);
  return series;
}

TEST(SlopeTest, IsTheMedianOfThePairwiseSlopesPer1000Cycles) {
  EXPECT_DOUBLE_EQ(SlopePer1000({{0, 5}, {100, 5}, {200, 5}}), 0);
  EXPECT_DOUBLE_EQ(SlopePer1000({{0, 0}, {500, 1}, {1000, 2}}), 2);
  // An even number of slopes: the mean of the middle two (0 and 1/150).
  EXPECT_NEAR(SlopePer1000({{0, 0}, {100, 2}, {200, 0}, {300, 2}}), 10.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(SlopePer1000({{7, 3}}), 0);
}

TEST(SlopeTest, OneOutlierBarelyMovesIt) {
  // 10 per 1000 cycles, one sample caught 26 high: least squares would say 46.
  EXPECT_NEAR(SlopePer1000({{0, 0}, {100, 1}, {200, 2}, {300, 29}, {400, 4}}), 10, 1e-9);
}

TEST(LevelsOffTest, FlatSeriesPasses) {
  const auto v = JudgeLevelsOff(Series(500, [](int64_t) { return 20000.0; }), MemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
  EXPECT_EQ(v.baseline, 20000);
  EXPECT_EQ(v.slope_per_1000, 0);
}

TEST(LevelsOffTest, NoisyFlatSeriesPasses) {
  // +-300 KiB of malloc noise around 20 MiB.
  const auto v = JudgeLevelsOff(
      Series(500, [](int64_t c) { return 20000.0 + ((c / 50) % 2 ? 300 : -300); }), MemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
}

TEST(LevelsOffTest, GrowthDuringWarmUpThenFlatPasses) {
  // Caches fill over the first 100 cycles, then nothing more.
  const auto v = JudgeLevelsOff(
      Series(500, [](int64_t c) { return 15000.0 + 50.0 * std::min<int64_t>(c, 100); }),
      MemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
  EXPECT_EQ(v.baseline, 20000);
}

TEST(LevelsOffTest, LinearGrowthFails) {
  // 40 KiB per cycle: past the tolerance within the run.
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 20000.0 + 40.0 * c; }), MemoryBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NE(v.reason.find("exceeds the baseline"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, SlowLeakInsideTheToleranceFailsOnItsSlope) {
  // 4 KiB per cycle: 2 MiB over the run, inside 10 % + 2 MiB, but the line tilts.
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 20000.0 + 4.0 * c; }), MemoryBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NEAR(v.slope_per_1000, 4000, 1e-6);
  EXPECT_NE(v.reason.find("still growing"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, TheFixedCodesRealSeriesPass) {
  for (const auto* rss : {&kFixedBridgeRss, &kFixedDriverRss}) {
    const auto v = JudgeLevelsOff(NodeSchedule(*rss), MemoryBounds());
    EXPECT_TRUE(v.levels_off) << v.reason;
    EXPECT_LT(v.slope_per_1000, 1024.0 / 2) << "the bound's margin over the fixed code";
  }
}

TEST(LevelsOffTest, TheControllerSoaksRealSeriesFailWithTheLeakAndPassWithoutIt) {
  const auto leaky = JudgeLevelsOff(ControllerSchedule(kLeakyControllerRss), MemoryBounds());
  EXPECT_FALSE(leaky.levels_off);
  EXPECT_NE(leaky.reason.find("still growing"), std::string::npos) << leaky.reason;
  // Inside the tolerance: only the slope (1.68 KiB per claim) sees it.
  EXPECT_LT(leaky.last, leaky.baseline * 1.1 + 2048);
  for (const auto* rss : {&kFixedControllerRss, &kFixedControllerSoakDriverRss}) {
    const auto fixed = JudgeLevelsOff(ControllerSchedule(*rss), MemoryBounds());
    EXPECT_TRUE(fixed.levels_off) << fixed.reason;
  }
}

TEST(LevelsOffTest, LeakAsSlowAsTheEventRecordersOnTheRealNoiseFails) {
  // flexcsi-controller's event recorder before a790260 kept 1.3 KiB per claim; the same on top
  // of each real series (its creep and steps are the noise the leak hides in). Inside the
  // tolerance: only the slope sees it.
  for (const auto* rss : {&kFixedBridgeRss, &kFixedDriverRss}) {
    const auto v = JudgeLevelsOff(WithLeak(NodeSchedule(*rss), 1.3), MemoryBounds());
    EXPECT_FALSE(v.levels_off);
    EXPECT_NE(v.reason.find("still growing"), std::string::npos) << v.reason;
  }
}

TEST(LevelsOffTest, LeakAsSlowAsTheEventRecordersInNoiseFails) {
  // 1.3 KiB per cycle on a flat 26 MiB, each sample off by up to +-96 KiB, pseudo-random (after
  // the warm-up the real series step by at most 112 KiB between two samples, once; by less than
  // 40 otherwise).
  uint32_t state = 12345;
  auto noise = [&state] {
    state = state * 1103515245u + 12345u;
    return static_cast<double>((state >> 16) % 193) - 96;
  };
  std::vector<double> rss;
  for (int i = 0; i <= 25; ++i) rss.push_back(26000 + noise());
  const auto leaking = JudgeLevelsOff(WithLeak(NodeSchedule(rss), 1.3), MemoryBounds());
  EXPECT_FALSE(leaking.levels_off);
  EXPECT_NE(leaking.reason.find("still growing"), std::string::npos) << leaking.reason;
  // The same noise without the leak passes.
  const auto flat = JudgeLevelsOff(NodeSchedule(rss), MemoryBounds());
  EXPECT_TRUE(flat.levels_off) << flat.reason;
}

TEST(LevelsOffTest, LeakShapedAsTheEventRecordersInTheControllerSoakFails) {
  // flexcsi-controller before a790260 in a 500-claim soak sampled every 25: startup and its
  // caches (sized to fill within the warm-up) to 32.7 MiB, then 1.5 KiB more per claim for
  // ever. Inside the tolerance.
  const auto v = JudgeLevelsOff(Series(500,
                                       [](int64_t c) {
                                         return 29856.0 + 2800.0 * std::min<int64_t>(c, 50) / 50 +
                                                1.5 * static_cast<double>(c);
                                       }),
                                MemoryBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NEAR(v.slope_per_1000, 1500, 1e-6);
  EXPECT_NE(v.reason.find("still growing"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, SteadyCreepBelowTheBoundPasses) {
  // 0.6 KiB per cycle throughout (csi-loopback's malloc in the controller soak): not a leak of
  // the size the bound is there for.
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 33000.0 + 0.6 * c; }), MemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
}

TEST(LevelsOffTest, GrowthThatStopsAfterWarmUpOnlyInTheFirstHalfPasses) {
  // A burst right after the warm-up that stays within tolerance, flat from mid-run on.
  const auto v = JudgeLevelsOff(
      Series(1000,
             [](int64_t c) {
               return 20000.0 + (c > 200 && c < 500 ? 2.0 * (c - 200) : c >= 500 ? 600 : 0);
             }),
      MemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
}

TEST(LevelsOffTest, OneMoreOpenFileThanTheBaselineFails) {
  auto fds = Series(500, [](int64_t) { return 12.0; });
  fds.back().value = 13;
  const auto v = JudgeLevelsOff(fds, ExactBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NE(v.reason.find("exceeds the baseline 12"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, ExactCountBackToBaselinePasses) {
  EXPECT_TRUE(JudgeLevelsOff(Series(500, [](int64_t) { return 12.0; }), ExactBounds()).levels_off);
  // Fewer threads than at the baseline (an idle pool shrank) is not growth.
  EXPECT_TRUE(
      JudgeLevelsOff(Series(500, [](int64_t c) { return c > 250 ? 9.0 : 12.0; }), ExactBounds())
          .levels_off);
}

TEST(LevelsOffTest, RunningTotalGrowingByConstantStepsPasses) {
  // 700 log bytes per life cycle, for ever: each cycle says as much as the last.
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 1000.0 + 700.0 * c; }), LogBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
  EXPECT_DOUBLE_EQ(v.baseline, 700);
}

TEST(LevelsOffTest, RunningTotalWhoseStepsGrowFails) {
  // Each cycle logs a little more than the last (a line listing everything seen so far).
  const auto v = JudgeLevelsOff(
      Series(500, [](int64_t c) { return 700.0 * c + 0.5 * static_cast<double>(c * c); }),
      LogBounds());
  EXPECT_FALSE(v.levels_off);
}

TEST(LevelsOffTest, WalFillingSlowlyToItsCheckpointSizePasses) {
  // The controller's journal: 20 KB per cycle until the checkpoint at 1000 pages, then reused.
  const auto v = JudgeLevelsOff(
      Series(500, [](int64_t c) { return std::min(12392.0 + 20600.0 * c, 4128272.0); }),
      WalBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
}

TEST(LevelsOffTest, WalBeyondItsCheckpointSizeFails) {
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 12392.0 + 20600.0 * c; }), WalBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NE(v.reason.find("exceeds its ceiling"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, DatabaseKeepingARowPerCycleFails) {
  // A record never deleted: a 4 KiB page every 10 cycles.
  const auto v = JudgeLevelsOff(
      Series(500, [](int64_t c) { return 32768.0 + 4096.0 * static_cast<double>(c / 10); }),
      FileBounds());
  EXPECT_FALSE(v.levels_off);
}

TEST(LevelsOffTest, TooFewSamplesAfterWarmUpFails) {
  const auto v = JudgeLevelsOff({{0, 10}, {500, 10}}, ExactBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NE(v.reason.find("too few samples"), std::string::npos) << v.reason;
  EXPECT_FALSE(JudgeLevelsOff({}, ExactBounds()).levels_off);
}

}  // namespace
}  // namespace flexcsi::soak
