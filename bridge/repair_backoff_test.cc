#include "bridge/repair_backoff.h"

#include <gtest/gtest.h>

#include "bridge/metrics.h"

namespace flexcsi {
namespace {

using std::chrono::seconds;
using Clock = RepairBackoff::Clock;

TEST(RepairBackoffTest, DelayDoublesFromOneSecondUpToFiveMinutes) {
  EXPECT_EQ(seconds(1), RepairBackoff::DelayAfter(1));
  EXPECT_EQ(seconds(2), RepairBackoff::DelayAfter(2));
  EXPECT_EQ(seconds(4), RepairBackoff::DelayAfter(3));
  EXPECT_EQ(seconds(256), RepairBackoff::DelayAfter(9));
  EXPECT_EQ(seconds(300), RepairBackoff::DelayAfter(10));
  EXPECT_EQ(seconds(300), RepairBackoff::DelayAfter(1000000));  // no overflow
}

TEST(RepairBackoffTest, RecordThatNeverFailedIsAlwaysDue) {
  RepairBackoff b;
  EXPECT_TRUE(b.Due("staging /x", Clock::now()));
  EXPECT_FALSE(b.NextDue().has_value());
}

TEST(RepairBackoffTest, FailedRecordWaitsItsDelayAndOthersDoNot) {
  RepairBackoff b;
  const auto t0 = Clock::now();
  b.RecordFailure("staging", "staging /x", "NOT_FOUND", t0);
  EXPECT_FALSE(b.Due("staging /x", t0));
  EXPECT_TRUE(b.Due("staging /x", t0 + seconds(1)));
  EXPECT_TRUE(b.Due("staging /y", t0));
  b.RecordFailure("staging", "staging /x", "still", t0 + seconds(1));
  EXPECT_FALSE(b.Due("staging /x", t0 + seconds(2)));
  EXPECT_TRUE(b.Due("staging /x", t0 + seconds(3)));
  ASSERT_TRUE(b.NextDue().has_value());
  EXPECT_EQ(t0 + seconds(3), *b.NextDue());
}

TEST(RepairBackoffTest, TenFailuresInARowWaitFiveMinutes) {
  RepairBackoff b;
  auto t = Clock::now();
  for (int i = 0; i < 10; ++i) {
    b.RecordFailure("publication", "publication /p", "error " + std::to_string(i), t);
    t = *b.NextDue();
  }
  auto failing = b.Failing();
  ASSERT_EQ(1u, failing.size());
  EXPECT_EQ(10, failing[0].attempts);
  EXPECT_EQ("error 9", failing[0].last_error);
  EXPECT_EQ("publication", failing[0].kind);
  b.RecordFailure("publication", "publication /p", "again", t);
  EXPECT_EQ(t + seconds(300), *b.NextDue());
}

TEST(RepairBackoffTest, SuccessAndRetainForget) {
  RepairBackoff b;
  const auto t0 = Clock::now();
  b.RecordFailure("staging", "staging /a", "e", t0);
  b.RecordFailure("staging", "staging /b", "e", t0);
  b.RecordFailure("attachment", "attachment c", "e", t0);
  b.RecordSuccess("staging /a");
  EXPECT_TRUE(b.Due("staging /a", t0));
  b.Retain({"staging /b"});
  auto failing = b.Failing();
  ASSERT_EQ(1u, failing.size());
  EXPECT_EQ("staging /b", failing[0].key);
}

TEST(RepairBackoffTest, MetricCountsFailingRecordsByKind) {
  Metrics m;
  RepairBackoff b(&m);
  EXPECT_NE(std::string::npos,
            m.RenderPrometheusText().find("flexcsi_failing_repairs{kind=\"staging\"} 0\n"));
  const auto t0 = Clock::now();
  b.RecordFailure("staging", "staging /a", "e", t0);
  b.RecordFailure("staging", "staging /a", "e", t0);
  b.RecordFailure("staging", "staging /b", "e", t0);
  EXPECT_NE(std::string::npos,
            m.RenderPrometheusText().find("flexcsi_failing_repairs{kind=\"staging\"} 2\n"));
  b.Retain({});
  EXPECT_NE(std::string::npos,
            m.RenderPrometheusText().find("flexcsi_failing_repairs{kind=\"staging\"} 0\n"));
}

}  // namespace
}  // namespace flexcsi
