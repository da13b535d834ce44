// InFlightGate: which operations may start, and waiting for the ones that did. A leader that
// steps down closes the gate (no operation starts any more) and waits for those running to
// end before its lock is given up, so that no successor repeats an operation still running
// here (leader_election.h).
#pragma once

#include <condition_variable>
#include <mutex>

namespace flexcsi::controller {

class InFlightGate {
 public:
  // Closed until opened.
  void Open();
  // True (and the operation counts as running until Exit) when the gate is open.
  bool Enter();
  // REQUIRES: a matching Enter() that returned true.
  void Exit();
  // Closes the gate and returns once no operation runs.
  void CloseAndDrain();
  int Running() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable drained_;
  bool open_ = false;  // guarded by mu_
  int running_ = 0;    // guarded by mu_
};

}  // namespace flexcsi::controller
