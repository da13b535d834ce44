#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

namespace flexcsi::kube {

std::string DescribeRateLimit(TokenBucketSize size) {
  std::ostringstream out;
  out << "--qps " << size.qps << " --burst " << size.burst;
  return out.str();
}

StatusOr<std::optional<TokenBucketSize>> ResolveRateLimit(const RateLimit& limit) {
  if (!std::isfinite(limit.qps)) {
    return InvalidArgument("--qps must be a number (negative: no client-side rate limit)");
  }
  if (limit.burst < 0) {
    return InvalidArgument("--burst must not be negative (0: client-go's default, " +
                           std::to_string(kClientGoDefaultBurst) + ")");
  }
  // As rest.RESTClientFor: 0 means the default, and only a positive qps makes a limiter.
  const double qps = limit.qps == 0 ? kClientGoDefaultQps : limit.qps;
  const int burst = limit.burst == 0 ? kClientGoDefaultBurst : limit.burst;
  if (qps < 0) return std::optional<TokenBucketSize>();
  return std::optional<TokenBucketSize>(TokenBucketSize{qps, burst});
}

TokenBucket::TokenBucket(TokenBucketSize size, Clock::time_point now)
    : size_(size), tokens_(size.burst), last_(now) {}

double TokenBucket::Refilled(Clock::time_point now) const {
  if (now <= last_) return tokens_;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  return std::min<double>(size_.burst, tokens_ + elapsed * size_.qps);
}

double TokenBucket::TokensAt(Clock::time_point now) const { return Refilled(now); }

std::optional<TokenBucket::Clock::time_point> TokenBucket::Reserve(Clock::time_point now,
                                                                   Clock::time_point latest) {
  // Times never go back here: a caller whose `now` is older than the last reservation's is
  // served as of that reservation.
  now = std::max(now, last_);
  const double left = Refilled(now) - 1;
  Clock::time_point ready = now;
  if (left < 0) {
    ready += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(-left / size_.qps));
  }
  if (ready > latest) return std::nullopt;
  tokens_ = left;
  last_ = now;
  return ready;
}

RequestThrottle::RequestThrottle(TokenBucketSize size)
    : size_(size), bucket_(size, Clock::now()) {}

Status RequestThrottle::Wait(std::optional<Clock::time_point> deadline,
                             const std::function<bool()>& should_cancel) {
  const Clock::time_point now = Clock::now();
  std::optional<Clock::time_point> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready = bucket_.Reserve(now, deadline.value_or(Clock::time_point::max()));
  }
  if (!ready) {
    return DeadlineExceeded("client-side rate limit (" + DescribeRateLimit(size_) +
                            "): the request could go out only after its deadline");
  }
  if (*ready <= now) return Status::Ok();
  delayed_.fetch_add(1);
  delay_ms_.fetch_add(
      std::chrono::duration_cast<std::chrono::milliseconds>(*ready - now).count());
  if (!should_cancel) {
    std::this_thread::sleep_until(*ready);
    return Status::Ok();
  }
  while (Clock::now() < *ready) {
    if (should_cancel()) return Status(Code::kCancelled, "cancelled while rate-limited");
    std::this_thread::sleep_until(std::min(*ready, Clock::now() + std::chrono::milliseconds(100)));
  }
  return Status::Ok();
}

}  // namespace flexcsi::kube
