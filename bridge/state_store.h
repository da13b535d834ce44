// StateStore: what the bridge has done to the node, persisted crash-safely in SQLite.
//
// FlexVolume's unmount, unmountdevice and detach carry only a path or a volume name, and every
// call is a fresh process, so the bridge must remember which CSI volume lives at each path. Each
// record moves through an in-progress state (written before the CSI call), a done state (written
// after it succeeded) and a removing state; a crash leaves at most one record per volume in an
// in-progress or removing state, which ReconcileWithMountTable later finishes or rolls back.
//
// Every transition is one SQLite transaction in WAL mode, durable against a crash of the process.
// Writes of an in-progress record (the intent, written before an RPC that mounts or attaches) are
// also fsync'd (synchronous=FULL), so they survive a power cut: without them the bridge could not
// undo what a driver holds persistently, such as a cloud attachment. Other transitions (done,
// removing, delete) skip the fsync (synchronous=NORMAL): if a power cut loses one, reconciliation
// reaches the same end, because an in-progress record whose path is mounted is promoted and
// nothing is mounted after a power loss. This takes three of the four fsyncs out of a
// mount+unmount round trip. Secrets are never stored: callers pass request JSON without them.
//
// Thread-safe: one connection guarded by a mutex (transitions are tiny; CSI calls dominate).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

struct sqlite3;

namespace flexcsi {

// The three phases of a record. Stored as table-specific words (attaching/attached/detaching,
// staging/staged/unstaging, publishing/published/unpublishing) so the database reads naturally.
enum class Phase { kInProgress, kDone, kRemoving };

struct AttachmentRecord {
  std::string flex_driver;
  std::string volume_name;  // PV or inline volume name: detach's only argument
  std::string node_name;    // Kubernetes node name
  std::string csi_driver;
  std::string volume_id;
  std::string node_id;  // CSI node id the volume was published to
  nlohmann::json publish_context = nlohmann::json::object();
  Phase phase = Phase::kInProgress;
  int64_t updated_at = 0;  // unix seconds, set by the store
};

// Who staged a volume: kubelet through mountdevice (attach:true drivers), or the bridge itself
// on the first mount of an attach:false driver's volume (reference-counted by publications).
enum class StagingOwner { kKubelet, kBridge };

struct StagingRecord {
  std::string staging_path;
  std::string flex_driver;
  std::string volume_name;
  std::string csi_driver;
  std::string volume_id;
  StagingOwner owner = StagingOwner::kKubelet;
  // The NodeStage request minus secrets, plus what NodePublish needs later (publish context,
  // volume context, capability). "staged":false marks a driver without STAGE_UNSTAGE, where no
  // RPC was made and nothing is mounted at staging_path.
  nlohmann::json request = nlohmann::json::object();
  Phase phase = Phase::kInProgress;
  int64_t updated_at = 0;

  bool StagedThroughCsi() const { return request.value("staged", true); }
};

struct PublicationRecord {
  std::string target_path;
  std::string staging_path;  // empty when the driver has no STAGE_UNSTAGE
  std::string flex_driver;
  std::string volume_name;
  std::string csi_driver;
  std::string volume_id;
  std::string pod_uid;
  bool readonly = false;
  Phase phase = Phase::kInProgress;
  int64_t updated_at = 0;
};

struct RecordCounts {
  int64_t attachments = 0;
  int64_t stagings = 0;
  int64_t publications = 0;
  int64_t unsettled = 0;  // records of any kind in an in-progress or removing phase
};

class StateStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens (creating if needed) the database at `path` and migrates it to kSchemaVersion.
  // Fails with FAILED_PRECONDITION for a database written by a newer flexcsi.
  static StatusOr<std::unique_ptr<StateStore>> Open(const std::string& path);
  ~StateStore();

  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Insert or replace, keyed by (flex_driver, volume_name, node_name).
  Status PutAttachment(const AttachmentRecord& record);
  StatusOr<std::optional<AttachmentRecord>> GetAttachment(const std::string& flex_driver,
                                                          const std::string& volume_name,
                                                          const std::string& node_name);
  Status DeleteAttachment(const std::string& flex_driver, const std::string& volume_name,
                          const std::string& node_name);
  StatusOr<std::vector<AttachmentRecord>> ListAttachments();

  // Insert or replace, keyed by staging_path.
  Status PutStaging(const StagingRecord& record);
  StatusOr<std::optional<StagingRecord>> GetStaging(const std::string& staging_path);
  // The staging of one volume of one FlexVolume driver, if any.
  StatusOr<std::optional<StagingRecord>> FindStagingOfVolume(const std::string& flex_driver,
                                                             const std::string& volume_name);
  Status DeleteStaging(const std::string& staging_path);
  StatusOr<std::vector<StagingRecord>> ListStagings();

  // Insert or replace, keyed by target_path.
  Status PutPublication(const PublicationRecord& record);
  StatusOr<std::optional<PublicationRecord>> GetPublication(const std::string& target_path);
  Status DeletePublication(const std::string& target_path);
  StatusOr<std::vector<PublicationRecord>> ListPublications();
  // The reference count of a staging: how many publications use it, in any phase.
  StatusOr<int64_t> CountPublicationsOfStaging(const std::string& staging_path);

  StatusOr<RecordCounts> CountRecords();

  // Each record as a JSON object, for `flexcsi-bridge state` and the bridge.state admin call.
  static nlohmann::json ToJson(const AttachmentRecord& r);
  static nlohmann::json ToJson(const StagingRecord& r);
  static nlohmann::json ToJson(const PublicationRecord& r);

 private:
  explicit StateStore(sqlite3* db) : db_(db) {}
  Status Migrate();
  // Sets synchronous=FULL for intent writes, NORMAL otherwise (see the comment at the top).
  // REQUIRES: mu_ held.
  void SetDurability(Phase phase_written);

  std::mutex mu_;
  sqlite3* db_;  // owned; REQUIRES: mu_ held for every use
};

const char* PhaseName(Phase phase);  // "in-progress", "done", "removing"

}  // namespace flexcsi
