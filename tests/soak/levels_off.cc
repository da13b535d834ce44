#include "tests/soak/levels_off.h"

#include <algorithm>
#include <cstdio>

namespace flexcsi::soak {
namespace {

// Growth per cycle between consecutive samples of a running total, at the later sample's cycle.
std::vector<SamplePoint> GrowthPerCycle(const std::vector<SamplePoint>& totals) {
  std::vector<SamplePoint> rates;
  for (size_t i = 1; i < totals.size(); ++i) {
    const int64_t cycles = totals[i].cycle - totals[i - 1].cycle;
    if (cycles <= 0) continue;
    rates.push_back({totals[i].cycle, (totals[i].value - totals[i - 1].value) / cycles});
  }
  return rates;
}

// `format` takes one or two doubles (a second argument it does not use is ignored).
std::string Format(const char* format, double a, double b) {
  char text[160];
  std::snprintf(text, sizeof(text), format, a, b);
  return text;
}

}  // namespace

double SlopePer1000(const std::vector<SamplePoint>& points) {
  std::vector<double> slopes;
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      const int64_t cycles = points[j].cycle - points[i].cycle;
      if (cycles != 0) slopes.push_back((points[j].value - points[i].value) / cycles);
    }
  }
  if (slopes.empty()) return 0;
  const size_t mid = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + mid, slopes.end());
  double median = slopes[mid];
  if (slopes.size() % 2 == 0) {
    median = (median + *std::max_element(slopes.begin(), slopes.begin() + mid)) / 2;
  }
  return 1000 * median;
}

LevelsOffVerdict JudgeLevelsOff(const std::vector<SamplePoint>& points,
                                const LevelsOffBounds& bounds) {
  const std::vector<SamplePoint> series = bounds.running_total ? GrowthPerCycle(points) : points;
  LevelsOffVerdict verdict;
  if (series.empty()) {
    verdict.reason = "no samples";
    return verdict;
  }
  verdict.last = series.back().value;
  if (bounds.ceiling > 0) {
    for (const SamplePoint& p : series) {
      verdict.baseline = std::max(verdict.baseline, p.value);
      if (p.value > bounds.ceiling) {
        verdict.reason = Format("%.6g after cycle %.0f", p.value, static_cast<double>(p.cycle)) +
                         Format(" exceeds its ceiling %.6g", bounds.ceiling, 0);
        return verdict;
      }
    }
    verdict.levels_off = true;
    return verdict;
  }
  const int64_t last_cycle = points.back().cycle;
  const double warmup_end = bounds.warmup_fraction * static_cast<double>(last_cycle);
  std::vector<SamplePoint> after_warmup, second_half;
  bool have_baseline = false;
  for (const SamplePoint& p : series) {
    if (static_cast<double>(p.cycle) <= warmup_end) {
      verdict.baseline = have_baseline ? std::max(verdict.baseline, p.value) : p.value;
      have_baseline = true;
    } else {
      after_warmup.push_back(p);
    }
    if (2 * p.cycle >= last_cycle) second_half.push_back(p);
  }
  verdict.slope_per_1000 = SlopePer1000(second_half);
  if (!have_baseline || after_warmup.size() < 2) {
    verdict.reason = "too few samples after the warm-up to judge (" +
                     std::to_string(after_warmup.size()) + "); sample more often or run longer";
    return verdict;
  }
  const double limit =
      verdict.baseline * (1 + bounds.relative_tolerance) + bounds.absolute_tolerance;
  for (const SamplePoint& p : after_warmup) {
    if (p.value > limit) {
      verdict.reason =
          Format("%.6g after cycle %.0f", p.value, static_cast<double>(p.cycle)) +
          Format(" exceeds the baseline %.6g plus tolerance (limit %.6g)", verdict.baseline, limit);
      return verdict;
    }
  }
  if (verdict.slope_per_1000 > bounds.max_slope_per_1000) {
    verdict.reason = Format("still growing: %.6g per 1000 cycles over the second half (bound %.6g)",
                            verdict.slope_per_1000, bounds.max_slope_per_1000);
    return verdict;
  }
  verdict.levels_off = true;
  return verdict;
}

}  // namespace flexcsi::soak
