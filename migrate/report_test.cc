#include "migrate/report.h"

#include <sstream>

#include <gtest/gtest.h>

namespace flexcsi::migrate {
namespace {

std::string SummaryLine(const std::vector<MoveResult>& results) {
  std::ostringstream out;
  PrintResultsTable(results, out);
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.find(": ") != std::string::npos && line.back() == '.') return line;
  }
  return "";
}

TEST(ResultsTable, CountsPvsInTheSingularAndPlural) {
  MoveResult moved;
  moved.pv_name = "a";
  moved.outcome = Outcome::kMoved;
  EXPECT_EQ(SummaryLine({moved}), "1 PV: 1 moved.");
  MoveResult other = moved;
  other.pv_name = "b";
  EXPECT_EQ(SummaryLine({moved, other}), "2 PVs: 2 moved.");
  EXPECT_EQ(SummaryLine({}), "0 PVs: nothing to do.");
}

}  // namespace
}  // namespace flexcsi::migrate
