#include "controller/intent_journal.h"

#include <sqlite3.h>

#include <utility>

namespace flexcsi::controller {
namespace {

constexpr const char* kSchemaV1 =
    "CREATE TABLE IF NOT EXISTS intents ("
    " volume_name TEXT PRIMARY KEY, claim_namespace TEXT NOT NULL, claim_name TEXT NOT NULL,"
    " claim_uid TEXT NOT NULL, flex_driver TEXT NOT NULL, request BLOB NOT NULL,"
    " volume_id TEXT NOT NULL DEFAULT '')";

}  // namespace

StatusOr<std::unique_ptr<IntentJournal>> IntentJournal::Open(const std::string& path) {
  // synchronous=FULL (SqliteDatabase's default): the row is on disk before CreateVolume is sent.
  // Private (0600 in a 0700 directory), like every flexcsi journal: the rows hold CreateVolume
  // requests with their parameters and the claims they serve.
  auto db = SqliteDatabase::Open(path, "intent journal", {kSchemaV1}, 0600);
  if (!db.ok()) return Status(Code::kUnavailable, db.status().message());
  return std::unique_ptr<IntentJournal>(new IntentJournal(std::move(*db)));
}

IntentJournal::~IntentJournal() = default;

Status IntentJournal::Exec(const std::string& sql, const std::vector<std::string>& args) {
  SqliteStatement statement(*db_, sql);
  // Every value is bound as bytes (the request is a serialized protobuf), so that a lookup
  // compares like with like.
  for (const std::string& arg : args) statement.BindBlob(arg);
  return statement.Run("step");
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
  SqliteStatement s(*db_,
                    "SELECT volume_name, claim_namespace, claim_name, claim_uid, flex_driver,"
                    " request, volume_id FROM intents ORDER BY volume_name");
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  std::vector<Intent> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    out.push_back(
        Intent{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5), s.Text(6)});
  }
  if (rc != SQLITE_DONE) return db_->Error("step");
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
