// Doctor's checks of the FlexVolume plugin dir: the flexexec kubelet runs for each driver, its
// mode, its flexcsi.json and its answer to init.
#include "cli/doctor_command.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "cli/doctor_rows.h"
#include "cli/install_driver_command.h"
#include "common/bridge_protocol.h"
#include "common/command_runner.h"

namespace flexcsi {

std::string ReinstallCommand(const std::string& plugin_dir, const DriverConfig& driver,
                             const std::string& config_path) {
  return "flexcsi install-driver --driver " + driver.flex_driver + " --plugin-dir " + plugin_dir +
         " --config " + config_path;
}

std::string InstalledExecutable(const std::string& plugin_dir, const DriverConfig& driver) {
  return plugin_dir + "/" + DriverDirectoryName(driver.flex_driver) + "/" +
         DriverExecutableName(driver.flex_driver);
}

DoctorCheck CheckDriverInstalled(const std::string& plugin_dir, const DriverConfig& driver,
                                 const std::string& expected_socket,
                                 const std::string& config_path) {
  const std::string name = "driver " + driver.flex_driver + " installed";
  const std::string reinstall = ReinstallCommand(plugin_dir, driver, config_path);
  if (Status s = ValidateInstallableDriverName(driver.flex_driver); !s.ok()) {
    return Fail(name, s.message(), "rename the driver in " + config_path + " to vendor/name");
  }
  const std::string dir = plugin_dir + "/" + DriverDirectoryName(driver.flex_driver);
  const std::string exe = InstalledExecutable(plugin_dir, driver);
  struct stat st {};
  if (lstat(exe.c_str(), &st) != 0) return Fail(name, exe + " is missing", reinstall);
  if (!S_ISREG(st.st_mode)) return Fail(name, exe + " is not a regular file", reinstall);
  const unsigned mode = st.st_mode & 07777;
  std::ostringstream mode_text;
  mode_text << '0' << std::oct << mode;
  if ((mode & 0111) != 0111) {
    return Fail(name, exe + " has mode " + mode_text.str() + ", not executable by all",
                "chmod 0755 " + exe);
  }
  if ((mode & 0022) != 0) {
    return Fail(name, exe + " has mode " + mode_text.str() + ": others may rewrite what root runs",
                "chmod 0755 " + exe);
  }
  std::ifstream in(dir + "/flexcsi.json");
  nlohmann::json config;
  try {
    in >> config;
  } catch (const nlohmann::json::exception&) {
    return Fail(name, dir + "/flexcsi.json is missing or not JSON", reinstall);
  }
  const bool attach = config.value("/capabilities/attach"_json_pointer, true);
  if (attach != driver.attach) {
    return Fail(name,
                std::string("flexcsi.json says attach=") + (attach ? "true" : "false") + " but " +
                    config_path + " says attach=" + (driver.attach ? "true" : "false"),
                reinstall);
  }
  const std::string socket = config.value("bridgeSocket", std::string(kDefaultBridgeSocket));
  if (socket != expected_socket) {
    return Fail(
        name,
        "flexcsi.json points at socket " + socket + ", the bridge listens on " + expected_socket,
        reinstall);
  }
  auto init = RunCommandCapture({exe, "init"}, std::chrono::seconds(10));
  if (!init.ok())
    return Fail(name, "cannot run " + exe + " init: " + init.status().message(), reinstall);
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(init->stdout_text);
  } catch (const nlohmann::json::exception&) {
  }
  if (!reply.is_object() || reply.value("status", "") != "Success") {
    return Fail(name, exe + " init answered: " + init->stdout_text + init->stderr_text,
                reinstall + " (kubelet does not load a driver whose init fails)");
  }
  return Pass(name, exe + " (" + mode_text.str() +
                        "), init: Success, attach=" + (attach ? "true" : "false"));
}

}  // namespace flexcsi
