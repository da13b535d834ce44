// `flexcsi doctor`: checks one node end to end and prints a table, one row per check, with a
// fix hint under every failure. The exit status says whether everything needed passed.
//
// Checks, in the order a volume's life depends on them:
//   bridge configuration       the YAML parses and names drivers
//   driver <d> installed       <plugindir>/<vendor~name>/<name> is a 0755 regular file, not
//                              writable by others; flexcsi.json parses and agrees with the
//                              bridge configuration; `<exe> init` answers Success
//   bridge socket              `bridge.health` answers over the socket
//   flexexec version <d>       what `<exe> --version` says (0.1.0's has none: "0.1.0 or older")
//   bridge version             the running bridge's, from bridge.health ("unknown (older than
//                              0.2.0)" when it does not say)
//   version skew               WARN when a flexexec and the bridge are of different releases,
//                              with what finishes the upgrade
//   repair <record>            a record whose undo keeps failing, retried with backoff (WARN)
//   CSI endpoint <d>           the wrapped driver is Probe-ready; its capabilities are listed,
//                              and an attachable driver whose controller cannot publish is flagged
//   kubelet root propagation   the mount holding kubeletRoot is shared, so mounts the bridge
//                              makes are seen by kubelet and pods
//   state database             SQLite quick_check passes and the schema version is known
//   records vs mount table     every staged/published record is a mount point; no flexcsi
//                              pod volume is mounted without a record
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "common/status.h"

namespace flexcsi {

enum class CheckResult { kPass, kWarn, kFail };
const char* CheckResultName(CheckResult r);  // "PASS", "WARN", "FAIL"

struct DoctorCheck {
  std::string name;
  CheckResult result = CheckResult::kPass;
  std::string detail;
  std::string fix;  // what to do about a WARN or FAIL
};

// One line of a mountinfo file, reduced to what doctor needs.
struct MountInfoLine {
  std::string mount_point;                   // unescaped (\040 -> ' ')
  std::vector<std::string> optional_fields;  // "shared:1", "master:2", ...
};
StatusOr<std::vector<MountInfoLine>> ReadMountInfo(const std::string& path);

// The individual checks; each is usable alone (and tested alone).
DoctorCheck CheckDriverInstalled(const std::string& plugin_dir, const DriverConfig& driver,
                                 const std::string& expected_socket,
                                 const std::string& config_path);
// Asks the bridge for bridge.health; *health receives the reply ("" object on failure).
DoctorCheck CheckBridgeSocket(const std::string& socket, nlohmann::json* health);
// Releases as doctor finds them. 0.2.0 is the first release whose programs tell their version;
// a program that tells none is taken for the release before it.
inline constexpr const char* kFirstReleaseWithVersion = "0.2.0";
inline constexpr const char* kLastReleaseWithoutVersion = "0.1.0";
struct FoundVersion {
  std::string version;  // "0.2.0", compared with CompareVersions (common/version.h)
  std::string shown;    // "0.2.0 (git aa82685)", "0.1.0 or older (no --version)", ...
};
// Runs `<exe> --version`.
FoundVersion FlexexecVersion(const std::string& exe);
// The "build" of a bridge.health reply (added in 0.2.0).
FoundVersion BridgeVersion(const nlohmann::json& health);
struct InstalledFlexexec {
  std::string driver;     // "vendor/name"
  std::string path;       // <plugindir>/<vendor~name>/<name>
  FoundVersion found;
  std::string reinstall;  // the install-driver command that replaces it with this release's
};
// The path kubelet runs for `driver`: <plugindir>/<vendor~name>/<name>.
std::string InstalledExecutable(const std::string& plugin_dir, const DriverConfig& driver);
// What puts this flexcsi's flexexec and flexcsi.json into the plugin dir for `driver`.
std::string ReinstallCommand(const std::string& plugin_dir, const DriverConfig& driver,
                             const std::string& config_path);
// "flexexec version <d>" for each, then, when the bridge answered, "bridge version" and
// "version skew" (PASS when every flexexec is of the bridge's release, else one WARN naming
// each pair and what finishes the upgrade).
std::vector<DoctorCheck> CheckVersions(const std::vector<InstalledFlexexec>& flexexecs,
                                       const std::optional<FoundVersion>& bridge);
// The bridge's own view of its kubeletRoot (health's kubeletRoot: kubelet's pods/ and plugins/
// there or not); nothing when the bridge does not report it.
std::optional<DoctorCheck> CheckKubeletRootAsTheBridgeSeesIt(const nlohmann::json& health);
// One WARN row per record whose undo keeps failing (health's failingRepairs), naming the
// record, its attempts and last error; nothing when there is none.
std::vector<DoctorCheck> CheckFailingRepairs(const nlohmann::json& health);
// One row per configured driver; uses the health reply when there is one.
std::vector<DoctorCheck> CheckCsiEndpoints(const BridgeConfig& config,
                                           const nlohmann::json& health);
// One row per CSI driver the bridge registers on the Node and CSINode (node_registrar.h), from
// the health reply: pass when registered or turned off in the configuration; warn without a
// node name or cluster access, or while the driver does not answer; fail when the cluster
// refused it (the reason, e.g. a topology label collision, is in the detail).
std::vector<DoctorCheck> CheckDriverRegistrations(const nlohmann::json& health);
DoctorCheck CheckKubeletRootPropagation(const std::string& kubelet_root,
                                        const std::vector<MountInfoLine>& mounts);
DoctorCheck CheckStateDatabase(const std::string& path);
DoctorCheck CheckRecordsAgainstMounts(const BridgeConfig& config,
                                      const std::vector<MountInfoLine>& mounts);

struct DoctorOptions {
  std::string config_path = kDefaultBridgeConfigPath;
  std::string plugin_dir;  // default: kubelet's default plugin dir
  std::string socket;      // default: from the configuration
  std::string mountinfo_path = "/proc/self/mountinfo";
};

std::vector<DoctorCheck> RunDoctorChecks(const DoctorOptions& options);
void PrintDoctorTable(const std::vector<DoctorCheck>& checks, std::ostream& out);
bool AllPassed(const std::vector<DoctorCheck>& checks);  // no FAIL (warnings allowed)

// Exit status 0 when no check failed, 1 otherwise, 2 on a usage error.
int RunDoctorCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace flexcsi
