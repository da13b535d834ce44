// `flexcsi doctor` itself: runs the checks of every subject in the order a volume's life depends
// on them, and renders their rows as a table or JSON with the exit status.
#include "cli/doctor_command.h"

#include <unistd.h>

#include <optional>
#include <ostream>

#include <CLI/CLI.hpp>

#include "cli/doctor_rows.h"
#include "cli/install_driver_command.h"
#include "common/subcommand_args.h"
#include "common/text_table.h"

namespace flexcsi {

const char* CheckResultName(CheckResult r) {
  switch (r) {
    case CheckResult::kPass:
      return "PASS";
    case CheckResult::kWarn:
      return "WARN";
    case CheckResult::kFail:
      return "FAIL";
  }
  return "FAIL";
}

std::vector<DoctorCheck> RunDoctorChecks(const DoctorOptions& options) {
  std::vector<DoctorCheck> checks;
  auto loaded = BridgeConfig::LoadFile(options.config_path);
  if (!loaded.ok()) {
    checks.push_back(Fail("bridge configuration", loaded.status().message(),
                          "install the package's default or pass --config FILE"));
    return checks;
  }
  BridgeConfig config = *loaded;
  if (!options.socket.empty()) config.socket = options.socket;
  if (config.drivers.empty()) {
    checks.push_back(Fail("bridge configuration", options.config_path + ": no drivers",
                          "add a drivers: entry (see docs/operations.md)"));
  } else {
    checks.push_back(
        Pass("bridge configuration",
             options.config_path + ": " + std::to_string(config.drivers.size()) + " driver(s)"));
  }
  const std::string plugin_dir =
      options.plugin_dir.empty() ? std::string(kDefaultFlexPluginDir) : options.plugin_dir;
  std::vector<InstalledFlexexec> flexexecs;
  for (const auto& d : config.drivers) {
    checks.push_back(CheckDriverInstalled(plugin_dir, d, config.socket, options.config_path));
    const std::string exe = InstalledExecutable(plugin_dir, d);
    if (ValidateInstallableDriverName(d.flex_driver).ok() && access(exe.c_str(), X_OK) == 0) {
      flexexecs.push_back({d.flex_driver, exe, FlexexecVersion(exe),
                           ReinstallCommand(plugin_dir, d, options.config_path)});
    }
  }
  nlohmann::json health;
  const DoctorCheck socket = CheckBridgeSocket(config.socket, &health);
  checks.push_back(socket);
  std::optional<FoundVersion> bridge_version;
  if (socket.result != CheckResult::kFail) bridge_version = BridgeVersion(health);
  for (auto& c : CheckVersions(flexexecs, bridge_version)) checks.push_back(std::move(c));
  if (auto root = CheckKubeletRootAsTheBridgeSeesIt(health); root.has_value()) {
    checks.push_back(std::move(*root));
  }
  for (auto& c : CheckFailingRepairs(health)) checks.push_back(std::move(c));
  for (auto& c : CheckCsiEndpoints(config, health)) checks.push_back(std::move(c));
  for (auto& c : CheckDriverRegistrations(health)) checks.push_back(std::move(c));

  auto mounts = ReadMountInfo(options.mountinfo_path);
  if (config.kubelet_root.empty()) {  // kubeletRoot: none, the control-plane bridge
    checks.push_back(CheckStateDatabase(config.state_database));
    return checks;
  }
  if (!mounts.ok()) {
    checks.push_back(Fail("kubelet root propagation", mounts.status().message(),
                          "run doctor where /proc is mounted"));
  } else {
    checks.push_back(CheckKubeletRootPropagation(config.kubelet_root, *mounts));
  }
  checks.push_back(CheckStateDatabase(config.state_database));
  if (mounts.ok()) checks.push_back(CheckRecordsAgainstMounts(config, *mounts));
  return checks;
}

bool AllPassed(const std::vector<DoctorCheck>& checks) {
  for (const auto& c : checks) {
    if (c.result == CheckResult::kFail) return false;
  }
  return true;
}

void PrintDoctorTable(const std::vector<DoctorCheck>& checks, std::ostream& out) {
  TextTable table({"CHECK", "RESULT", "DETAIL"});
  int counts[3] = {0, 0, 0};
  for (const auto& c : checks) {
    table.AddRow({c.name, CheckResultName(c.result), c.detail});
    if (c.result != CheckResult::kPass && !c.fix.empty()) table.AddRow({"", "", "  fix: " + c.fix});
    ++counts[static_cast<int>(c.result)];
  }
  table.Print(out);
  out << "\n"
      << checks.size() << " checks: " << counts[0] << " pass, " << counts[1] << " warn, "
      << counts[2] << " fail\n";
}

int RunDoctorCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  DoctorOptions options;
  std::string output = "table";
  CLI::App app("Check this node's flexcsi installation end to end", "flexcsi doctor");
  app.add_option("--config", options.config_path, "bridge configuration")->capture_default_str();
  app.add_option("--plugin-dir", options.plugin_dir,
                 std::string("FlexVolume plugin dir (default ") + kDefaultFlexPluginDir + ")");
  app.add_option("--socket", options.socket, "bridge socket (default: from the configuration)");
  app.add_option("--mountinfo", options.mountinfo_path, "mount table to check against")
      ->capture_default_str();
  app.add_option("-o,--output", output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;

  const std::vector<DoctorCheck> checks = RunDoctorChecks(options);
  if (output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& c : checks) {
      j.push_back({{"check", c.name},
                   {"result", CheckResultName(c.result)},
                   {"detail", c.detail},
                   {"fix", c.fix}});
    }
    out << j.dump(2) << "\n";
  } else {
    PrintDoctorTable(checks, out);
  }
  return AllPassed(checks) ? 0 : 1;
}

}  // namespace flexcsi
