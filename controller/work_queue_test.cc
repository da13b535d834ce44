#include "controller/work_queue.h"

#include <thread>

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

using namespace std::chrono_literals;

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
  q.Done("a");
  EXPECT_EQ(q.Length(), 1u);
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueue, RetryBacksOffThenShutdownWakesWorkers) {
  WorkQueue q(20ms, 1s);
  q.Add("k");
  ASSERT_EQ(*q.Get(), "k");
  q.Done("k");
  const auto start = WorkQueue::Clock::now();
  q.Retry("k");
  ASSERT_EQ(*q.Get(), "k");
  EXPECT_GE(WorkQueue::Clock::now() - start, 15ms);
  q.Done("k");
  std::thread waiter([&] { EXPECT_FALSE(q.Get().has_value()); });
  std::this_thread::sleep_for(20ms);
  q.ShutDown();
  waiter.join();
}

}  // namespace
}  // namespace flexcsi::controller
