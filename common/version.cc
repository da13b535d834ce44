#include "common/version.h"

#include <cctype>
#include <sstream>

#include "common/build_version.h"

namespace flexcsi {

const char* FlexcsiVersion() { return FLEXCSI_BUILD_VERSION; }

const char* FlexcsiGitCommit() { return FLEXCSI_BUILD_GIT_COMMIT; }

std::string DescribeVersion(const std::string& version, const std::string& commit) {
  return version + (commit.empty() ? " (no git commit)" : " (git " + commit + ")");
}

std::string VersionLine(const std::string& program) {
  return program + " " + DescribeVersion(FlexcsiVersion(), FlexcsiGitCommit());
}

std::optional<VersionInfo> ParseVersionLine(const std::string& program, const std::string& line) {
  std::string text = line;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  const std::string prefix = program + " ";
  if (text.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t open = text.find(" (", prefix.size());
  if (open == std::string::npos || text.back() != ')') return std::nullopt;
  VersionInfo info;
  info.version = text.substr(prefix.size(), open - prefix.size());
  const std::string inside = text.substr(open + 2, text.size() - open - 3);
  if (info.version.empty() || !std::isdigit(static_cast<unsigned char>(info.version[0]))) {
    return std::nullopt;
  }
  if (inside.compare(0, 4, "git ") == 0 && inside.size() > 4) {
    info.commit = inside.substr(4);
  } else if (inside != "no git commit") {
    return std::nullopt;
  }
  return info;
}

int CompareVersions(const std::string& a, const std::string& b) {
  std::istringstream in_a(a), in_b(b);
  for (int part = 0; part < 3; ++part) {
    long x = 0, y = 0;
    in_a >> x;
    in_b >> y;
    if (x != y) return x < y ? -1 : 1;
    in_a.ignore(1, '.');  // the dot; a failed read above leaves the stream failed: 0 from now
    in_b.ignore(1, '.');
  }
  return 0;
}

}  // namespace flexcsi
