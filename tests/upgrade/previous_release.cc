#include "tests/upgrade/previous_release.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace flexcsi {
namespace upgrade {

::testing::AssertionResult FindPreviousRelease(const std::vector<std::string>& binaries,
                                               PreviousRelease* release) {
  // stderr (the script's progress and its one-line refusals) goes to the test's output; stdout
  // is the cache directory.
  std::string command = std::string("'") + BUILD_RELEASE_SCRIPT + "' '" + FLEXCSI_SOURCE_DIR + "'";
  for (const std::string& binary : binaries) command += " " + binary;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return ::testing::AssertionFailure() << "cannot run " << command;
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    return ::testing::AssertionFailure() << "the previous release could not be built (" << command
                                         << " failed; its reason is printed above)";
  }
  std::istringstream lines(out);
  std::string dir;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) dir = line;
  }
  std::ifstream version(dir + "/VERSION");
  std::getline(version, release->version);
  release->bin_dir = dir + "/bin";
  return ::testing::AssertionSuccess();
}

}  // namespace upgrade
}  // namespace flexcsi
