#include "migrate/journal.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace flexcsi::migrate {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS migrations(
  pv_name TEXT PRIMARY KEY, direction TEXT NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
  original_pv TEXT NOT NULL, original_pvc TEXT NOT NULL, target_pv TEXT NOT NULL,
  original_reclaim_policy TEXT NOT NULL, release_uid TEXT NOT NULL, new_pv_uid TEXT NOT NULL,
  workloads TEXT NOT NULL, workloads_recorded INTEGER NOT NULL, last_error TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS history(
  id INTEGER PRIMARY KEY AUTOINCREMENT, pv_name TEXT NOT NULL, direction TEXT NOT NULL,
  step TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS history_by_pv ON history(pv_name, id);
)sql";

constexpr const char* kColumns =
    "pv_name, direction, step, state, original_pv, original_pvc, target_pv, "
    "original_reclaim_policy, release_uid, new_pv_uid, workloads, workloads_recorded, "
    "last_error, updated_at";

Status SqliteError(sqlite3* db, const std::string& what) {
  return Internal("migration journal: " + what + ": " + sqlite3_errmsg(db));
}

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Status prepared() const {
    return rc_ == SQLITE_OK ? Status::Ok() : SqliteError(db_, "prepare");
  }
  Statement& Bind(const std::string& v) {
    sqlite3_bind_text(stmt_, ++index_, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int64_t v) {
    sqlite3_bind_int64(stmt_, ++index_, v);
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  Status Run(const std::string& what) {
    FLEXCSI_RETURN_IF_ERROR(prepared());
    return Step() == SQLITE_DONE ? Status::Ok() : SqliteError(db_, what);
  }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
  int index_ = 0;
};

RecordState StateFromName(const std::string& s) {
  if (s == "moved") return RecordState::kMoved;
  if (s == "rolled-back") return RecordState::kRolledBack;
  return RecordState::kInProgress;  // unknown words read as unfinished: the safe reading
}

StatusOr<nlohmann::json> ParseStored(const std::string& text, const std::string& what) {
  if (text.empty()) return nlohmann::json();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Internal("migration journal: corrupt " + what + " column");
  return j;
}

StatusOr<MigrationRecord> ReadRow(const Statement& s) {
  MigrationRecord r;
  r.pv_name = s.Text(0);
  r.direction = s.Text(1);
  r.step = s.Text(2);
  r.state = StateFromName(s.Text(3));
  auto pv = ParseStored(s.Text(4), "original_pv");
  auto pvc = ParseStored(s.Text(5), "original_pvc");
  auto target = ParseStored(s.Text(6), "target_pv");
  auto workloads = ParseStored(s.Text(10), "workloads");
  for (const auto* j : {&pv, &pvc, &target, &workloads}) {
    if (!j->ok()) return j->status();
  }
  r.original_pv = *pv;
  r.original_pvc = *pvc;
  r.target_pv = *target;
  r.original_reclaim_policy = s.Text(7);
  r.release_uid = s.Text(8);
  r.new_pv_uid = s.Text(9);
  if (workloads->is_array()) {
    for (const auto& w : *workloads) {
      auto sw = ScaledWorkloadFromJson(w);
      if (!sw.ok()) return sw.status();
      r.workloads.push_back(*sw);
    }
  }
  r.workloads_recorded = s.Int(11) != 0;
  r.last_error = s.Text(12);
  r.updated_at = s.Int(13);
  return r;
}

std::string LockHolder(int fd) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string pid(buf, static_cast<size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

nlohmann::json ToJson(const ScaledWorkload& w) {
  return {{"groupVersion", w.group_version}, {"resource", w.resource}, {"kind", w.kind},
          {"namespace", w.namespace_},       {"name", w.name},         {"replicas", w.replicas}};
}

StatusOr<ScaledWorkload> ScaledWorkloadFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Internal("migration journal: workload entry is not an object");
  ScaledWorkload w;
  w.group_version = j.value("groupVersion", "");
  w.resource = j.value("resource", "");
  w.kind = j.value("kind", "");
  w.namespace_ = j.value("namespace", "");
  w.name = j.value("name", "");
  w.replicas = j.value("replicas", int64_t{0});
  return w;
}

const char* RecordStateName(RecordState s) {
  switch (s) {
    case RecordState::kInProgress:
      return "in-progress";
    case RecordState::kMoved:
      return "moved";
    case RecordState::kRolledBack:
      return "rolled-back";
  }
  return "in-progress";
}

std::string MigrationRecord::ClaimKey() const {
  if (!original_pvc.is_object()) return "";
  const auto& md = original_pvc.value("metadata", nlohmann::json::object());
  return md.value("namespace", "") + "/" + md.value("name", "");
}

std::string DefaultJournalDir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/flexcsi/migrate";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") +
         "/.local/state/flexcsi/migrate";
}

MigrationJournal::MigrationJournal(std::string dir, sqlite3* db, int lock_fd)
    : dir_(std::move(dir)), db_(db), lock_fd_(lock_fd) {}

MigrationJournal::~MigrationJournal() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

StatusOr<std::unique_ptr<MigrationJournal>> MigrationJournal::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create journal directory " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);  // the journal holds cluster objects: keep it to its owner
  const std::string lock_path = dir + "/lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot open " + lock_path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = LockHolder(fd);
    ::close(fd);
    return FailedPrecondition("another flexcsi migrate is running with journal " + dir +
                              (holder.empty() ? "" : " (pid " + holder + ")") +
                              "; wait for it to finish, or use another --journal");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message above; the lock itself is what matters.
  }
  return OpenDatabase(dir, fd);
}

StatusOr<std::unique_ptr<MigrationJournal>> MigrationJournal::OpenForReading(
    const std::string& dir) {
  if (!std::filesystem::exists(dir + "/journal.db")) {
    return NotFound("no migration journal in " + dir);
  }
  return OpenDatabase(dir, -1);
}

StatusOr<std::unique_ptr<MigrationJournal>> MigrationJournal::OpenDatabase(const std::string& dir,
                                                                           int lock_fd) {
  const std::string path = dir + "/journal.db";
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    if (lock_fd >= 0) ::close(lock_fd);
    return Internal("cannot open migration journal " + path + ": " + message);
  }
  ::chmod(path.c_str(), 0600);
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<MigrationJournal> journal(new MigrationJournal(dir, db, lock_fd));
  FLEXCSI_RETURN_IF_ERROR(journal->Migrate().WithContext("migration journal " + path));
  return journal;
}

Status MigrationJournal::Migrate() {
  std::lock_guard<std::mutex> lock(mu_);
  auto exec = [&](const char* sql) -> Status {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
    Status s = Internal(error ? error : "unknown sqlite error");
    sqlite3_free(error);
    return s;
  };
  // WAL lets `status` read while a run writes; FULL makes every commit survive a power cut,
  // which is what "journaled before it is taken" needs.
  FLEXCSI_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"));
  Statement version(db_, "PRAGMA user_version");
  FLEXCSI_RETURN_IF_ERROR(version.prepared());
  if (version.Step() != SQLITE_ROW) return SqliteError(db_, "read schema version");
  const int64_t current = version.Int(0);
  if (current > kSchemaVersion) {
    return FailedPrecondition("schema version " + std::to_string(current) +
                              " was written by a newer flexcsi (this one knows version " +
                              std::to_string(kSchemaVersion) + ")");
  }
  if (current == kSchemaVersion) return Status::Ok();
  FLEXCSI_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
  Status s = exec(kSchemaV1);
  if (s.ok()) s = exec("PRAGMA user_version = 1");
  if (!s.ok()) {
    exec("ROLLBACK");
    return s;
  }
  return exec("COMMIT");
}

Status MigrationJournal::Put(const MigrationRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json workloads = nlohmann::json::array();
  for (const auto& w : r.workloads) workloads.push_back(ToJson(w));
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return SqliteError(db_, "begin");
  }
  Statement put(db_, std::string("INSERT OR REPLACE INTO migrations(") + kColumns +
                         ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  put.Bind(r.pv_name).Bind(r.direction).Bind(r.step).Bind(std::string(RecordStateName(r.state)));
  put.Bind(r.original_pv.dump()).Bind(r.original_pvc.dump()).Bind(r.target_pv.dump());
  put.Bind(r.original_reclaim_policy).Bind(r.release_uid).Bind(r.new_pv_uid);
  put.Bind(workloads.dump()).Bind(int64_t{r.workloads_recorded ? 1 : 0}).Bind(r.last_error);
  put.Bind(now);
  Status s = put.Run("write record for " + r.pv_name);
  if (s.ok()) {
    Statement hist(db_, "INSERT INTO history(pv_name, direction, step, at) VALUES(?,?,?,?)");
    hist.Bind(r.pv_name).Bind(r.direction).Bind(r.step).Bind(now);
    s = hist.Run("write history for " + r.pv_name);
  }
  if (!s.ok()) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Status e = SqliteError(db_, "commit");
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return e;
  }
  return Status::Ok();
}

StatusOr<std::optional<MigrationRecord>> MigrationJournal::Get(const std::string& pv_name) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM migrations WHERE pv_name=?");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(pv_name);
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<MigrationRecord>();
  if (rc != SQLITE_ROW) return SqliteError(db_, "read record for " + pv_name);
  auto r = ReadRow(s);
  if (!r.ok()) return r.status();
  return std::optional<MigrationRecord>(std::move(*r));
}

StatusOr<std::vector<MigrationRecord>> MigrationJournal::List() {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM migrations ORDER BY pv_name");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  std::vector<MigrationRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto r = ReadRow(s);
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "list records");
  return out;
}

StatusOr<std::vector<MigrationJournal::HistoryEntry>> MigrationJournal::History(
    const std::string& pv_name) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_, "SELECT direction, step, at FROM history WHERE pv_name=? ORDER BY id");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(pv_name);
  std::vector<HistoryEntry> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back({s.Text(0), s.Text(1), s.Int(2)});
  if (rc != SQLITE_DONE) return SqliteError(db_, "read history");
  return out;
}

}  // namespace flexcsi::migrate
