// SqliteDatabase: the one journal design of flexcsi. The bridge's state store, the migration
// journal and flexcsi-controller's intent journal all keep crash-safe records this way:
// WAL (readers such as `flexcsi state` never block the writer), synchronous=FULL (a commit is on
// disk before the step it announces is taken), the schema version in `PRAGMA user_version`,
// migrated from any older version in one transaction, and prepared statements that finalize
// themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace flexcsi {

class SqliteDatabase;

// What SqliteDatabase::Open does with a `file_mode`, for a database file at `path`:
//  - its directory is created 0700 when missing (the parent only, never its ancestors);
//  - an existing directory is tightened to its owner (mode & 0700) when flexcsi made it, which
//    flexcsi's own paths show by a component named flexcsi* (/var/lib/flexcsi,
//    /var/lib/flexcsi/provisioner, /var/lib/flexcsi-controller); any other directory, such as
//    /var/lib, is a place the operator chose and keeps its mode;
//  - the file is created with `file_mode` when missing (never a moment readable by others) and
//    set to `file_mode` when it exists, and so are its existing -wal, -shm and -journal files.
//    SQLite creates those side files later with the mode of the database file.
// Nothing for SQLite's special names (":memory:", "", "file:" URIs). INTERNAL naming the path
// when a step fails.
Status MakeDatabasePrivate(const std::string& path, unsigned file_mode);

// A prepared statement that binds by position and finalizes itself. Errors are reported by
// prepared() and Run(); Step() returns sqlite's own code (SQLITE_ROW, SQLITE_DONE, ...).
class SqliteStatement {
 public:
  SqliteStatement(const SqliteDatabase& db, const std::string& sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  Status prepared() const;
  SqliteStatement& Bind(const std::string& value);          // TEXT
  SqliteStatement& BindBlob(const std::string& value);      // BLOB
  SqliteStatement& BindNullable(const std::string& value);  // NULL when empty, else TEXT
  SqliteStatement& Bind(int64_t value);
  int Step();
  // Steps until done; `what` names the operation in the error.
  Status Run(const std::string& what);
  std::string Text(int column) const;  // "" for NULL
  int64_t Int(int column) const;

 private:
  const SqliteDatabase& db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = 0;
  int index_ = 0;
};

class SqliteDatabase {
 public:
  // Opens or creates `path` and brings its schema to migrations.size(): migrations[i] is the SQL
  // that takes version i to i + 1. `store_name` ("state database") prefixes every error. A file
  // written by a newer schema is refused (FAILED_PRECONDITION), never downgraded.
  // `file_mode`, when not 0 (0600: every flexcsi journal holds cluster objects or what the node
  // mounted), makes the database private (MakeDatabasePrivate) before SQLite opens it.
  static StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path,
                                                        const std::string& store_name,
                                                        const std::vector<const char*>& migrations,
                                                        unsigned file_mode = 0);
  ~SqliteDatabase();
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  // Runs one or more statements without results.
  Status Exec(const std::string& sql) const;
  // "<store name>: <what>: <sqlite's last message>", as INTERNAL.
  Status Error(const std::string& what) const;
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; a failed body or commit rolls back.
  template <typename Body>
  Status InTransaction(Body body) const {
    FLEXCSI_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status s = body();
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok()) Exec("ROLLBACK");
    return s;
  }
  // FULL for records that announce a step, NORMAL for records whose loss on power failure is
  // safe (the caller's invariant; see bridge/state_store.h).
  void SetFullSync(bool full) const;

  sqlite3* handle() const { return db_; }
  const std::string& store_name() const { return store_name_; }

 private:
  SqliteDatabase(sqlite3* db, std::string store_name);
  Status Migrate(const std::vector<const char*>& migrations) const;

  sqlite3* db_;
  std::string store_name_;
};

}  // namespace flexcsi
