#include "common/sqlite_database.h"

#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace flexcsi {

namespace {

// Whether a directory's path names it as flexcsi's own (see MakeDatabasePrivate).
bool IsFlexcsiDirectory(const std::string& dir) {
  size_t start = 0;
  while (start < dir.size()) {
    size_t end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    if (dir.compare(start, 7, "flexcsi") == 0 && end - start >= 7) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

Status MakeDatabasePrivate(const std::string& path, unsigned file_mode) {
  if (path.empty() || path == ":memory:" || path.compare(0, 5, "file:") == 0) {
    return Status::Ok();
  }
  const auto slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Internal("cannot read the directory of " + path + ": " + ErrnoText());
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Internal("cannot create the directory of " + path + ": " + ErrnoText());
    }
  } else if (S_ISDIR(st.st_mode) && (st.st_mode & 077) != 0 && IsFlexcsiDirectory(dir)) {
    if (::chmod(dir.c_str(), st.st_mode & 0700) != 0) {
      return Internal("cannot make the directory of " + path + " private: " + ErrnoText());
    }
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                        static_cast<mode_t>(file_mode));
  if (fd >= 0) {
    const int rc = ::fchmod(fd, static_cast<mode_t>(file_mode));  // whatever the umask took
    ::close(fd);
    if (rc != 0) return Internal("cannot set the mode of " + path + ": " + ErrnoText());
  } else if (errno != EEXIST) {
    return Internal("cannot create " + path + ": " + ErrnoText());
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    if (::chmod(file.c_str(), static_cast<mode_t>(file_mode)) != 0 && errno != ENOENT) {
      return Internal("cannot set the mode of " + file + ": " + ErrnoText());
    }
  }
  return Status::Ok();
}

SqliteStatement::SqliteStatement(const SqliteDatabase& db, const std::string& sql) : db_(db) {
  rc_ = sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &stmt_, nullptr);
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

Status SqliteStatement::prepared() const {
  return rc_ == SQLITE_OK ? Status::Ok() : db_.Error("prepare");
}

SqliteStatement& SqliteStatement::Bind(const std::string& value) {
  sqlite3_bind_text(stmt_, ++index_, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::BindBlob(const std::string& value) {
  sqlite3_bind_blob(stmt_, ++index_, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::BindNullable(const std::string& value) {
  if (value.empty()) {
    sqlite3_bind_null(stmt_, ++index_);
    return *this;
  }
  return Bind(value);
}

SqliteStatement& SqliteStatement::Bind(int64_t value) {
  sqlite3_bind_int64(stmt_, ++index_, value);
  return *this;
}

int SqliteStatement::Step() { return sqlite3_step(stmt_); }

Status SqliteStatement::Run(const std::string& what) {
  FLEXCSI_RETURN_IF_ERROR(prepared());
  int rc;
  while ((rc = Step()) == SQLITE_ROW) {
  }
  return rc == SQLITE_DONE ? Status::Ok() : db_.Error(what);
}

std::string SqliteStatement::Text(int column) const {
  const void* bytes = sqlite3_column_blob(stmt_, column);
  if (bytes == nullptr) return "";
  return std::string(static_cast<const char*>(bytes),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int64_t SqliteStatement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

SqliteDatabase::SqliteDatabase(sqlite3* db, std::string store_name)
    : db_(db), store_name_(std::move(store_name)) {}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(
    const std::string& path, const std::string& store_name,
    const std::vector<const char*>& migrations, unsigned file_mode) {
  if (file_mode != 0) {
    FLEXCSI_RETURN_IF_ERROR(MakeDatabasePrivate(path, file_mode).WithContext(store_name));
  }
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Internal("cannot open " + store_name + " " + path + ": " + message);
  }
  std::unique_ptr<SqliteDatabase> database(new SqliteDatabase(db, store_name));
  // A concurrent reader (a status command) may hold the database briefly.
  sqlite3_busy_timeout(db, 5000);
  FLEXCSI_RETURN_IF_ERROR(database->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
                              .WithContext(store_name + " " + path));
  FLEXCSI_RETURN_IF_ERROR(database->Migrate(migrations).WithContext(store_name + " " + path));
  return database;
}

Status SqliteDatabase::Exec(const std::string& sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  Status s = Internal(store_name_ + ": " + (error ? error : "unknown sqlite error"));
  sqlite3_free(error);
  return s;
}

Status SqliteDatabase::Error(const std::string& what) const {
  return Internal(store_name_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

void SqliteDatabase::SetFullSync(bool full) const {
  sqlite3_exec(db_, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", nullptr,
               nullptr, nullptr);
}

Status SqliteDatabase::Migrate(const std::vector<const char*>& migrations) const {
  SqliteStatement version(*this, "PRAGMA user_version");
  FLEXCSI_RETURN_IF_ERROR(version.prepared());
  if (version.Step() != SQLITE_ROW) return Error("read schema version");
  const int64_t current = version.Int(0);
  const int64_t latest = static_cast<int64_t>(migrations.size());
  if (current > latest) {
    return FailedPrecondition("schema version " + std::to_string(current) +
                              " was written by a newer flexcsi (this one knows version " +
                              std::to_string(latest) + ")");
  }
  if (current == latest) return Status::Ok();
  // From whatever version is there to the latest, in one transaction.
  return InTransaction([&]() -> Status {
    for (int64_t v = current; v < latest; ++v) {
      FLEXCSI_RETURN_IF_ERROR(Exec(migrations[static_cast<size_t>(v)]));
    }
    return Exec("PRAGMA user_version = " + std::to_string(latest));
  });
}

}  // namespace flexcsi
