// The version of this build of flexcsi, one for every program: the number is the top-level
// CMakeLists.txt's project(flexcsi VERSION ...), the commit is git's at configure time
// (common/CMakeLists.txt). Every program's --version prints VersionLine(itself); the bridge
// also reports it in bridge.health and in flexcsi_bridge_build_info.
//
// No dependency beyond the standard library, so that flexexec can link it and stay small.
#pragma once

#include <optional>
#include <string>

namespace flexcsi {

// "0.2.0".
const char* FlexcsiVersion();
// The abbreviated commit the tree was configured at ("aa82685"), or "" for a build outside a
// git checkout (a source tarball) given no -DFLEXCSI_GIT_COMMIT.
const char* FlexcsiGitCommit();

// What --version prints, one line without the newline, the same shape for every program (as
// kubectl and the CSI sidecars print theirs):
//   "flexcsi-bridge 0.2.0 (git aa82685)"    or    "flexcsi-bridge 0.2.0 (no git commit)"
std::string VersionLine(const std::string& program);
// "0.2.0 (git aa82685)": VersionLine without the program, for reports that name it elsewhere.
std::string DescribeVersion(const std::string& version, const std::string& commit);

// The version and commit of a --version line (VersionLine's shape) from `program`; nothing for
// any other text, e.g. the FlexVolume reply a 0.1.0 flexexec prints for an unknown call.
struct VersionInfo {
  std::string version;  // "0.2.0"
  std::string commit;   // "aa82685", "" without one
};
std::optional<VersionInfo> ParseVersionLine(const std::string& program, const std::string& line);

// Orders "X.Y.Z" release numbers: negative, 0 or positive as a is older than, the same as or
// newer than b. Missing or unreadable parts count as 0.
int CompareVersions(const std::string& a, const std::string& b);

}  // namespace flexcsi
