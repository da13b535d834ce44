#include "controller/resync_candidates.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

using Keys = std::vector<std::string>;

TEST(ResyncCandidates, FollowsEachObjectsLatestState) {
  ResyncCandidates candidates;
  candidates.Update("team-a/data", true);   // created Pending
  candidates.Update("team-b/logs", true);
  EXPECT_EQ(candidates.Keys(), (Keys{"team-a/data", "team-b/logs"}));
  candidates.Update("team-a/data", false);  // Bound: nothing more to do
  EXPECT_EQ(candidates.Keys(), (Keys{"team-b/logs"}));
  candidates.Update("team-a/data", true);   // grown: the resizer's again
  candidates.Update("team-a/data", true);   // repeated events keep one key
  EXPECT_EQ(candidates.Keys(), (Keys{"team-a/data", "team-b/logs"}));
  candidates.Update("team-b/logs", false);  // deleted
  candidates.Update("never-seen", false);
  EXPECT_EQ(candidates.Keys(), (Keys{"team-a/data"}));
}

}  // namespace
}  // namespace flexcsi::controller
