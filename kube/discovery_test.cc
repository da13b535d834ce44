// /version as real API servers and distributions write it.
#include "kube/discovery.h"

#include <gtest/gtest.h>

namespace flexcsi::kube {
namespace {

TEST(ParseServerVersionTest, ReadsUpstreamAndDistributionMinors) {
  auto v110 = ParseServerVersion({{"major", "1"}, {"minor", "10"}, {"gitVersion", "v1.10.6"}});
  ASSERT_TRUE(v110.ok()) << v110.status().ToString();
  EXPECT_EQ(1, v110->major);
  EXPECT_EQ(10, v110->minor);
  EXPECT_EQ("v1.10.6", v110->git_version);
  EXPECT_FALSE(v110->AtLeast(1, 13));
  EXPECT_TRUE(v110->AtLeast(1, 10));

  auto gke = ParseServerVersion({{"major", "1"}, {"minor", "13+"}, {"gitVersion", "v1.13.12-gke.2"}});
  ASSERT_TRUE(gke.ok());
  EXPECT_EQ(13, gke->minor);
  EXPECT_TRUE(gke->AtLeast(1, 13));
  const ServerVersion two{2, 0, ""};
  EXPECT_TRUE(two.AtLeast(1, 24));
}

TEST(ParseServerVersionTest, RefusesAnAnswerWithoutNumbers) {
  const nlohmann::json no_major = {{"major", ""}, {"minor", "10"}};
  const nlohmann::json no_minor = {{"major", "1"}};
  EXPECT_FALSE(ParseServerVersion(no_major).ok());
  EXPECT_FALSE(ParseServerVersion(no_minor).ok());
  EXPECT_FALSE(ParseServerVersion(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace flexcsi::kube
