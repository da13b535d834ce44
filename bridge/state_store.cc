#include "bridge/state_store.h"

#include <sqlite3.h>

#include <ctime>
#include <utility>

namespace flexcsi {
namespace {

// The words each table stores for the three phases.
struct PhaseWords {
  const char* in_progress;
  const char* done;
  const char* removing;
};
constexpr PhaseWords kAttachmentWords{"attaching", "attached", "detaching"};
constexpr PhaseWords kStagingWords{"staging", "staged", "unstaging"};
constexpr PhaseWords kPublicationWords{"publishing", "published", "unpublishing"};

const char* PhaseWord(const PhaseWords& words, Phase phase) {
  switch (phase) {
    case Phase::kInProgress:
      return words.in_progress;
    case Phase::kDone:
      return words.done;
    case Phase::kRemoving:
      return words.removing;
  }
  return words.in_progress;
}

Phase PhaseFromWord(const PhaseWords& words, const std::string& word) {
  if (word == words.done) return Phase::kDone;
  if (word == words.removing) return Phase::kRemoving;
  return Phase::kInProgress;  // unknown words are treated as unfinished, the safe reading
}

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS attachments(
  flex_driver TEXT NOT NULL, volume_name TEXT NOT NULL, node_name TEXT NOT NULL,
  csi_driver TEXT NOT NULL, volume_id TEXT NOT NULL, node_id TEXT NOT NULL,
  publish_context TEXT NOT NULL, state TEXT NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY(flex_driver, volume_name, node_name));
CREATE TABLE IF NOT EXISTS stagings(
  staging_path TEXT PRIMARY KEY, flex_driver TEXT NOT NULL, volume_name TEXT NOT NULL,
  csi_driver TEXT NOT NULL, volume_id TEXT NOT NULL, owner TEXT NOT NULL,
  request TEXT NOT NULL, state TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS stagings_by_volume ON stagings(flex_driver, volume_name);
CREATE TABLE IF NOT EXISTS publications(
  target_path TEXT PRIMARY KEY, staging_path TEXT, flex_driver TEXT NOT NULL,
  volume_name TEXT NOT NULL, csi_driver TEXT NOT NULL, volume_id TEXT NOT NULL,
  pod_uid TEXT NOT NULL, readonly INTEGER NOT NULL, state TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS publications_by_staging ON publications(staging_path);
)sql";

// Version 1 -> 2: the shape of each staging. Version 1 marked stagings of drivers without
// STAGE_UNSTAGE with request.staged=false and assumed every other staging was a mount.
constexpr const char* kMigrateV1ToV2 = R"sql(
ALTER TABLE stagings ADD COLUMN shape TEXT NOT NULL DEFAULT 'driver-mount';
ALTER TABLE stagings ADD COLUMN marker INTEGER NOT NULL DEFAULT 0;
UPDATE stagings SET shape='no-stage' WHERE json_extract(request, '$.staged') = 0;
)sql";

// The words a schema version stores are part of it: storing a new one (a shape, a phase) needs a
// new schema version, because an older bridge reads a word it does not know as a default (a
// driver mount here, an unfinished phase above; 0.1.0 does the same) instead of refusing the
// file, as it refuses a newer schema version (tests/upgrade/old_state_test.cc).
StagingShape StagingShapeFromWord(const std::string& word) {
  if (word == "record-only") return StagingShape::kRecordOnly;
  if (word == "no-stage") return StagingShape::kNoStage;
  return StagingShape::kDriverMount;
}

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

nlohmann::json ParseStoredJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() || !j.is_object() ? nlohmann::json::object() : j;
}

// Runs `step` on every row of a prepared query and collects what it returns.
template <typename Row, typename Fn>
StatusOr<std::vector<Row>> CollectRows(const SqliteDatabase& db, SqliteStatement& stmt,
                                       Fn read_row) {
  FLEXCSI_RETURN_IF_ERROR(stmt.prepared());
  std::vector<Row> rows;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) rows.push_back(read_row(stmt));
  if (rc != SQLITE_DONE) return db.Error("query");
  return rows;
}

template <typename Row, typename Fn>
StatusOr<std::optional<Row>> FirstRow(const SqliteDatabase& db, SqliteStatement& stmt,
                                      Fn read_row) {
  auto rows = CollectRows<Row>(db, stmt, read_row);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<Row>();
  return std::optional<Row>(std::move(rows->front()));
}

constexpr const char* kAttachmentColumns =
    "flex_driver, volume_name, node_name, csi_driver, volume_id, node_id, publish_context, "
    "state, updated_at";
AttachmentRecord ReadAttachment(const SqliteStatement& s) {
  AttachmentRecord r;
  r.flex_driver = s.Text(0);
  r.volume_name = s.Text(1);
  r.node_name = s.Text(2);
  r.csi_driver = s.Text(3);
  r.volume_id = s.Text(4);
  r.node_id = s.Text(5);
  r.publish_context = ParseStoredJson(s.Text(6));
  r.phase = PhaseFromWord(kAttachmentWords, s.Text(7));
  r.updated_at = s.Int(8);
  return r;
}

constexpr const char* kStagingColumns =
    "staging_path, flex_driver, volume_name, csi_driver, volume_id, owner, request, state, "
    "updated_at, shape, marker";
StagingRecord ReadStaging(const SqliteStatement& s) {
  StagingRecord r;
  r.staging_path = s.Text(0);
  r.flex_driver = s.Text(1);
  r.volume_name = s.Text(2);
  r.csi_driver = s.Text(3);
  r.volume_id = s.Text(4);
  r.owner = s.Text(5) == "bridge" ? StagingOwner::kBridge : StagingOwner::kKubelet;
  r.request = ParseStoredJson(s.Text(6));
  r.phase = PhaseFromWord(kStagingWords, s.Text(7));
  r.updated_at = s.Int(8);
  r.shape = StagingShapeFromWord(s.Text(9));
  r.marker = s.Int(10) != 0;
  return r;
}

constexpr const char* kPublicationColumns =
    "target_path, staging_path, flex_driver, volume_name, csi_driver, volume_id, pod_uid, "
    "readonly, state, updated_at";
PublicationRecord ReadPublication(const SqliteStatement& s) {
  PublicationRecord r;
  r.target_path = s.Text(0);
  r.staging_path = s.Text(1);
  r.flex_driver = s.Text(2);
  r.volume_name = s.Text(3);
  r.csi_driver = s.Text(4);
  r.volume_id = s.Text(5);
  r.pod_uid = s.Text(6);
  r.readonly = s.Int(7) != 0;
  r.phase = PhaseFromWord(kPublicationWords, s.Text(8));
  r.updated_at = s.Int(9);
  return r;
}

std::string Select(const char* columns, const char* table, const char* where) {
  std::string sql = std::string("SELECT ") + columns + " FROM " + table;
  if (where[0] != '\0') sql += std::string(" WHERE ") + where;
  return sql + " ORDER BY rowid";
}

}  // namespace

const char* StagingShapeName(StagingShape shape) {
  switch (shape) {
    case StagingShape::kDriverMount:
      return "driver-mount";
    case StagingShape::kRecordOnly:
      return "record-only";
    case StagingShape::kNoStage:
      return "no-stage";
  }
  return "driver-mount";
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kInProgress:
      return "in-progress";
    case Phase::kDone:
      return "done";
    case Phase::kRemoving:
      return "removing";
  }
  return "in-progress";
}

StatusOr<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path) {
  static_assert(kSchemaVersion == 2, "add the migration to the list below");
  // Private (0600 in a 0700 directory): the records name every volume, target and device of the
  // node, and request JSON that rules may fill from secrets' neighbours.
  auto db = SqliteDatabase::Open(path, "state database", {kSchemaV1, kMigrateV1ToV2}, 0600);
  if (!db.ok()) return db.status();
  return std::unique_ptr<StateStore>(new StateStore(std::move(*db)));
}

StateStore::~StateStore() = default;

void StateStore::SetDurability(Phase phase_written) {
  db_->SetFullSync(phase_written == Phase::kInProgress);
}

Status RefuseAnotherVolume(const std::string& where, const std::string& recorded_csi_driver,
                           const std::string& recorded_volume_id, const std::string& csi_driver,
                           const std::string& volume_id) {
  if (recorded_csi_driver == csi_driver && recorded_volume_id == volume_id) return Status::Ok();
  return FailedPrecondition(where + " already holds volume " + recorded_volume_id + " of " +
                            recorded_csi_driver + ", not " + volume_id + " of " + csi_driver);
}

Status StateStore::PutAttachment(const AttachmentRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(r.phase);
  return db_->InTransaction([&]() -> Status {
    SqliteStatement held(*db_, Select(kAttachmentColumns, "attachments",
                                      "flex_driver=? AND volume_name=? AND node_name=?")
                                   .c_str());
    held.Bind(r.flex_driver).Bind(r.volume_name).Bind(r.node_name);
    auto existing = FirstRow<AttachmentRecord>(*db_, held, ReadAttachment);
    if (!existing.ok()) return existing.status();
    if (existing->has_value()) {
      FLEXCSI_RETURN_IF_ERROR(RefuseAnotherVolume(
          "volume " + r.volume_name + " of " + r.flex_driver + " on node " + r.node_name,
          (*existing)->csi_driver, (*existing)->volume_id, r.csi_driver, r.volume_id));
    }
    SqliteStatement s(*db_, "INSERT OR REPLACE INTO attachments VALUES(?,?,?,?,?,?,?,?,?)");
    s.Bind(r.flex_driver).Bind(r.volume_name).Bind(r.node_name).Bind(r.csi_driver);
    s.Bind(r.volume_id).Bind(r.node_id).Bind(r.publish_context.dump());
    s.Bind(std::string(PhaseWord(kAttachmentWords, r.phase))).Bind(Now());
    return s.Run("write attachment");
  });
}

StatusOr<std::optional<AttachmentRecord>> StateStore::GetAttachment(const std::string& flex_driver,
                                                                    const std::string& volume_name,
                                                                    const std::string& node_name) {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kAttachmentColumns, "attachments",
                                 "flex_driver=? AND volume_name=? AND node_name=?")
                              .c_str());
  s.Bind(flex_driver).Bind(volume_name).Bind(node_name);
  return FirstRow<AttachmentRecord>(*db_, s, ReadAttachment);
}

Status StateStore::DeleteAttachment(const std::string& flex_driver, const std::string& volume_name,
                                    const std::string& node_name) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(Phase::kDone);
  SqliteStatement s(
      *db_, "DELETE FROM attachments WHERE flex_driver=? AND volume_name=? AND node_name=?");
  s.Bind(flex_driver).Bind(volume_name).Bind(node_name);
  return s.Run("delete attachment");
}

StatusOr<std::vector<AttachmentRecord>> StateStore::ListAttachments() {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kAttachmentColumns, "attachments", "").c_str());
  return CollectRows<AttachmentRecord>(*db_, s, ReadAttachment);
}

Status StateStore::PutStaging(const StagingRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(r.phase);
  SqliteStatement s(*db_, (std::string("INSERT OR REPLACE INTO stagings(") + kStagingColumns +
                           ") VALUES(?,?,?,?,?,?,?,?,?,?,?)")
                              .c_str());
  s.Bind(r.staging_path).Bind(r.flex_driver).Bind(r.volume_name).Bind(r.csi_driver);
  s.Bind(r.volume_id).Bind(std::string(r.owner == StagingOwner::kBridge ? "bridge" : "kubelet"));
  s.Bind(r.request.dump()).Bind(std::string(PhaseWord(kStagingWords, r.phase))).Bind(Now());
  s.Bind(std::string(StagingShapeName(r.shape))).Bind(int64_t{r.marker ? 1 : 0});
  return s.Run("write staging");
}

StatusOr<std::optional<StagingRecord>> StateStore::GetStaging(const std::string& staging_path) {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kStagingColumns, "stagings", "staging_path=?").c_str());
  s.Bind(staging_path);
  return FirstRow<StagingRecord>(*db_, s, ReadStaging);
}

StatusOr<std::optional<StagingRecord>> StateStore::FindStagingOfVolume(
    const std::string& flex_driver, const std::string& volume_name) {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_,
                    Select(kStagingColumns, "stagings", "flex_driver=? AND volume_name=?").c_str());
  s.Bind(flex_driver).Bind(volume_name);
  return FirstRow<StagingRecord>(*db_, s, ReadStaging);
}

Status StateStore::DeleteStaging(const std::string& staging_path) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(Phase::kDone);
  SqliteStatement s(*db_, "DELETE FROM stagings WHERE staging_path=?");
  s.Bind(staging_path);
  return s.Run("delete staging");
}

StatusOr<std::vector<StagingRecord>> StateStore::ListStagings() {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kStagingColumns, "stagings", "").c_str());
  return CollectRows<StagingRecord>(*db_, s, ReadStaging);
}

Status StateStore::PutPublication(const PublicationRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(r.phase);
  SqliteStatement s(*db_, "INSERT OR REPLACE INTO publications VALUES(?,?,?,?,?,?,?,?,?,?)");
  s.Bind(r.target_path).BindNullable(r.staging_path).Bind(r.flex_driver).Bind(r.volume_name);
  s.Bind(r.csi_driver).Bind(r.volume_id).Bind(r.pod_uid).Bind(int64_t{r.readonly ? 1 : 0});
  s.Bind(std::string(PhaseWord(kPublicationWords, r.phase))).Bind(Now());
  return s.Run("write publication");
}

StatusOr<std::optional<PublicationRecord>> StateStore::GetPublication(
    const std::string& target_path) {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kPublicationColumns, "publications", "target_path=?").c_str());
  s.Bind(target_path);
  return FirstRow<PublicationRecord>(*db_, s, ReadPublication);
}

Status StateStore::DeletePublication(const std::string& target_path) {
  std::lock_guard<std::mutex> lock(mu_);
  SetDurability(Phase::kDone);
  SqliteStatement s(*db_, "DELETE FROM publications WHERE target_path=?");
  s.Bind(target_path);
  return s.Run("delete publication");
}

StatusOr<std::vector<PublicationRecord>> StateStore::ListPublications() {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, Select(kPublicationColumns, "publications", "").c_str());
  return CollectRows<PublicationRecord>(*db_, s, ReadPublication);
}

StatusOr<int64_t> StateStore::CountPublicationsOfStaging(const std::string& staging_path) {
  std::lock_guard<std::mutex> lock(mu_);
  SqliteStatement s(*db_, "SELECT COUNT(*) FROM publications WHERE staging_path=?");
  s.Bind(staging_path);
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  if (s.Step() != SQLITE_ROW) return db_->Error("count publications");
  return s.Int(0);
}

StatusOr<RecordCounts> StateStore::CountRecords() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string unsettled =
      std::string("(SELECT COUNT(*) FROM attachments WHERE state != '") + kAttachmentWords.done +
      "') + (SELECT COUNT(*) FROM stagings WHERE state != '" + kStagingWords.done +
      "') + (SELECT COUNT(*) FROM publications WHERE state != '" + kPublicationWords.done + "')";
  SqliteStatement s(*db_,
                    ("SELECT (SELECT COUNT(*) FROM attachments), (SELECT COUNT(*) FROM stagings), "
                     "(SELECT COUNT(*) FROM publications), " +
                     unsettled)
                        .c_str());
  FLEXCSI_RETURN_IF_ERROR(s.prepared());
  if (s.Step() != SQLITE_ROW) return db_->Error("count records");
  return RecordCounts{s.Int(0), s.Int(1), s.Int(2), s.Int(3)};
}

nlohmann::json StateStore::ToJson(const AttachmentRecord& r) {
  return {{"flexDriver", r.flex_driver},
          {"volumeName", r.volume_name},
          {"nodeName", r.node_name},
          {"csiDriver", r.csi_driver},
          {"volumeId", r.volume_id},
          {"nodeId", r.node_id},
          {"publishContext", r.publish_context},
          {"state", PhaseWord(kAttachmentWords, r.phase)},
          {"updatedAt", r.updated_at}};
}

nlohmann::json StateStore::ToJson(const StagingRecord& r) {
  return {{"stagingPath", r.staging_path},
          {"flexDriver", r.flex_driver},
          {"volumeName", r.volume_name},
          {"csiDriver", r.csi_driver},
          {"volumeId", r.volume_id},
          {"owner", r.owner == StagingOwner::kBridge ? "bridge" : "kubelet"},
          {"stagedThroughCsi", r.StagedThroughCsi()},
          {"shape", StagingShapeName(r.shape)},
          {"marker", r.marker},
          {"state", PhaseWord(kStagingWords, r.phase)},
          {"updatedAt", r.updated_at}};
}

nlohmann::json StateStore::ToJson(const PublicationRecord& r) {
  return {{"targetPath", r.target_path},
          {"stagingPath", r.staging_path},
          {"flexDriver", r.flex_driver},
          {"volumeName", r.volume_name},
          {"csiDriver", r.csi_driver},
          {"volumeId", r.volume_id},
          {"podUid", r.pod_uid},
          {"readonly", r.readonly},
          {"state", PhaseWord(kPublicationWords, r.phase)},
          {"updatedAt", r.updated_at}};
}

}  // namespace flexcsi
