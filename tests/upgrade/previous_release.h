// The previous release's flexexec and flexcsi-bridge, built from git history by
// build_release.sh (the commit named in CHANGELOG.md, cached per commit), for the tests that run
// it against the current tree's binaries.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace flexcsi {
namespace upgrade {

struct PreviousRelease {
  std::string version;  // "0.1.0 <full commit>", as the cache's VERSION file says
  std::string flexexec;
  std::string bridge;
};

// Runs build_release.sh on the source tree the test was built from (FLEXCSI_UPGRADE_REPO: another
// clone); a cache hit after the first run. Fails with the script's own line when CHANGELOG.md
// names no release or the commit is not in the history (a shallow clone).
::testing::AssertionResult FindPreviousRelease(PreviousRelease* release);

}  // namespace upgrade
}  // namespace flexcsi
