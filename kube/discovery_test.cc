// ParseServerVersion against the /version answers of real servers (upstream, distributions that
// decorate the version) and answers that are not versions.
#include "kube/discovery.h"

#include <gtest/gtest.h>

namespace flexcsi::kube {
namespace {

TEST(ServerVersionTest, ReadsUpstreamGitVersion) {
  // kube-apiserver v1.10.6's own answer (major/minor agree with gitVersion).
  auto v = ParseServerVersion(
      {{"major", "1"}, {"minor", "10"}, {"gitVersion", "v1.10.6"}, {"platform", "linux/amd64"}});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 10);
  EXPECT_EQ(v->Describe(), "v1.10.6");
  EXPECT_TRUE(v->AtLeast(1, 10));
  EXPECT_FALSE(v->AtLeast(1, 11));
  EXPECT_FALSE(v->AtLeast(1, 13));
  EXPECT_TRUE(v->AtLeast(1, 9));
}

TEST(ServerVersionTest, ReadsDecoratedVersions) {
  auto gke = ParseServerVersion({{"major", "1"}, {"minor", "24+"}, {"gitVersion", "v1.24.17-gke.100"}});
  ASSERT_TRUE(gke.ok());
  EXPECT_EQ(gke->minor, 24);
  // No usable gitVersion: major/minor with the "+" some distributions add.
  auto plus = ParseServerVersion({{"major", "1"}, {"minor", "12+"}, {"gitVersion", "unknown"}});
  ASSERT_TRUE(plus.ok());
  EXPECT_EQ(plus->major, 1);
  EXPECT_EQ(plus->minor, 12);
  EXPECT_TRUE(plus->AtLeast(1, 11));
  EXPECT_FALSE(plus->AtLeast(1, 13));
}

TEST(ServerVersionTest, RefusesAnswersThatAreNoVersion) {
  EXPECT_FALSE(ParseServerVersion(nlohmann::json::array()).ok());
  EXPECT_FALSE(ParseServerVersion({{"gitVersion", "latest"}}).ok());
  EXPECT_FALSE(ParseServerVersion({{"major", ""}, {"minor", ""}}).ok());
}

TEST(ServerVersionTest, UnknownVersionCountsAsCurrent) {
  ServerVersion unknown;
  EXPECT_FALSE(unknown.known());
  EXPECT_TRUE(unknown.AtLeast(1, 30));
  EXPECT_EQ(unknown.Describe(), "an unknown version");
}

}  // namespace
}  // namespace flexcsi::kube
