// Which clusters `flexcsi migrate apply` moves PVs on.
#include "migrate/cluster_support.h"

#include <gtest/gtest.h>

namespace flexcsi::migrate {
namespace {

TEST(CsiPvsMountableTest, RefusesClustersBefore113WithTheReason) {
  Status old = CheckCsiPvsMountable({1, 10, "v1.10.6"});
  ASSERT_EQ(Code::kFailedPrecondition, old.code());
  EXPECT_NE(std::string::npos, old.message().find("v1.10.6"));
  EXPECT_NE(std::string::npos, old.message().find("cannot mount CSI PVs"));
  EXPECT_NE(std::string::npos, old.message().find("Nothing was written"));
  const kube::ServerVersion v112{1, 12, ""};
  EXPECT_FALSE(CheckCsiPvsMountable(v112).ok());
}

TEST(CsiPvsMountableTest, MovesOn113AndLater) {
  for (const kube::ServerVersion& v : {kube::ServerVersion{1, 13, "v1.13.0"},
                                       kube::ServerVersion{1, 24, "v1.24.0"},
                                       kube::ServerVersion{2, 0, ""}}) {
    EXPECT_TRUE(CheckCsiPvsMountable(v).ok()) << v.git_version;
  }
}

}  // namespace
}  // namespace flexcsi::migrate
