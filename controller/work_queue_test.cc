#include "controller/work_queue.h"

#include <thread>

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

using namespace std::chrono_literals;
using Outcome = WorkQueue::Outcome;

TEST(WorkQueue, KeyQueuedOnceAndNeverProcessedTwiceAtOnce) {
  WorkQueue q;
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Length(), 2u);
  auto a = q.Get();
  ASSERT_EQ(*a, "a");
  q.Add("a");  // while processing: comes back after Done, not to a second worker now
  auto b = q.Get();
  ASSERT_EQ(*b, "b");
  EXPECT_EQ(q.Length(), 0u);
  q.Done("a", Outcome::kSucceeded);
  EXPECT_EQ(q.Length(), 1u);
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueue, BackoffDoublesFromOneSecondToFiveMinutes) {
  const auto base = 1000ms;
  const auto max = std::chrono::milliseconds(std::chrono::minutes(5));
  EXPECT_EQ(BackoffDelay(1, base, max), 1s);
  EXPECT_EQ(BackoffDelay(2, base, max), 2s);
  EXPECT_EQ(BackoffDelay(3, base, max), 4s);
  EXPECT_EQ(BackoffDelay(9, base, max), 256s);
  EXPECT_EQ(BackoffDelay(10, base, max), max);
  EXPECT_EQ(BackoffDelay(1000, base, max), max);  // no overflow
}

TEST(WorkQueue, DefaultsAreExternalProvisionersRetryIntervals) {
  WorkQueue q;
  q.Add("k");
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_EQ(q.Done("k", Outcome::kFailed), 1s);
  q.Add("k");
  ASSERT_EQ(q.ReadyLength(), 0u);
  q.ShutDown();
}

TEST(WorkQueue, FailedKeyComesBackAfterItsBackoff) {
  WorkQueue q(40ms, 1s);
  q.Add("k");
  ASSERT_EQ(*q.Get(), "k");
  const auto start = WorkQueue::Clock::now();
  EXPECT_EQ(q.Done("k", Outcome::kFailed), 40ms);
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_GE(WorkQueue::Clock::now() - start, 35ms);
  EXPECT_EQ(q.Done("k", Outcome::kFailed), 80ms);
  EXPECT_EQ(q.Failures("k"), 2);
}

TEST(WorkQueue, UpdatesAndResyncsDuringBackoffDoNotRetryEarly) {
  WorkQueue q(10s, 60s);
  q.Add("claim", "rev1");
  ASSERT_EQ(*q.Get(), "claim");
  q.Done("claim", Outcome::kFailed);
  // Watch updates of the same revision (events, status, labels) and resyncs (no revision).
  for (int i = 0; i < 5; ++i) {
    q.Add("claim", "rev1");
    q.Add("claim");
  }
  EXPECT_EQ(q.ReadyLength(), 0u);
  EXPECT_EQ(q.Length(), 1u) << "one pending retry per key, never several";
}

TEST(WorkQueue, ReAddDuringAFailingAttemptWaitsForTheBackoff) {
  WorkQueue q(10s, 60s);
  q.Add("claim", "rev1");
  ASSERT_EQ(*q.Get(), "claim");
  q.Add("claim", "rev1");  // e.g. the attempt's own event write echoed back
  q.Add("claim");
  EXPECT_EQ(q.Done("claim", Outcome::kFailed), 10s);
  EXPECT_EQ(q.ReadyLength(), 0u);
  EXPECT_EQ(q.Length(), 1u);
}

TEST(WorkQueue, NewRevisionRetriesAtOnceWithBackoffReset) {
  WorkQueue q(10s, 60s);
  q.Add("claim", "node-a");
  ASSERT_EQ(*q.Get(), "claim");
  q.Done("claim", Outcome::kFailed);
  ASSERT_EQ(q.ReadyLength(), 0u);
  q.Add("claim", "node-b");  // e.g. the scheduler selected another node
  EXPECT_EQ(q.ReadyLength(), 1u);
  EXPECT_EQ(q.Length(), 1u);
  EXPECT_EQ(q.Failures("claim"), 0);
  ASSERT_EQ(*q.Get(), "claim");
  EXPECT_EQ(q.Done("claim", Outcome::kFailed), 10s) << "backoff starts over";
}

TEST(WorkQueue, NewRevisionDuringAFailingAttemptRetriesAfterTheFirstStepOnly) {
  WorkQueue q(10ms, 60s);
  q.Add("claim", "node-a");
  ASSERT_EQ(*q.Get(), "claim");
  q.Add("claim", "node-b");
  EXPECT_EQ(q.Done("claim", Outcome::kFailed), 10ms) << "no burst: not at once";
  EXPECT_EQ(q.ReadyLength(), 0u);
  EXPECT_EQ(q.Failures("claim"), 0) << "the backoff starts over";
  ASSERT_EQ(*q.Get(), "claim");  // after 10 ms
  EXPECT_EQ(q.Done("claim", Outcome::kFailed), 10ms);
}

TEST(WorkQueue, SuccessForgetsFailures) {
  WorkQueue q(10ms, 1s);
  q.Add("k", "r");
  ASSERT_EQ(*q.Get(), "k");
  q.Done("k", Outcome::kFailed);
  ASSERT_EQ(*q.Get(), "k");
  q.Done("k", Outcome::kFailed);
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_EQ(q.Failures("k"), 2);
  q.Done("k", Outcome::kSucceeded);
  EXPECT_EQ(q.Failures("k"), 0);
  q.Add("k", "r");
  ASSERT_EQ(q.ReadyLength(), 1u) << "a succeeded key is not in backoff";
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_EQ(q.Done("k", Outcome::kFailed), 10ms);
}

TEST(WorkQueue, DeferredKeyKeepsItsFailuresAndAddAfterKeepsTheEarlierTime) {
  WorkQueue q(10s, 60s);
  q.Add("k");
  ASSERT_EQ(*q.Get(), "k");
  q.Done("k", Outcome::kDeferred);
  q.AddAfter("k", 30ms);
  q.AddAfter("k", 10s);
  EXPECT_EQ(q.Length(), 1u);
  const auto start = WorkQueue::Clock::now();
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_LT(WorkQueue::Clock::now() - start, 5s);
  EXPECT_EQ(q.Failures("k"), 0);
}

TEST(WorkQueue, ShutdownWakesWorkers) {
  WorkQueue q(20ms, 1s);
  std::thread waiter([&] { EXPECT_FALSE(q.Get().has_value()); });
  std::this_thread::sleep_for(20ms);
  q.ShutDown();
  waiter.join();
}

}  // namespace
}  // namespace flexcsi::controller
