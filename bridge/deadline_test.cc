#include "bridge/deadline.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

TEST(DeadlineTest, BudgetIsWhatRemains) {
  const Deadline d = Deadline::In(milliseconds(60000));
  EXPECT_FALSE(d.expired());
  EXPECT_GT(d.remaining(), milliseconds(59000));
  EXPECT_LE(d.remaining(), milliseconds(60000));
  EXPECT_TRUE(Deadline::In(milliseconds(0)).expired());
  EXPECT_TRUE(Deadline::In(milliseconds(-5)).expired());
}

// Found by bridge_request_fuzz: a request's timeoutMs of 9e18 overflowed the clock arithmetic
// (undefined behaviour; in practice a deadline in the past, so the call failed at once). Any
// budget beyond the longest is the longest.
TEST(DeadlineTest, HugeBudgetIsTheLongestInsteadOfOverflowing) {
  for (milliseconds budget : {milliseconds(9000000000000000000), milliseconds::max(),
                              std::chrono::duration_cast<milliseconds>(Deadline::kLongestBudget)}) {
    const Deadline d = Deadline::In(budget);
    EXPECT_FALSE(d.expired()) << budget.count();
    EXPECT_GT(d.remaining(), Deadline::kLongestBudget - hours(1)) << budget.count();
    EXPECT_GT(d.ForGrpc(), std::chrono::system_clock::now() + hours(24)) << budget.count();
    EXPECT_FALSE(d.LeavingForRollback(RollbackReserve(d)).expired()) << budget.count();
  }
}

}  // namespace
}  // namespace flexcsi
