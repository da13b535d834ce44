#include "controller/intent_journal.h"

#include <memory>
#include <mutex>

#include <sqlite3.h>

namespace flexcsi::controller {
namespace {

Status SqlError(sqlite3* db, const std::string& what) {
  return Internal("intent journal: " + what + ": " + sqlite3_errmsg(db));
}

}  // namespace

StatusOr<std::unique_ptr<IntentJournal>> IntentJournal::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    Status s = Unavailable("intent journal: cannot open " + path + ": " +
                           (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return s;
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<IntentJournal> journal(new IntentJournal(db));
  // synchronous=FULL: the row must be on disk before CreateVolume is sent.
  FLEXCSI_RETURN_IF_ERROR(journal->Exec("PRAGMA journal_mode=WAL", {}));
  FLEXCSI_RETURN_IF_ERROR(journal->Exec("PRAGMA synchronous=FULL", {}));
  FLEXCSI_RETURN_IF_ERROR(journal->Exec(
      "CREATE TABLE IF NOT EXISTS intents ("
      " volume_name TEXT PRIMARY KEY, claim_namespace TEXT NOT NULL, claim_name TEXT NOT NULL,"
      " claim_uid TEXT NOT NULL, flex_driver TEXT NOT NULL, request BLOB NOT NULL,"
      " volume_id TEXT NOT NULL DEFAULT '')",
      {}));
  return journal;
}

IntentJournal::~IntentJournal() { sqlite3_close(db_); }

Status IntentJournal::Exec(const std::string& sql, const std::vector<std::string>& args) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return SqlError(db_, "prepare");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    sqlite3_bind_blob(stmt, static_cast<int>(i + 1), args[i].data(),
                      static_cast<int>(args[i].size()), SQLITE_TRANSIENT);
  }
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return SqlError(db_, "step");
  return Status::Ok();
}

Status IntentJournal::Begin(const Intent& i) {
  return Exec(
      "INSERT OR REPLACE INTO intents (volume_name, claim_namespace, claim_name, claim_uid,"
      " flex_driver, request, volume_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
      {i.volume_name, i.claim_namespace, i.claim_name, i.claim_uid, i.flex_driver, i.request,
       i.volume_id});
}

Status IntentJournal::SetVolumeId(const std::string& volume_name, const std::string& volume_id) {
  return Exec("UPDATE intents SET volume_id = ? WHERE volume_name = ?", {volume_id, volume_name});
}

Status IntentJournal::Finish(const std::string& volume_name) {
  return Exec("DELETE FROM intents WHERE volume_name = ?", {volume_name});
}

StatusOr<std::vector<Intent>> IntentJournal::List() {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT volume_name, claim_namespace, claim_name, claim_uid, flex_driver,"
                         " request, volume_id FROM intents ORDER BY volume_name",
                         -1, &stmt, nullptr) != SQLITE_OK) {
    return SqlError(db_, "prepare");
  }
  std::vector<Intent> out;
  auto col = [&](int i) {
    const void* p = sqlite3_column_blob(stmt, i);
    return std::string(static_cast<const char*>(p ? p : ""), sqlite3_column_bytes(stmt, i));
  };
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    out.push_back(Intent{col(0), col(1), col(2), col(3), col(4), col(5), col(6)});
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return SqlError(db_, "step");
  return out;
}

StatusOr<std::optional<Intent>> IntentJournal::Find(const std::string& volume_name) {
  auto all = List();
  if (!all.ok()) return all.status();
  for (auto& i : *all) {
    if (i.volume_name == volume_name) return std::optional<Intent>(std::move(i));
  }
  return std::optional<Intent>();
}

}  // namespace flexcsi::controller
