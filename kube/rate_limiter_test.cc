#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace flexcsi::kube {
namespace {

using Clock = TokenBucket::Clock;
using std::chrono::milliseconds;

Clock::time_point At(double seconds) {
  return Clock::time_point() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(seconds));
}
double Seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t - Clock::time_point()).count();
}

// The most grants whose send times fall in any window of `window` seconds.
size_t MostInAnyWindow(std::vector<double> times, double window) {
  std::sort(times.begin(), times.end());
  size_t most = 0;
  for (size_t i = 0, j = 0; j < times.size(); ++j) {
    while (times[j] - times[i] > window) ++i;
    most = std::max(most, j - i + 1);
  }
  return most;
}

TEST(ResolveRateLimitTest, ZeroMeansClientGosDefaultsAndNegativeQpsMeansNoLimit) {
  auto defaults = ResolveRateLimit(RateLimit{0, 0});
  ASSERT_TRUE(defaults.ok());
  ASSERT_TRUE(defaults->has_value());
  EXPECT_EQ((*defaults)->qps, 5);
  EXPECT_EQ((*defaults)->burst, 10);

  auto given = ResolveRateLimit(RateLimit{50, 100});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ((*given)->qps, 50);
  EXPECT_EQ((*given)->burst, 100);

  auto burst_default = ResolveRateLimit(RateLimit{0.5, 0});
  ASSERT_TRUE(burst_default.ok());
  EXPECT_EQ((*burst_default)->qps, 0.5);
  EXPECT_EQ((*burst_default)->burst, 10);

  for (double off : {-1.0, -0.001}) {
    auto none = ResolveRateLimit(RateLimit{off, 7});
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value()) << off;
  }
  EXPECT_FALSE(ResolveRateLimit(RateLimit{}).value().has_value()) << "KubeClient's default";
}

TEST(ResolveRateLimitTest, NegativeBurstOrAQpsThatIsNoNumberIsRefusedNamingTheFlag) {
  auto burst = ResolveRateLimit(RateLimit{10, -1});
  ASSERT_FALSE(burst.ok());
  EXPECT_EQ(burst.status().code(), Code::kInvalidArgument);
  EXPECT_NE(burst.status().message().find("--burst"), std::string::npos);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    auto qps = ResolveRateLimit(RateLimit{bad, 10});
    ASSERT_FALSE(qps.ok());
    EXPECT_NE(qps.status().message().find("--qps"), std::string::npos);
  }
}

TEST(TokenBucketTest, AFullBucketGrantsBurstAtOnceThenOneTokenPerInterval) {
  TokenBucket bucket({10, 3}, At(0));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(At(0)), At(0)) << i;
  // Then one every 100 ms, each waiter behind the one before it.
  EXPECT_NEAR(Seconds(*bucket.Reserve(At(0))), 0.1, 1e-6);
  EXPECT_NEAR(Seconds(*bucket.Reserve(At(0))), 0.2, 1e-6);
  EXPECT_NEAR(Seconds(*bucket.Reserve(At(0.05))), 0.3, 1e-6);
  EXPECT_NEAR(bucket.TokensAt(At(0.05)), -2.5, 1e-6);  // three owed, half of one refilled
}

TEST(TokenBucketTest, IdleTimeRefillsUpToBurstAndNoFurther) {
  TokenBucket bucket({2, 4}, At(0));
  for (int i = 0; i < 4; ++i) bucket.Reserve(At(0));
  EXPECT_NEAR(bucket.TokensAt(At(1)), 2, 1e-9);
  EXPECT_NEAR(bucket.TokensAt(At(3600)), 4, 1e-9);
  int immediate = 0;
  while (bucket.Reserve(At(3600)) == At(3600)) ++immediate;
  EXPECT_EQ(immediate, 4);
}

TEST(TokenBucketTest, AReservationPastTheLatestTimeTakesNoToken) {
  TokenBucket bucket({1, 1}, At(0));
  EXPECT_EQ(bucket.Reserve(At(0)), At(0));
  EXPECT_FALSE(bucket.Reserve(At(0), At(0.5)).has_value()) << "its token comes at 1 s";
  EXPECT_NEAR(bucket.TokensAt(At(0)), 0, 1e-9);
  EXPECT_NEAR(Seconds(*bucket.Reserve(At(0), At(1))), 1, 1e-6);
}

// Any pattern of arrivals, on a fake clock: in every window of T seconds at most
// burst + qps * T requests are sent, and a steady crowd gets exactly qps per second.
TEST(TokenBucketTest, NoWindowEverGetsMoreThanBurstPlusQpsTimesItsLength) {
  std::mt19937 random(27);
  for (TokenBucketSize size : {TokenBucketSize{5, 10}, TokenBucketSize{50, 100},
                               TokenBucketSize{0.5, 1}, TokenBucketSize{200, 7}}) {
    TokenBucket bucket(size, At(0));
    std::vector<double> sent;
    double now = 0;
    std::exponential_distribution<double> gap(size.qps * 3);  // three times what it may send
    for (int i = 0; i < 3000; ++i) {
      now += (i % 500 < 50) ? 0 : gap(random);  // bursts of 50 at once, then a crowd
      sent.push_back(Seconds(*bucket.Reserve(At(now))));
    }
    for (double window : {0.0, 0.1, 1.0, 2.5, 10.0, 60.0}) {
      const double bound = size.burst + size.qps * window;
      EXPECT_LE(MostInAnyWindow(sent, window), std::floor(bound + 1e-6))
          << "qps " << size.qps << " burst " << size.burst << " window " << window;
    }
    // The crowd kept the bucket empty: the last request went out about (3000 - burst) / qps
    // after the first.
    EXPECT_NEAR(*std::max_element(sent.begin(), sent.end()), (3000 - size.burst) / size.qps,
                1 / size.qps + 1e-6);
  }
}

// The real clock and real threads: the bound is an upper one, so a slow machine only makes the
// count smaller, never the test fail.
TEST(RequestThrottleTest, ThreadsTogetherNeverGetMoreThanBurstPlusQpsTimesTheTime) {
  const TokenBucketSize size{40, 5};
  RequestThrottle throttle(size);
  const auto start = Clock::now();
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (Clock::now() - start < milliseconds(700)) {
        ASSERT_TRUE(throttle.Wait().ok());
        granted.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LE(granted.load(), size.burst + size.qps * elapsed + 1) << elapsed << " s";
  EXPECT_GT(granted.load(), size.burst) << "the bucket refilled during " << elapsed << " s";
  EXPECT_GT(throttle.delayed_requests(), 0u);
}

TEST(RequestThrottleTest, AWaitThatWouldPassTheDeadlineFailsAtOnceWithoutSpendingAToken) {
  RequestThrottle throttle({0.01, 1});  // after the first, one token every 100 s
  ASSERT_TRUE(throttle.Wait().ok());
  Status late = throttle.Wait(Clock::now() + milliseconds(10));
  EXPECT_EQ(late.code(), Code::kDeadlineExceeded);
  EXPECT_NE(late.message().find("--qps 0.01 --burst 1"), std::string::npos) << late.message();
  EXPECT_EQ(throttle.delayed_requests(), 0u);
}

TEST(RequestThrottleTest, CancellingEndsAWaitThatWouldLastMinutes) {
  RequestThrottle throttle({0.01, 1});
  ASSERT_TRUE(throttle.Wait().ok());
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop = true;
  });
  Status s = throttle.Wait(std::nullopt, [&] { return stop.load(); });
  stopper.join();
  EXPECT_EQ(s.code(), Code::kCancelled);
}

}  // namespace
}  // namespace flexcsi::kube
