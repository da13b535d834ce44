// Whether a resource sampled over a soak run levels off or grows without bound (issue #37). The
// node and controller soak tests and bench/soak_bench.py (which runs those tests for longer) all
// judge through JudgeLevelsOff, so a long run and the CI run apply one rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flexcsi::soak {

// One sample: the resource's value after `cycle` life cycles.
struct SamplePoint {
  int64_t cycle = 0;
  double value = 0;
};

// How a resource may behave once warm.
struct LevelsOffBounds {
  // Samples up to this fraction of the run's cycles are warm-up: caches, malloc arenas, SQLite's
  // pages and the WAL grow to their working size there. The baseline is the largest of them.
  double warmup_fraction = 0.2;
  // Every later sample may exceed the baseline by this fraction of it plus this amount (noise:
  // malloc's arenas, a page more in the database). Both 0 with max_slope_per_1000 0: the resource
  // must never exceed its baseline (open files, threads).
  double relative_tolerance = 0;
  double absolute_tolerance = 0;
  // The Theil-Sen slope (the median of the slopes between every two samples) over the second
  // half of the run, in units per 1000 cycles: a leak too slow to pass the tolerance in a short
  // run still tilts the line. The median, not least squares: one sample taken while malloc
  // still held a freed block, or the step of an arena growing once, barely moves it, so the
  // bound can sit close above what the fixed code does and still below a slow leak.
  double max_slope_per_1000 = 0;
  // The series is a running total (bytes logged): judged by its growth per cycle between samples,
  // which must level off (a constant number of log bytes per life cycle is fine; a message that
  // grows with the history is not).
  bool running_total = false;
  // When above 0, the figure is bounded by design at this value and only that is judged: every
  // sample at or below it (SQLite's WAL grows by each transaction until its automatic checkpoint
  // at 1000 pages, then is written again from its start, so its size stops at ~4 MiB however
  // slowly it gets there).
  double ceiling = 0;
};

struct LevelsOffVerdict {
  bool levels_off = false;
  std::string reason;  // why not, when it does not
  double baseline = 0;
  double last = 0;
  double slope_per_1000 = 0;  // over the second half
};

// REQUIRES: points ordered by cycle. Fewer than two samples after the warm-up (three for a
// running total) is a failure: too short a run cannot show that anything levels off.
LevelsOffVerdict JudgeLevelsOff(const std::vector<SamplePoint>& points,
                                const LevelsOffBounds& bounds);

// The Theil-Sen slope of value over cycle (the median of the slopes between every two points),
// per 1000 cycles; 0 for fewer than two points.
double SlopePer1000(const std::vector<SamplePoint>& points);

}  // namespace flexcsi::soak
