// Doctor's release checks: which release each installed flexexec and the running bridge are,
// and the skew between them an unfinished upgrade leaves.
#include "cli/doctor_command.h"

#include "cli/doctor_rows.h"
#include "common/command_runner.h"
#include "common/version.h"

namespace flexcsi {

FoundVersion FlexexecVersion(const std::string& exe) {
  auto run = RunCommandCapture({exe, "--version"}, std::chrono::seconds(10));
  // Taken for older than any release, so that the skew row asks for a reinstall.
  if (!run.ok()) return {"unknown", "unknown (" + run.status().message() + ")"};
  if (run->exit_code == 0) {
    if (auto info = ParseVersionLine("flexexec", run->stdout_text); info.has_value()) {
      return {info->version, DescribeVersion(info->version, info->commit)};
    }
  }
  // 0.1.0 answers --version as a FlexVolume call it does not know ({"status":"Not supported"}).
  return {kLastReleaseWithoutVersion,
          std::string(kLastReleaseWithoutVersion) + " or older (no --version)"};
}

FoundVersion BridgeVersion(const nlohmann::json& health) {
  const auto build = health.find("build");
  if (build == health.end() || !build->is_object() || !build->contains("version")) {
    return {kLastReleaseWithoutVersion,
            "unknown (older than " + std::string(kFirstReleaseWithVersion) + ")"};
  }
  const std::string version = build->value("version", std::string("?"));
  return {version, DescribeVersion(version, build->value("commit", std::string()))};
}

std::vector<DoctorCheck> CheckVersions(const std::vector<InstalledFlexexec>& flexexecs,
                                       const std::optional<FoundVersion>& bridge) {
  std::vector<DoctorCheck> checks;
  for (const auto& f : flexexecs) {
    checks.push_back(Pass("flexexec version " + f.driver, f.found.shown + ": " + f.path));
  }
  if (!bridge.has_value()) return checks;  // the bridge socket check says why
  checks.push_back(Pass("bridge version", bridge->shown));
  if (flexexecs.empty()) return checks;

  std::vector<std::string> differences, reinstalls;
  bool bridge_older = false;
  for (const auto& f : flexexecs) {
    const int order = CompareVersions(f.found.version, bridge->version);
    if (order == 0) continue;
    differences.push_back("flexexec " + f.found.version + " (" + f.driver + ") and bridge " +
                          bridge->version + " differ");
    if (order < 0) reinstalls.push_back(f.reinstall);
    bridge_older = bridge_older || order > 0;
  }
  const std::string name = "version skew";
  if (differences.empty()) {
    checks.push_back(Pass(name, "flexexec and bridge are both " + bridge->version));
    return checks;
  }
  std::vector<std::string> fixes;
  if (!reinstalls.empty()) {
    fixes.push_back("finish the upgrade: " + Join(reinstalls, "; ") +
                    " (in Kubernetes the flexcsi-node pod's install-driver does it when the pod "
                    "starts)");
  }
  if (bridge_older) {
    fixes.push_back(
        "restart the bridge on the new release (systemctl restart flexcsi-bridge, or "
        "let the flexcsi-node DaemonSet roll)");
  }
  checks.push_back(Warn(name,
                        Join(differences, "; ") +
                            ": kubelet runs this flexexec against this bridge; neighbouring "
                            "releases work together while an upgrade rolls out (docs/"
                            "operations.md, Versions), not as a state to stay in",
                        Join(fixes, "; ")));
  return checks;
}

}  // namespace flexcsi
