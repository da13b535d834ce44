// ProgressBoard: what `apply` and `rollback` tell a person while they run, on stderr.
//
// On a terminal, one live line redrawn in place at most a few times a second and at least once
// a second (so the ETA and the age of the slowest PV keep moving):
//   moved 120/500  failed 0  refused 2  in progress 16  slowest pv-17: binding 14s  ETA 2m10s
// Failures and the workload groups' lines are printed above it as they happen. Not on a
// terminal (a log, CI), plain lines instead: each PV's steps and outcome, and the groups' lines.
// stdout is never touched, so `-o json` stays machine-readable.
//
// Thread-safe: every worker reports through it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "migrate/pv_mover.h"

namespace flexcsi::migrate {

class ProgressBoard {
 public:
  // `live`: redraw one line (a terminal); else plain lines. `total`: the PVs this run moves.
  ProgressBoard(std::ostream& err, bool live, size_t total, std::string done_word);
  ~ProgressBoard();  // clears the live line and prints the final tally (live mode)

  void Step(const std::string& pv, const std::string& what);  // MoveOptions::progress
  void Note(const std::string& line);                         // a workload group's line
  void Finished(const MoveResult& result);

  // The live line as it would be drawn now (for tests).
  std::string Line();

 private:
  struct Running {
    std::string step;
    std::chrono::steady_clock::time_point since;  // when this PV started
  };
  void Print(const std::string& line);  // REQUIRES: mu_ held
  void Draw();                          // REQUIRES: mu_ held
  std::string LineLocked() const;       // REQUIRES: mu_ held
  void Tick();

  std::ostream& err_;
  const bool live_;
  const size_t total_;
  const std::string done_word_;  // "moved", "rolled back"
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::map<std::string, Running> running_;
  size_t done_ = 0, failed_ = 0, refused_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread ticker_;  // live mode only
};

// "2m10s", "14s", "1h02m".
std::string ShortDuration(std::chrono::seconds d);

}  // namespace flexcsi::migrate
