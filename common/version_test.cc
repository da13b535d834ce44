#include "common/version.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(VersionTest, VersionLineReadsBackAsThisBuild) {
  const auto info = ParseVersionLine("flexcsi-bridge", VersionLine("flexcsi-bridge") + "\n");
  ASSERT_TRUE(info.has_value()) << VersionLine("flexcsi-bridge");
  EXPECT_EQ(info->version, FlexcsiVersion());
  EXPECT_EQ(info->commit, FlexcsiGitCommit());
}

TEST(VersionTest, DescribeSaysWhenThereIsNoCommit) {
  EXPECT_EQ(DescribeVersion("0.2.0", "aa82685"), "0.2.0 (git aa82685)");
  EXPECT_EQ(DescribeVersion("0.2.0", ""), "0.2.0 (no git commit)");
  const auto info = ParseVersionLine("flexexec", "flexexec 0.2.0 (no git commit)");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->version, "0.2.0");
  EXPECT_EQ(info->commit, "");
}

TEST(VersionTest, AnythingElseIsNoVersionLine) {
  // What 0.1.0's flexexec prints for a call it does not know, --version included.
  EXPECT_FALSE(ParseVersionLine("flexexec", "{\"status\":\"Not supported\"}\n").has_value());
  EXPECT_FALSE(ParseVersionLine("flexexec", "flexcsi 0.2.0 (git aa82685)").has_value());
  EXPECT_FALSE(ParseVersionLine("flexexec", "flexexec 0.2.0").has_value());
  EXPECT_FALSE(ParseVersionLine("flexexec", "flexexec (git aa82685)").has_value());
  EXPECT_FALSE(ParseVersionLine("flexexec", "flexexec 0.2.0 (svn 12)").has_value());
  EXPECT_FALSE(ParseVersionLine("flexexec", "").has_value());
}

TEST(VersionTest, ComparesReleaseNumbersPartByPart) {
  EXPECT_LT(CompareVersions("0.1.0", "0.2.0"), 0);
  EXPECT_GT(CompareVersions("0.10.0", "0.9.3"), 0);
  EXPECT_EQ(CompareVersions("1.2.3", "1.2.3"), 0);
  EXPECT_EQ(CompareVersions("1.2", "1.2.0"), 0);
  EXPECT_LT(CompareVersions("", "0.0.1"), 0);
}

}  // namespace
}  // namespace flexcsi
