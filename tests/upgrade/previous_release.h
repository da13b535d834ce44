// The previous release's binaries, built from git history by build_release.sh (the commit named in
// CHANGELOG.md, cached per commit), for the tests that run it against the current tree's binaries.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace flexcsi {
namespace upgrade {

struct PreviousRelease {
  std::string version;  // "0.1.0 <full commit>", as the cache's VERSION file says
  std::string bin_dir;
  std::string Binary(const std::string& name) const { return bin_dir + "/" + name; }
};

// Runs build_release.sh for `binaries` on the source tree the test was built from
// (FLEXCSI_UPGRADE_REPO: another clone); a cache hit after the first run. Fails with the
// script's own line when CHANGELOG.md names no release or the commit is not in the history (a
// shallow clone).
::testing::AssertionResult FindPreviousRelease(const std::vector<std::string>& binaries,
                                               PreviousRelease* release);

}  // namespace upgrade
}  // namespace flexcsi
