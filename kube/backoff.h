// Waiting between attempts of a request or a watch: exponential backoff with jitter, and the
// server's own Retry-After when it gives one.
#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <string>

namespace flexcsi::kube {

// Not thread-safe: each retry loop owns one.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds cap);

  // The next wait: initial * 2^n, capped, plus up to 50% random jitter so that many clients
  // failing together do not come back together.
  std::chrono::milliseconds Next();
  void Reset() { attempt_ = 0; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds cap_;
  int attempt_ = 0;
  std::mt19937_64 random_;
};

// A Retry-After header value: delta-seconds ("3") or an HTTP-date. nullopt when unparseable.
// Dates in the past give zero.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value);

}  // namespace flexcsi::kube
