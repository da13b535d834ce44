// Doctor's checks of this node's own state: the mount table (kubelet root propagation), the
// state database, and the database's records against what is really mounted.
#include "cli/doctor_command.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/doctor_rows.h"
#include "cli/install_driver_command.h"

namespace flexcsi {

namespace {

// The state database's user_version this flexcsi reads; version 1 (before stagings had a shape)
// is still read, the bridge migrates it when it opens the database.
constexpr int kKnownSchemaVersion = 2;

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

}  // namespace

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

}  // namespace flexcsi
