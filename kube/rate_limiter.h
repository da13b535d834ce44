// Client-side rate limit of API requests: client-go's rest.Config QPS/Burst, which is a token
// bucket (flowcontrol.NewTokenBucketRateLimiter over golang.org/x/time/rate): the bucket holds at
// most `burst` tokens and starts full, it refills at `qps` tokens a second, and every request
// takes one token or waits until its token has been refilled. Waiting requests take their tokens
// in the order they asked, so the bucket may owe tokens (its count below zero): whoever asks next
// waits for the debt too. Over any window of T seconds at most burst + qps * T requests go out.
//
// KubeClient owns one and makes every request pass it (kube_client.cc): first attempts, retries
// after 429/5xx, a watch's opening request, the repeat after an exec plugin's 401.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/status.h"

namespace flexcsi::kube {

// client-go's defaults for a rest.Config whose QPS or Burst is 0 (rest.DefaultQPS,
// rest.DefaultBurst), which is what kubectl's own requests run with (it raises only discovery's).
constexpr double kClientGoDefaultQps = 5;
constexpr int kClientGoDefaultBurst = 10;

// A rate limit as client-go's flags mean it: qps > 0 a token bucket, qps == 0 client-go's
// default of 5 per second, qps < 0 no limit at all; burst == 0 client-go's default of 10.
struct RateLimit {
  double qps = -1;  // KubeClient's own default: no limit; each program chooses (migrate: flags)
  int burst = 0;
};

// What a RateLimit comes to: nullopt for no limit, else the bucket's qps (> 0) and burst (>= 1).
// A negative burst, or a qps that is not a finite number, is an error naming the flag.
struct TokenBucketSize {
  double qps;
  int burst;
};
StatusOr<std::optional<TokenBucketSize>> ResolveRateLimit(const RateLimit& limit);
// "--qps 50 --burst 100", for messages.
std::string DescribeRateLimit(TokenBucketSize size);

// The bucket's arithmetic, on times the caller gives (no clock of its own, no lock), so the
// schedule can be tested on a fake clock. Not thread-safe: RequestThrottle guards it.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(TokenBucketSize size, Clock::time_point now);

  // Takes one token at `now` and returns when the caller may send: `now` while tokens are left,
  // else the moment its token will have been refilled. When that moment would be after `latest`,
  // nothing is taken and nullopt returned (the caller gives up without using up a token, as
  // rate.Limiter.Wait does when the wait would pass its context's deadline).
  std::optional<Clock::time_point> Reserve(Clock::time_point now,
                                           Clock::time_point latest = Clock::time_point::max());

  // Tokens at `now` (negative while waiters owe them), for tests.
  double TokensAt(Clock::time_point now) const;

 private:
  double Refilled(Clock::time_point now) const;
  TokenBucketSize size_;
  double tokens_;
  Clock::time_point last_;  // when tokens_ was computed
};

// A TokenBucket shared by every thread of a KubeClient, with the waiting done here.
class RequestThrottle {
 public:
  using Clock = TokenBucket::Clock;
  explicit RequestThrottle(TokenBucketSize size);

  // Waits for a token. With a deadline: refuses at once (kDeadlineExceeded, no token taken) when
  // the token would come after it. With should_cancel: checked every 100 ms while waiting;
  // kCancelled once it returns true (the token stays spent).
  Status Wait(std::optional<Clock::time_point> deadline = std::nullopt,
              const std::function<bool()>& should_cancel = nullptr);

  TokenBucketSize size() const { return size_; }
  // Requests that had to wait, and the time they waited in all (what the limit cost).
  uint64_t delayed_requests() const { return delayed_.load(); }
  std::chrono::milliseconds total_delay() const {
    return std::chrono::milliseconds(delay_ms_.load());
  }

 private:
  const TokenBucketSize size_;
  std::mutex mu_;
  TokenBucket bucket_;  // guarded by mu_
  std::atomic<uint64_t> delayed_{0};
  std::atomic<int64_t> delay_ms_{0};
};

}  // namespace flexcsi::kube
