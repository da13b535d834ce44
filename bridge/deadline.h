// Deadline: the point in time by which a FlexVolume call must have answered. flexexec gives the
// bridge a budget (timeoutMs); every CSI RPC and every rollback of that call draws from it, so the
// reply always reaches kubelet before flexexec gives up.
#pragma once

#include <algorithm>
#include <chrono>

namespace flexcsi {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // No call waits longer; a larger budget (a request's timeoutMs is any int64) is this one, which
  // keeps every clock's arithmetic far from overflowing.
  static constexpr std::chrono::hours kLongestBudget{24 * 366};

  static Deadline In(std::chrono::milliseconds budget) {
    return Deadline(Clock::now() + std::min<std::chrono::milliseconds>(budget, kLongestBudget));
  }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }
  // The same instant on the system clock, which is what gRPC deadlines are expressed in.
  std::chrono::system_clock::time_point ForGrpc() const {
    return std::chrono::system_clock::now() + remaining();
  }
  // This deadline moved earlier by `reserve`, keeping at least `floor` of time: the forward
  // steps of a call run against it so that `reserve` is left for rolling them back.
  Deadline LeavingForRollback(std::chrono::milliseconds reserve,
                              std::chrono::milliseconds floor = std::chrono::milliseconds(500)) const {
    auto left = remaining();
    auto forward = std::max(left - reserve, std::min(left, floor));
    return Deadline(Clock::now() + forward);
  }

 private:
  Clock::time_point at_;
};

// How much of a call's budget its forward steps leave for rolling them back: a quarter, at most
// 15 s (NodeUnpublish, NodeUnstage and ControllerUnpublish are quick when they work at all).
inline std::chrono::milliseconds RollbackReserve(const Deadline& deadline) {
  return std::min<std::chrono::milliseconds>(deadline.remaining() / 4, std::chrono::seconds(15));
}

}  // namespace flexcsi
