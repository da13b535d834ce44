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

// v2: workload groups (several PVs under one scale-down).
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE migrations ADD COLUMN workload_group TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS workload_groups(
  id TEXT PRIMARY KEY, step TEXT NOT NULL, workloads TEXT NOT NULL, members TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
)sql";

// v3: workload groups in both directions (rollback moves a workload's PVs as a group too).
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE workload_groups ADD COLUMN direction TEXT NOT NULL DEFAULT 'apply';
)sql";

// v4: StorageClasses replaced by their CSI twins.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE IF NOT EXISTS storage_classes(
  name TEXT PRIMARY KEY, direction TEXT NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
  original TEXT NOT NULL, twin TEXT NOT NULL, last_error TEXT NOT NULL, updated_at INTEGER NOT NULL);
)sql";

constexpr const char* kClassColumns =
    "name, direction, step, state, original, twin, last_error, updated_at";

constexpr const char* kColumns =
    "pv_name, direction, step, state, original_pv, original_pvc, target_pv, "
    "original_reclaim_policy, release_uid, new_pv_uid, workloads, workloads_recorded, "
    "last_error, updated_at, workload_group";

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

Status ReadWorkloads(const nlohmann::json& stored, std::vector<ScaledWorkload>* out) {
  if (!stored.is_array()) return Status::Ok();
  for (const auto& w : stored) {
    auto sw = ScaledWorkloadFromJson(w);
    if (!sw.ok()) return sw.status();
    out->push_back(*sw);
  }
  return Status::Ok();
}

nlohmann::json WorkloadsToJson(const std::vector<ScaledWorkload>& workloads) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : workloads) out.push_back(ToJson(w));
  return out;
}

constexpr const char* kGroupColumns = "id, step, workloads, members, updated_at, direction";

StatusOr<WorkloadGroupRecord> ReadGroupRow(const SqliteStatement& s) {
  WorkloadGroupRecord g;
  g.id = s.Text(0);
  g.step = s.Text(1);
  auto workloads = ParseStored(s.Text(2), "workload_groups.workloads");
  auto members = ParseStored(s.Text(3), "workload_groups.members");
  for (const auto* j : {&workloads, &members}) {
    if (!j->ok()) return j->status();
  }
  FLEXCSI_RETURN_IF_ERROR(ReadWorkloads(*workloads, &g.workloads));
  if (members->is_array()) {
    for (const auto& m : *members) {
      if (m.is_string()) g.members.push_back(m.get<std::string>());
    }
  }
  g.updated_at = s.Int(4);
  g.direction = s.Text(5);
  return g;
}

StatusOr<MigrationRecord> ReadRow(const SqliteStatement& s) {
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
  FLEXCSI_RETURN_IF_ERROR(ReadWorkloads(*workloads, &r.workloads));
  r.original_pv = *pv;
  r.original_pvc = *pvc;
  r.target_pv = *target;
  r.original_reclaim_policy = s.Text(7);
  r.release_uid = s.Text(8);
  r.new_pv_uid = s.Text(9);
  r.workloads_recorded = s.Int(11) != 0;
  r.last_error = s.Text(12);
  r.updated_at = s.Int(13);
  r.workload_group = s.Text(14);
  return r;
}

StatusOr<StorageClassRecord> ReadClassRow(const SqliteStatement& s) {
  StorageClassRecord r;
  r.name = s.Text(0);
  r.direction = s.Text(1);
  r.step = s.Text(2);
  r.state = StateFromName(s.Text(3));
  auto original = ParseStored(s.Text(4), "storage_classes.original");
  if (!original.ok()) return original.status();
  auto twin = ParseStored(s.Text(5), "storage_classes.twin");
  if (!twin.ok()) return twin.status();
  r.original = *original;
  r.twin = *twin;
  r.last_error = s.Text(6);
  r.updated_at = s.Int(7);
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

const std::vector<std::string>& WorkloadGroupSteps() {
  static const std::vector<std::string> kSteps = {"group-scaling-down", "group-moving",
                                                  "group-restoring-replicas", "group-done"};
  return kSteps;
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

MigrationJournal::MigrationJournal(std::string dir, std::unique_ptr<SqliteDatabase> db, int lock_fd)
    : dir_(std::move(dir)), db_(std::move(db)), lock_fd_(lock_fd) {}

MigrationJournal::~MigrationJournal() {
  db_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

namespace {

// Takes DIR/lock (created 0600 if missing; DIR must exist) for this process: the fd holding
// the flock, or FailedPrecondition naming the holder's pid.
StatusOr<int> TakeRunLock(const std::string& dir) {
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
  return fd;
}

bool JournalExists(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir + "/journal.db", ec);
}

// Whether the first write will be able to create DIR's journal, judged without creating
// anything: the deepest part of DIR that exists must be a directory this process may write.
// So that a journal that cannot be made is refused before the run reads the cluster, as it was
// when the journal was made at once.
Status JournalCanBeCreated(const std::string& dir) {
  std::filesystem::path existing = std::filesystem::absolute(dir);
  std::error_code ec;
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  if (!std::filesystem::is_directory(existing, ec)) {
    return FailedPrecondition("cannot create the journal in " + dir + ": " + existing.string() +
                              " is not a directory");
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    return FailedPrecondition("cannot create the journal in " + dir + ": " + existing.string() +
                              ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<MigrationJournal>> MigrationJournal::Open(const std::string& dir) {
  // A journal not created yet is created by the first write (CreateOnFirstWrite), so that a run
  // refusing everything it was asked leaves nothing behind: no directory, lock or database.
  if (!JournalExists(dir)) {
    FLEXCSI_RETURN_IF_ERROR(JournalCanBeCreated(dir));
    return std::unique_ptr<MigrationJournal>(new MigrationJournal(dir, nullptr, -1));
  }
  auto fd = TakeRunLock(dir);
  if (!fd.ok()) return fd.status();
  return OpenDatabase(dir, *fd);
}

Status MigrationJournal::CreateOnFirstWrite() {
  if (db_ != nullptr) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Internal("cannot create journal directory " + dir_ + ": " + ec.message());
  ::chmod(dir_.c_str(), 0700);  // the journal holds cluster objects: keep it to its owner
  auto fd = TakeRunLock(dir_);
  if (!fd.ok()) return fd.status();
  // This run read the journal as empty. One created since by a run that has finished (or was
  // killed) may hold rows this run did not see: never write over them.
  if (JournalExists(dir_)) {
    ::close(*fd);
    return FailedPrecondition("another flexcsi migrate created journal " + dir_ +
                              " while this one ran; run the command again");
  }
  auto opened = OpenDatabase(dir_, *fd);  // closes the fd when it fails
  if (!opened.ok()) return opened.status();
  db_ = std::move((*opened)->db_);
  lock_fd_ = (*opened)->lock_fd_;
  (*opened)->lock_fd_ = -1;  // now ours
  return Status::Ok();
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
  // The journal holds cluster objects: 0600, like its directory.
  auto db = SqliteDatabase::Open(dir + "/journal.db", "migration journal",
                                 {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4}, 0600);
  if (!db.ok()) {
    if (lock_fd >= 0) ::close(lock_fd);
    return db.status();
  }
  return std::unique_ptr<MigrationJournal>(new MigrationJournal(dir, std::move(*db), lock_fd));
}

Status MigrationJournal::Put(const MigrationRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  FLEXCSI_RETURN_IF_ERROR(CreateOnFirstWrite());
  const nlohmann::json workloads = WorkloadsToJson(r.workloads);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  // The record and its history line land together or not at all.
  return db_->InTransaction([&]() -> Status {
    SqliteStatement put(*db_, std::string("INSERT OR REPLACE INTO migrations(") + kColumns +
                                  ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    put.Bind(r.pv_name).Bind(r.direction).Bind(r.step).Bind(std::string(RecordStateName(r.state)));
    put.Bind(r.original_pv.dump()).Bind(r.original_pvc.dump()).Bind(r.target_pv.dump());
    put.Bind(r.original_reclaim_policy).Bind(r.release_uid).Bind(r.new_pv_uid);
    put.Bind(workloads.dump()).Bind(int64_t{r.workloads_recorded ? 1 : 0}).Bind(r.last_error);
    put.Bind(now).Bind(r.workload_group);
    FLEXCSI_RETURN_IF_ERROR(put.Run("write record for " + r.pv_name));
    SqliteStatement hist(*db_, "INSERT INTO history(pv_name, direction, step, at) VALUES(?,?,?,?)");
    hist.Bind(r.pv_name).Bind(r.direction).Bind(r.step).Bind(now);
    return hist.Run("write history for " + r.pv_name);
  });
}

StatusOr<std::optional<MigrationRecord>> MigrationJournal::Get(const std::string& pv_name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::optional<MigrationRecord>();  // not created yet: empty
  SqliteStatement s(*db_, std::string("SELECT ") + kColumns + " FROM migrations WHERE pv_name=?");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(pv_name);
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<MigrationRecord>();
  if (rc != SQLITE_ROW) return db_->Error("read record for " + pv_name);
  auto r = ReadRow(s);
  if (!r.ok()) return r.status();
  return std::optional<MigrationRecord>(std::move(*r));
}

StatusOr<std::vector<MigrationRecord>> MigrationJournal::List() {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::vector<MigrationRecord>();
  SqliteStatement s(*db_, std::string("SELECT ") + kColumns + " FROM migrations ORDER BY pv_name");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  std::vector<MigrationRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto r = ReadRow(s);
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  if (rc != SQLITE_DONE) return db_->Error("list records");
  return out;
}

StatusOr<std::vector<MigrationJournal::HistoryEntry>> MigrationJournal::History(
    const std::string& pv_name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::vector<HistoryEntry>();
  SqliteStatement s(*db_, "SELECT direction, step, at FROM history WHERE pv_name=? ORDER BY id");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(pv_name);
  std::vector<HistoryEntry> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back({s.Text(0), s.Text(1), s.Int(2)});
  if (rc != SQLITE_DONE) return db_->Error("read history");
  return out;
}

Status MigrationJournal::PutGroup(const WorkloadGroupRecord& g) {
  std::lock_guard<std::mutex> lock(mu_);
  FLEXCSI_RETURN_IF_ERROR(CreateOnFirstWrite());
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  return db_->InTransaction([&]() -> Status {
    SqliteStatement put(*db_, std::string("INSERT OR REPLACE INTO workload_groups(") +
                                  kGroupColumns + ") VALUES(?,?,?,?,?,?)");
    put.Bind(g.id).Bind(g.step).Bind(WorkloadsToJson(g.workloads).dump());
    put.Bind(nlohmann::json(g.members).dump()).Bind(now).Bind(g.direction);
    FLEXCSI_RETURN_IF_ERROR(put.Run("write workload group " + g.id));
    SqliteStatement hist(*db_, "INSERT INTO history(pv_name, direction, step, at) VALUES(?,?,?,?)");
    hist.Bind("group:" + g.id).Bind(g.direction).Bind(g.step).Bind(now);
    return hist.Run("write history for workload group " + g.id);
  });
}

StatusOr<std::optional<WorkloadGroupRecord>> MigrationJournal::GetGroup(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::optional<WorkloadGroupRecord>();
  SqliteStatement s(*db_,
                    std::string("SELECT ") + kGroupColumns + " FROM workload_groups WHERE id=?");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(id);
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<WorkloadGroupRecord>();
  if (rc != SQLITE_ROW) return db_->Error("read workload group " + id);
  auto g = ReadGroupRow(s);
  if (!g.ok()) return g.status();
  return std::optional<WorkloadGroupRecord>(std::move(*g));
}

StatusOr<std::vector<WorkloadGroupRecord>> MigrationJournal::ListGroups() {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::vector<WorkloadGroupRecord>();
  SqliteStatement s(*db_,
                    std::string("SELECT ") + kGroupColumns + " FROM workload_groups ORDER BY id");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  std::vector<WorkloadGroupRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto g = ReadGroupRow(s);
    if (!g.ok()) return g.status();
    out.push_back(std::move(*g));
  }
  if (rc != SQLITE_DONE) return db_->Error("list workload groups");
  return out;
}

Status MigrationJournal::PutStorageClass(const StorageClassRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  FLEXCSI_RETURN_IF_ERROR(CreateOnFirstWrite());
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  return db_->InTransaction([&]() -> Status {
    SqliteStatement put(*db_, std::string("INSERT OR REPLACE INTO storage_classes(") +
                                  kClassColumns + ") VALUES(?,?,?,?,?,?,?,?)");
    put.Bind(r.name).Bind(r.direction).Bind(r.step).Bind(std::string(RecordStateName(r.state)));
    put.Bind(r.original.dump()).Bind(r.twin.dump()).Bind(r.last_error).Bind(now);
    FLEXCSI_RETURN_IF_ERROR(put.Run("write storage class " + r.name));
    SqliteStatement hist(*db_, "INSERT INTO history(pv_name, direction, step, at) VALUES(?,?,?,?)");
    hist.Bind("storageclass:" + r.name).Bind(r.direction).Bind(r.step).Bind(now);
    return hist.Run("write history for storage class " + r.name);
  });
}

StatusOr<std::optional<StorageClassRecord>> MigrationJournal::GetStorageClass(
    const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::optional<StorageClassRecord>();
  SqliteStatement s(*db_,
                    std::string("SELECT ") + kClassColumns + " FROM storage_classes WHERE name=?");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  s.Bind(name);
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<StorageClassRecord>();
  if (rc != SQLITE_ROW) return db_->Error("read storage class " + name);
  auto r = ReadClassRow(s);
  if (!r.ok()) return r.status();
  return std::optional<StorageClassRecord>(std::move(*r));
}

StatusOr<std::vector<StorageClassRecord>> MigrationJournal::ListStorageClasses() {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) return std::vector<StorageClassRecord>();
  SqliteStatement s(*db_,
                    std::string("SELECT ") + kClassColumns + " FROM storage_classes ORDER BY name");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  std::vector<StorageClassRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto r = ReadClassRow(s);
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  if (rc != SQLITE_DONE) return db_->Error("list storage classes");
  return out;
}

}  // namespace flexcsi::migrate
