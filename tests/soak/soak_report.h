// A soak run's samples: figures by name after so many life cycles, the rule each is judged by
// (JudgeLevelsOff), the table a reader sees and the JSON bench/soak_bench.py reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/soak/levels_off.h"

namespace flexcsi::soak {

struct MetricRule {
  std::string name;
  LevelsOffBounds bounds;
};

// The rules of issue #37, one per kind of figure; their bounds are the soak's definition of
// "levels off" for the CI run and the long bench alike.
MetricRule MemoryKibRule(std::string name);    // resident memory
MetricRule ExactCountRule(std::string name);   // open files, threads: never above the baseline
MetricRule FileBytesRule(std::string name);    // a database, a page that is rewritten
MetricRule WalBytesRule(std::string name);     // a SQLite WAL: under its checkpoint size
MetricRule LoggedBytesRule(std::string name);  // a log: bytes per cycle level off

class SoakReport {
 public:
  SoakReport(std::string title, std::vector<MetricRule> rules);

  // One sample; `values` holds every rule's figure (a missing one is recorded as -1).
  void Add(int64_t cycle, const std::map<std::string, double>& values);
  // Every metric's verdict, by name.
  std::map<std::string, LevelsOffVerdict> Judge() const;
  // Samples as rows, metrics as columns, then one line per verdict.
  std::string Table(const std::map<std::string, LevelsOffVerdict>& verdicts) const;
  nlohmann::json ToJson(const std::map<std::string, LevelsOffVerdict>& verdicts) const;
  // The end of a soak run: judges, prints the table, writes ToJson to
  // $FLEXCSI_SOAK_REPORT_DIR/<title>.json when that is set (how the bench reads a run), and
  // succeeds when every figure levels off.
  ::testing::AssertionResult Conclude() const;

 private:
  std::string title_;
  std::vector<MetricRule> rules_;
  std::vector<int64_t> cycles_;
  std::map<std::string, std::vector<SamplePoint>> series_;
};

// An integer from the environment, `fallback` when unset or empty.
int64_t EnvInt(const char* name, int64_t fallback);

}  // namespace flexcsi::soak
