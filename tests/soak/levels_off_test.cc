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
LevelsOffBounds SteadyMemoryBounds() { return SteadyMemoryKibRule("rss_kib").bounds; }
LevelsOffBounds ExactBounds() { return ExactCountRule("fds").bounds; }
LevelsOffBounds FileBounds() { return FileBytesRule("db_bytes").bounds; }
LevelsOffBounds WalBounds() { return WalBytesRule("wal_bytes").bounds; }
LevelsOffBounds LogBounds() { return LoggedBytesRule("log_bytes").bounds; }

TEST(SlopeTest, IsTheLeastSquaresLinePer1000Cycles) {
  EXPECT_DOUBLE_EQ(SlopePer1000({{0, 5}, {100, 5}, {200, 5}}), 0);
  EXPECT_DOUBLE_EQ(SlopePer1000({{0, 0}, {500, 1}, {1000, 2}}), 2);
  EXPECT_DOUBLE_EQ(SlopePer1000({{0, 0}, {100, 2}, {200, 0}, {300, 2}}), 4);
  EXPECT_DOUBLE_EQ(SlopePer1000({{7, 3}}), 0);
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
  // 8 KiB per cycle: 3.2 MiB over the run, inside 10 % + 2 MiB, but the line tilts.
  const auto v =
      JudgeLevelsOff(Series(500, [](int64_t c) { return 20000.0 + 8.0 * c; }), MemoryBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NEAR(v.slope_per_1000, 8000, 1e-6);
  EXPECT_NE(v.reason.find("still growing"), std::string::npos) << v.reason;
}

TEST(LevelsOffTest, LeakAsSlowAsTheEventRecordersFailsBecauseItNeverSlows) {
  // flexcsi-controller before a790260 in a 500-claim soak: startup and its caches (sized to
  // fill within the warm-up) to 32.7 MiB, then 1.5 KiB more per claim for ever. Inside the
  // tolerance and under max_slope_per_1000.
  const auto v = JudgeLevelsOff(Series(500,
                                       [](int64_t c) {
                                         return 29856.0 + 2800.0 * std::min<int64_t>(c, 50) / 50 +
                                                1.5 * static_cast<double>(c);
                                       }),
                                SteadyMemoryBounds());
  EXPECT_FALSE(v.levels_off);
  EXPECT_NEAR(v.slope_per_1000, 1500, 1e-6);
  EXPECT_NE(v.reason.find("not slowing down"), std::string::npos) << v.reason;
  // The node soak's rule lets it through: the reason the controller soak has its own.
  const auto node_rule = JudgeLevelsOff(Series(500,
                                               [](int64_t c) {
                                                 return 29856.0 +
                                                        2800.0 * std::min<int64_t>(c, 50) / 50 +
                                                        1.5 * static_cast<double>(c);
                                               }),
                                        MemoryBounds());
  EXPECT_TRUE(node_rule.levels_off);
}

TEST(LevelsOffTest, CreepThatSlowsDownPasses) {
  // malloc's arenas settling: +3 KiB per cycle after the warm-up, +1.2 over the second half,
  // above the steady bound but slower by more than half.
  const auto v = JudgeLevelsOff(
      Series(500,
             [](int64_t c) {
               return 19000.0 + (c <= 250 ? 3.0 * static_cast<double>(c)
                                          : 750 + 1.2 * static_cast<double>(c - 250));
             }),
      SteadyMemoryBounds());
  EXPECT_TRUE(v.levels_off) << v.reason;
}

TEST(LevelsOffTest, SteadyCreepBelowTheSteadyBoundPasses) {
  // 0.4 KiB per cycle throughout (malloc noise over a short run): too small to call a leak.
  const auto v = JudgeLevelsOff(Series(500, [](int64_t c) { return 33000.0 + 0.4 * c; }),
                                SteadyMemoryBounds());
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
