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
  if (points.size() < 2) return 0;
  double mean_x = 0, mean_y = 0;
  for (const SamplePoint& p : points) {
    mean_x += static_cast<double>(p.cycle);
    mean_y += p.value;
  }
  mean_x /= static_cast<double>(points.size());
  mean_y /= static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const SamplePoint& p : points) {
    const double dx = static_cast<double>(p.cycle) - mean_x;
    sxy += dx * (p.value - mean_y);
    sxx += dx * dx;
  }
  return sxx == 0 ? 0 : 1000 * sxy / sxx;
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
  std::vector<SamplePoint> after_warmup, first_half, second_half;
  bool have_baseline = false;
  for (const SamplePoint& p : series) {
    if (static_cast<double>(p.cycle) <= warmup_end) {
      verdict.baseline = have_baseline ? std::max(verdict.baseline, p.value) : p.value;
      have_baseline = true;
    } else {
      after_warmup.push_back(p);
      if (2 * p.cycle <= last_cycle) first_half.push_back(p);
    }
    if (2 * p.cycle >= last_cycle) second_half.push_back(p);
  }
  verdict.slope_per_1000 = SlopePer1000(second_half);
  verdict.slope_before_per_1000 = SlopePer1000(first_half);
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
  // Too few samples between the warm-up and mid-run to see a slowing: the steady bound holds.
  const bool slowing =
      first_half.size() >= 2 && verdict.slope_per_1000 <= verdict.slope_before_per_1000 / 2;
  if (bounds.steady_slope_per_1000 > 0 && verdict.slope_per_1000 > bounds.steady_slope_per_1000 &&
      !slowing) {
    verdict.reason =
        Format("still growing: %.6g per 1000 cycles over the second half", verdict.slope_per_1000,
               0) +
        Format(", not slowing down (%.6g from the warm-up to mid-run; above %.6g it must halve)",
               verdict.slope_before_per_1000, bounds.steady_slope_per_1000);
    return verdict;
  }
  verdict.levels_off = true;
  return verdict;
}

}  // namespace flexcsi::soak
