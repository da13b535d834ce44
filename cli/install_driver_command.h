// `flexcsi install-driver` and `flexcsi uninstall-driver`: put a FlexVolume driver backed by the
// bridge into a kubelet (or kube-controller-manager) plugin directory, and take it out again.
//
// Layout produced (flexvolume.md section 1.1, bridge-interfaces.md section 2):
//   <plugin_dir>/<vendor>~<name>/<name>          a copy of flexexec, mode 0755
//   <plugin_dir>/<vendor>~<name>/flexcsi.json    capabilities, socket, deadlines for `init`
//
// kubelet watches the plugin directory and re-runs `init` on every file event inside a driver
// directory, possibly while a file is still being written. So every file is written under a
// hidden name (kubelet ignores names starting with '.') in the same directory, synced, and then
// renamed over the final name: kubelet only ever sees a complete file. flexcsi.json goes in
// before the executable, so the first `init` already finds its configuration. Files whose
// content is already right are left alone, so a repeated install causes no re-probe at all.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

// kubelet's --volume-plugin-dir and kube-controller-manager's --flex-volume-plugin-dir default.
inline constexpr const char* kDefaultFlexPluginDir =
    "/usr/libexec/kubernetes/kubelet-plugins/volume/exec";
// Where the .deb and the container image put flexexec.
inline constexpr const char* kPackagedFlexexecPath = "/usr/lib/flexcsi/flexexec";

// Checks a FlexVolume driver name for install: exactly "vendor/name", each part non-empty,
// made of [A-Za-z0-9._-], and not starting with '.' (kubelet skips hidden directories, and
// "." / ".." would escape the plugin directory). INVALID_ARGUMENT says which rule failed.
Status ValidateInstallableDriverName(const std::string& driver);

// "vendor/name" -> "vendor~name" (the driver directory) and "name" (the executable).
// REQUIRES: ValidateInstallableDriverName(driver).ok()
std::string DriverDirectoryName(const std::string& driver);
std::string DriverExecutableName(const std::string& driver);

struct InstallDriverOptions {
  std::string driver;  // "vendor/name"
  std::string plugin_dir = kDefaultFlexPluginDir;
  std::string flexexec_source;  // the flexexec binary to copy; must exist
  // flexcsi.json content (bridge-interfaces.md section 2).
  bool attach = true;
  bool selinux_relabel = true;
  bool supports_metrics = true;
  bool fs_group = true;
  bool requires_fs_resize = true;
  std::string bridge_socket = "/run/flexcsi/bridge.sock";
  int timeout_default_seconds = 120;
  int timeout_isattached_seconds = 30;
  int timeout_waitforattach_seconds = 540;  // kubelet kills waitforattach at 600 s
  // Run the installed `<exe> init` and require {"status":"Success"} matching the capabilities.
  bool verify = true;
};

// The flexcsi.json object for `options`.
nlohmann::json FlexexecConfigJson(const InstallDriverOptions& options);

// What an install or uninstall did, for the command's output.
struct InstallReport {
  std::vector<std::string> actions;  // "wrote /x/flexcsi~loop/flexcsi.json", "unchanged ..."
  std::string init_reply;            // the verified `init` output, if verify ran
};

// Installs the driver; idempotent. Creates the plugin directory if missing (kubelet would).
StatusOr<InstallReport> InstallDriver(const InstallDriverOptions& options);

// Removes the executable (first: kubelet unregisters the driver on its removal), flexcsi.json,
// and the driver directory when it is then empty. Missing pieces are not an error. Refuses to
// delete a directory that holds files flexcsi did not put there, and says which.
StatusOr<InstallReport> UninstallDriver(const std::string& driver, const std::string& plugin_dir);

// The flexexec to copy when --flexexec is not given: kPackagedFlexexecPath if it exists, else
// "flexexec" beside the running flexcsi binary (`self_exe`, normally /proc/self/exe). "" when
// neither exists.
std::string DefaultFlexexecSource(const std::string& self_exe);

// Entry points of the subcommands; `args` are the words after the subcommand name.
// Exit status 0 on success, 1 on failure, 2 on a usage error.
int RunInstallDriverCommand(const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err);
int RunUninstallDriverCommand(const std::vector<std::string>& args, std::ostream& out,
                              std::ostream& err);

}  // namespace flexcsi
