#include "controller/in_flight_gate.h"

namespace flexcsi::controller {

void InFlightGate::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
}

bool InFlightGate::Enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return false;
  ++running_;
  return true;
}

void InFlightGate::Exit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--running_ == 0) drained_.notify_all();
}

void InFlightGate::CloseAndDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  open_ = false;
  drained_.wait(lock, [this] { return running_ == 0; });
}

int InFlightGate::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

}  // namespace flexcsi::controller
