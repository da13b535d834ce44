#include "cli/doctor_command.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/install_driver_command.h"
#include "common/bridge_client.h"
#include "common/command_runner.h"
#include "common/subcommand_args.h"
#include "common/text_table.h"
#include "common/version.h"

namespace flexcsi {

namespace {

// The state database's user_version this flexcsi reads; version 1 (before stagings had a shape)
// is still read, the bridge migrates it when it opens the database.
constexpr int kKnownSchemaVersion = 2;

DoctorCheck Pass(std::string name, std::string detail) {
  return {std::move(name), CheckResult::kPass, std::move(detail), ""};
}
DoctorCheck Warn(std::string name, std::string detail, std::string fix) {
  return {std::move(name), CheckResult::kWarn, std::move(detail), std::move(fix)};
}
DoctorCheck Fail(std::string name, std::string detail, std::string fix) {
  return {std::move(name), CheckResult::kFail, std::move(detail), std::move(fix)};
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

// mountinfo escapes space, tab, newline and backslash as \ooo octal.
std::string UnescapeOctal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// True when `path` is `dir` or lies below it (lexically).
bool IsAtOrBelow(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::string StripTrailingSlash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// realpath(path), or path itself when it cannot be resolved (e.g. it no longer exists).
std::string CanonicalIfExists(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// A read-only handle on the state database; never creates it.
class ReadOnlyDatabase {
 public:
  explicit ReadOnlyDatabase(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      error_ = db_ ? sqlite3_errmsg(db_) : "out of memory";
    }
  }
  ~ReadOnlyDatabase() { sqlite3_close(db_); }
  const std::string& error() const { return error_; }

  // Runs `sql` and returns every row as strings (NULL as "").
  StatusOr<std::vector<std::vector<std::string>>> Query(const std::string& sql) {
    if (!error_.empty()) return Unavailable(error_);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      return Internal(sqlite3_errmsg(db_));
    }
    std::vector<std::vector<std::string>> rows;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const unsigned char* text = sqlite3_column_text(stmt, i);
        row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
      }
      rows.push_back(std::move(row));
    }
    const std::string message = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return Internal(message);
    return rows;
  }

 private:
  sqlite3* db_ = nullptr;
  std::string error_;
};

// What puts this flexcsi's flexexec and flexcsi.json into the plugin dir for `driver`.
std::string ReinstallCommand(const std::string& plugin_dir, const DriverConfig& driver,
                             const std::string& config_path) {
  return "flexcsi install-driver --driver " + driver.flex_driver + " --plugin-dir " + plugin_dir +
         " --config " + config_path;
}

// The path kubelet runs for `driver`: <plugindir>/<vendor~name>/<name>.
std::string InstalledExecutable(const std::string& plugin_dir, const DriverConfig& driver) {
  return plugin_dir + "/" + DriverDirectoryName(driver.flex_driver) + "/" +
         DriverExecutableName(driver.flex_driver);
}

}  // namespace

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

StatusOr<std::vector<MountInfoLine>> ReadMountInfo(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::vector<MountInfoLine> mounts;
  std::string line;
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    std::string word;
    while (fields >> word) f.push_back(word);
    if (f.size() < 7) continue;
    MountInfoLine m;
    m.mount_point = UnescapeOctal(f[4]);
    for (size_t i = 6; i < f.size() && f[i] != "-"; ++i) m.optional_fields.push_back(f[i]);
    mounts.push_back(std::move(m));
  }
  return mounts;
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

DoctorCheck CheckBridgeSocket(const std::string& socket, nlohmann::json* health) {
  *health = nlohmann::json::object();
  const std::string name = "bridge socket";
  BridgeRequest request;
  request.call = "bridge.health";
  request.timeout_ms = 10000;
  auto envelope = CallBridgeRaw(socket, request, std::chrono::seconds(2), std::chrono::seconds(10));
  if (!envelope.ok()) {
    return Fail(name, socket + ": " + envelope.status().message(),
                "start the bridge: systemctl status flexcsi-bridge, or kubectl -n flexcsi get "
                "pods (bridge container of flexcsi-node)");
  }
  *health = envelope->value("reply", nlohmann::json::object());
  if (health->value("status", "") != "Success") {
    return Fail(name, "bridge.health answered " + health->dump(), "see the bridge's log");
  }
  std::string detail = socket + ": healthy";
  const int pending = health->value("pendingRollbacks", 0);
  if (pending > 0) {
    return Warn(name, detail + ", " + std::to_string(pending) + " rollback(s) pending",
                "the bridge retries rollbacks itself; see its log if the number stays up");
  }
  return Pass(name, detail);
}

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
    fixes.push_back("restart the bridge on the new release (systemctl restart flexcsi-bridge, or "
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

std::optional<DoctorCheck> CheckKubeletRootAsTheBridgeSeesIt(const nlohmann::json& health) {
  const auto root = health.find("kubeletRoot");
  if (root == health.end() || !root->is_object()) return std::nullopt;
  const std::string name = "kubelet root";
  const std::string path = root->value("path", std::string("?"));
  if (root->value("ok", false)) return Pass(name, path + ": has kubelet's pods/ and plugins/");
  return Fail(name, root->value("message", std::string("?")),
              "set kubeletRoot to kubelet's --root-dir (ps -o args= -C kubelet | tr ' ' '\\n' | "
              "grep root-dir; default /var/lib/kubelet), then restart the bridge");
}

std::vector<DoctorCheck> CheckFailingRepairs(const nlohmann::json& health) {
  std::vector<DoctorCheck> checks;
  const auto failing = health.find("failingRepairs");
  if (failing == health.end() || !failing->is_array()) return checks;
  for (const auto& r : *failing) {
    if (!r.is_object()) continue;
    const int attempts = r.value("attempts", 0);
    checks.push_back(
        Warn("repair " + r.value("record", std::string("?")),
             "undo failed " + std::to_string(attempts) + (attempts == 1 ? " time" : " times") +
                 ", next attempt in " + std::to_string(r.value("nextAttemptSeconds", int64_t{0})) +
                 " s; last error: " + r.value("lastError", std::string("?")),
             "the bridge retries it with backoff (up to every 5 minutes); fix what the last error "
             "names (often the CSI driver: see its log), then watch the row go away"));
  }
  return checks;
}

std::vector<DoctorCheck> CheckCsiEndpoints(const BridgeConfig& config,
                                           const nlohmann::json& health) {
  std::map<std::string, nlohmann::json> by_driver;
  if (health.contains("drivers") && health["drivers"].is_array()) {
    for (const auto& d : health["drivers"]) by_driver[d.value("flexDriver", "")] = d;
  }
  std::vector<DoctorCheck> checks;
  for (const auto& driver : config.drivers) {
    const std::string name = "CSI endpoint " + driver.flex_driver;
    const auto it = by_driver.find(driver.flex_driver);
    if (it == by_driver.end()) {
      // No word from the bridge: say what can be seen from here.
      const std::string path = driver.CsiSocketPath();
      struct stat st {};
      const bool exists = !path.empty() && stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
      checks.push_back(Fail(name,
                            driver.csi_endpoint +
                                (exists ? " exists but was not probed" : " does not exist") +
                                " (the bridge did not report this driver)",
                            exists ? "fix the bridge socket check first"
                                   : "start the CSI driver's node plugin (sidecar of the bridge "
                                     "pod, or its own service) listening on " +
                                         driver.csi_endpoint));
      continue;
    }
    const nlohmann::json& d = it->second;
    std::vector<std::string> node_caps, controller_caps;
    for (const auto& c : d.value("nodeCapabilities", nlohmann::json::array())) {
      node_caps.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
    for (const auto& c : d.value("controllerCapabilities", nlohmann::json::array())) {
      controller_caps.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
    const std::string caps =
        "node: " + (node_caps.empty() ? "-" : Join(node_caps, ",")) +
        "; controller: " + (controller_caps.empty() ? "-" : Join(controller_caps, ","));
    const std::string csi = d.value("csiDriver", driver.CsiDriver());
    if (!d.value("ready", false)) {
      checks.push_back(Fail(name,
                            csi + " at " + d.value("endpoint", driver.csi_endpoint) +
                                " not ready: " + d.value("message", std::string("?")),
                            "check the CSI driver's logs; Probe must answer ready=true"));
      continue;
    }
    bool can_publish = false;
    for (const auto& c : controller_caps)
      can_publish |= c.find("PUBLISH_UNPUBLISH") != std::string::npos;
    if (driver.attach && !controller_caps.empty() && !can_publish) {
      checks.push_back(Warn(name, csi + " ready; " + caps,
                            "attach: true but the controller cannot publish; set attach: false "
                            "and reinstall the driver with --no-attach"));
      continue;
    }
    checks.push_back(Pass(name, csi + " ready; " + caps));
  }
  return checks;
}

std::vector<DoctorCheck> CheckDriverRegistrations(const nlohmann::json& health) {
  std::vector<DoctorCheck> checks;
  std::set<std::string> endpoints;  // flex drivers sharing a CSI driver share its registration
  if (!health.contains("drivers") || !health["drivers"].is_array()) return checks;
  for (const auto& d : health["drivers"]) {
    if (!d.contains("registration") || !endpoints.insert(d.value("endpoint", "")).second) continue;
    const nlohmann::json& r = d["registration"];
    const std::string csi = r.value("driver", d.value("csiDriver", std::string("?")));
    const std::string name = "registration " + csi;
    const std::string state = r.value("state", "");
    const std::string node = r.value("node", "");
    const std::string message = r.value("message", "");
    if (state == "registered") {
      checks.push_back(Pass(name, "on node " + node + " with node id " + r.value("nodeId", "")));
    } else if (state == "disabled") {
      checks.push_back(Pass(name, "off in the configuration (registerDrivers: false)"));
    } else if (state == "off") {
      checks.push_back(Warn(name, "not registered: " + message,
                            "give the bridge nodeName (or NODE_NAME) and cluster access (a "
                            "kubeconfig, or run it in a pod with its service account); without "
                            "it, PVs with topology do not schedule to this node"));
    } else if (state == "failed") {
      checks.push_back(Fail(name,
                            "not registered on node " + node + " after " +
                                std::to_string(r.value("attempts", 0)) + " attempt(s): " + message,
                            "check the bridge's RBAC (get/patch its Node; get/create/update "
                            "CSINode) and the reason above"));
    } else {
      checks.push_back(Warn(name, "not registered yet: " + message,
                            "wait for the CSI driver to answer NodeGetInfo"));
    }
  }
  return checks;
}

DoctorCheck CheckKubeletRootPropagation(const std::string& kubelet_root,
                                        const std::vector<MountInfoLine>& mounts) {
  const std::string name = "kubelet root propagation";
  const std::string root = StripTrailingSlash(kubelet_root);
  const MountInfoLine* holder = nullptr;
  for (const auto& m : mounts) {  // the last, deepest mount covering the root wins
    if (IsAtOrBelow(root, m.mount_point) &&
        (holder == nullptr || m.mount_point.size() >= holder->mount_point.size())) {
      holder = &m;
    }
  }
  if (holder == nullptr) {
    return Fail(name, "no mount holds " + root, "is the kubelet root mounted into this container?");
  }
  for (const auto& f : holder->optional_fields) {
    if (f.rfind("shared:", 0) == 0) {
      return Pass(name, root + " on " + holder->mount_point + " is " + f);
    }
  }
  const std::string state =
      holder->optional_fields.empty() ? "private" : Join(holder->optional_fields, " ");
  return Fail(name,
              root + " on " + holder->mount_point + " is " + state +
                  ": mounts made by the bridge stay invisible to kubelet",
              "in a pod: mountPropagation: Bidirectional on the kubelet root volume; on a host: "
              "mount --make-rshared " +
                  holder->mount_point);
}

DoctorCheck CheckStateDatabase(const std::string& path) {
  const std::string name = "state database";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return Warn(name, path + " does not exist yet", "the bridge creates it on first start");
  }
  ReadOnlyDatabase db(path);
  if (!db.error().empty()) {
    return Fail(name, path + ": " + db.error(), "check the file's owner and mode (root, 0600)");
  }
  auto check = db.Query("PRAGMA quick_check");
  if (!check.ok() || check->empty() || (*check)[0][0] != "ok") {
    return Fail(name,
                path + ": quick_check: " +
                    (check.ok() ? (check->empty() ? "no answer" : (*check)[0][0])
                                : check.status().message()),
                "stop the bridge, keep a copy, and recover with sqlite3 " + path + " .recover");
  }
  auto version = db.Query("PRAGMA user_version");
  const int v = version.ok() && !version->empty() ? std::stoi((*version)[0][0]) : -1;
  if (v < 1 || v > kKnownSchemaVersion) {
    return Fail(name,
                path + ": schema version " + std::to_string(v) + ", this flexcsi knows " +
                    std::to_string(kKnownSchemaVersion),
                "run the flexcsi-bridge that matches this flexcsi");
  }
  auto counts = db.Query(
      "SELECT (SELECT count(*) FROM attachments), (SELECT count(*) FROM stagings), "
      "(SELECT count(*) FROM publications)");
  if (!counts.ok()) {
    return Fail(name, path + ": " + counts.status().message(), "the schema is damaged");
  }
  const auto& c = (*counts)[0];
  return Pass(name, path + ": ok, schema " + std::to_string(v) + ", " + c[0] + " attachments, " +
                        c[1] + " stagings, " + c[2] + " publications");
}

DoctorCheck CheckRecordsAgainstMounts(const BridgeConfig& config,
                                      const std::vector<MountInfoLine>& mounts) {
  const std::string name = "records vs mount table";
  struct stat st {};
  if (stat(config.state_database.c_str(), &st) != 0) {
    return Pass(name, "no database yet, nothing recorded");
  }
  std::set<std::string> mount_points;
  for (const auto& m : mounts) mount_points.insert(m.mount_point);
  ReadOnlyDatabase db(config.state_database);
  // Schema 2 records each staging's shape; schema 1 only knew request.staged.
  auto version = db.Query("PRAGMA user_version");
  const bool has_shape = version.ok() && !version->empty() && (*version)[0][0] != "1";
  auto stagings =
      db.Query(has_shape ? "SELECT staging_path, state, request, shape, marker FROM stagings"
                         : "SELECT staging_path, state, request FROM stagings");
  auto publications = db.Query("SELECT target_path, state FROM publications");
  if (!stagings.ok() || !publications.ok()) {
    return Fail(name,
                "cannot read records: " +
                    (stagings.ok() ? publications.status() : stagings.status()).message(),
                "see the state database check");
  }
  std::vector<std::string> missing, transitional;
  std::set<std::string> recorded_targets;
  auto inspect = [&](const std::vector<std::vector<std::string>>& rows, const char* done) {
    for (const auto& row : rows) {
      const std::string path = StripTrailingSlash(row[0]);
      // The mount table holds canonical paths; a kubelet root behind a symlink must not make
      // every record look unmounted.
      const std::string canonical = CanonicalIfExists(path);
      recorded_targets.insert(path);
      recorded_targets.insert(canonical);
      // Judged by the staging's shape: the driver's mount (driver-mount) or the bridge's
      // marker must be there; a record-only staging of the bridge's own and a no-stage record
      // without a marker have nothing mounted at their path. Schema 1 said the latter with
      // request.staged == false.
      bool expect_mount = true;
      if (row.size() > 4) {
        expect_mount = row[3] == "driver-mount" || row[4] == "1";
      } else if (row.size() > 2 && !row[2].empty()) {
        const auto request = nlohmann::json::parse(row[2], nullptr, false);
        if (request.is_object()) expect_mount = request.value("staged", true);
      }
      if (row[1] == done) {
        if (expect_mount && !mount_points.count(path) && !mount_points.count(canonical)) {
          missing.push_back(path);
        }
      } else {
        transitional.push_back(path + " (" + row[1] + ")");
      }
    }
  };
  inspect(*stagings, "staged");
  inspect(*publications, "published");

  // Pod volume mounts of our drivers that no record explains:
  // <kubeletRoot>/pods/<uid>/volumes/<vendor~name>/<volume>.
  std::vector<std::string> orphans;
  const std::string pods = StripTrailingSlash(config.kubelet_root) + "/pods/";
  for (const auto& m : mounts) {
    if (m.mount_point.compare(0, pods.size(), pods) != 0) continue;
    for (const auto& d : config.drivers) {
      if (ValidateInstallableDriverName(d.flex_driver).ok() &&
          m.mount_point.find("/volumes/" + DriverDirectoryName(d.flex_driver) + "/") !=
              std::string::npos &&
          !recorded_targets.count(m.mount_point)) {
        orphans.push_back(m.mount_point);
      }
    }
  }
  const size_t recorded = stagings->size() + publications->size();
  if (!missing.empty()) {
    return Fail(
        name, std::to_string(missing.size()) + " recorded mount(s) missing: " + Join(missing, ", "),
        "restart the bridge: reconciliation re-stages or rolls back missing mounts");
  }
  if (!orphans.empty()) {
    return Warn(
        name,
        std::to_string(orphans.size()) + " unrecorded flexcsi mount(s): " + Join(orphans, ", "),
        "kubelet unmounts them when their pods go; if the pods are gone, umount them");
  }
  if (!transitional.empty()) {
    return Warn(name,
                std::to_string(transitional.size()) +
                    " record(s) in transition: " + Join(transitional, ", "),
                "normal during an operation; if it persists, restart the bridge to roll back");
  }
  return Pass(name, std::to_string(recorded) + " staging/publication record(s), all mounted");
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
