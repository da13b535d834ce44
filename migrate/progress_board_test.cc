#include "migrate/progress_board.h"

#include <gtest/gtest.h>

#include <sstream>

namespace flexcsi::migrate {
namespace {

MoveResult Result(const std::string& pv, Outcome o) {
  MoveResult r;
  r.pv_name = pv;
  r.outcome = o;
  return r;
}

TEST(ProgressBoardTest, LiveLineCountsAndNamesTheSlowestStep) {
  std::ostringstream err;
  {
    ProgressBoard board(err, /*live=*/true, 4, "moved");
    board.Step("pv-a", "checked");
    board.Step("pv-b", "checked");
    board.Step("pv-a", "binding (resumed)");
    board.Finished(Result("pv-b", Outcome::kMoved));
    const std::string line = board.Line();
    EXPECT_NE(line.find("moved 1/4"), std::string::npos) << line;
    EXPECT_NE(line.find("in progress 1"), std::string::npos) << line;
    EXPECT_NE(line.find("slowest pv-a: binding"), std::string::npos) << line;
    EXPECT_NE(line.find("ETA"), std::string::npos) << line;
  }
  // Redrawn in place; a moved PV gets no line of its own on a terminal.
  EXPECT_NE(err.str().find("\r\033[K"), std::string::npos);
  EXPECT_EQ(err.str().find("pv-b: moved"), std::string::npos) << err.str();
}

TEST(ProgressBoardTest, PlainLinesWhenNotATerminal) {
  std::ostringstream err;
  {
    ProgressBoard board(err, /*live=*/false, 2, "moved");
    board.Step("pv-a", "retaining");
    board.Note("StatefulSet ns/web: scaling StatefulSet/web from 3 to 0");
    board.Finished(Result("pv-a", Outcome::kMoved));
    board.Finished(Result("pv-b", Outcome::kFailed));
  }
  EXPECT_EQ(err.str(),
            "pv-a: retaining\n"
            "StatefulSet ns/web: scaling StatefulSet/web from 3 to 0\n"
            "pv-a: moved\n"
            "pv-b: failed\n");
}

TEST(ProgressBoardTest, ShortDurations) {
  EXPECT_EQ(ShortDuration(std::chrono::seconds(14)), "14s");
  EXPECT_EQ(ShortDuration(std::chrono::seconds(130)), "2m10s");
  EXPECT_EQ(ShortDuration(std::chrono::seconds(3720)), "1h02m");
}

}  // namespace
}  // namespace flexcsi::migrate
