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

#include "common/sqlite_database.h"
#include "common/status.h"


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

// What a staging leaves at its staging path, which decides how the reconciler and `flexcsi
// doctor` judge the record against the mount table. Drivers differ: most mount the volume at the
// staging path in NodeStageVolume; some only record the staging there and mount straight from
// the device in NodePublishVolume (csi-driver-host-path, several network filesystems); some have
// no STAGE_UNSTAGE at all.
enum class StagingShape {
  kDriverMount,  // NodeStageVolume mounted the volume at staging_path
  kRecordOnly,   // NodeStageVolume succeeded and left nothing mounted at staging_path
  kNoStage,      // the driver has no STAGE_UNSTAGE_VOLUME: no RPC was made
};
const char* StagingShapeName(StagingShape shape);  // "driver-mount", "record-only", "no-stage"

struct StagingRecord {
  std::string staging_path;
  std::string flex_driver;
  std::string volume_name;
  std::string csi_driver;
  std::string volume_id;
  StagingOwner owner = StagingOwner::kKubelet;
  // The NodeStage request minus secrets, plus what NodePublish needs later (publish context,
  // volume context, capability).
  nlohmann::json request = nlohmann::json::object();
  StagingShape shape = StagingShape::kDriverMount;
  // True when the bridge mounted its marker (a tiny tmpfs) at staging_path because the driver
  // left no mount there: kubelet calls unmountdevice only for a device mount path that is a
  // mount point (flexvolume.md §2.9), so a kubelet-owned staging must always leave one.
  bool marker = false;
  Phase phase = Phase::kInProgress;
  int64_t updated_at = 0;

  bool StagedThroughCsi() const { return shape != StagingShape::kNoStage; }
  // Whether something (the driver's mount or the bridge's marker) must be mounted at
  // staging_path while the record is done.
  bool ExpectsMount() const { return shape == StagingShape::kDriverMount || marker; }
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
  // 2: stagings gained `shape` and `marker` (version 1 knew only request.staged).
  static constexpr int kSchemaVersion = 2;

  // Opens (creating if needed) the database at `path` and migrates it to kSchemaVersion.
  // Fails with FAILED_PRECONDITION for a database written by a newer flexcsi.
  static StatusOr<std::unique_ptr<StateStore>> Open(const std::string& path);
  ~StateStore();

  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Insert or replace, keyed by (flex_driver, volume_name, node_name). A record holding another
  // CSI volume (csi_driver, volume_id) under the same key is never replaced: FAILED_PRECONDITION
  // (RefuseAnotherVolume), atomically with the write. Only DeleteAttachment frees the key.
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
  explicit StateStore(std::unique_ptr<SqliteDatabase> db) : db_(std::move(db)) {}
  // Sets synchronous=FULL for intent writes, NORMAL otherwise (see the comment at the top).
  // REQUIRES: mu_ held.
  void SetDurability(Phase phase_written);

  std::mutex mu_;
  std::unique_ptr<SqliteDatabase> db_;  // REQUIRES: mu_ held for every use
};

const char* PhaseName(Phase phase);  // "in-progress", "done", "removing"

// The refusal when a record (a staging path, a target, an attachment) already holds another CSI
// volume than the one a call resolves to: a record is never taken over by another volume, since
// its undo (unstage, unpublish, detach) would then act on the wrong one. OK when the volumes are
// the same; else FAILED_PRECONDITION "<where> already holds volume <recorded> of <driver>, not
// <new> of <driver>". `where` names the record ("staging path /x", "volume pv-1 on node n1").
Status RefuseAnotherVolume(const std::string& where, const std::string& recorded_csi_driver,
                           const std::string& recorded_volume_id, const std::string& csi_driver,
                           const std::string& volume_id);

}  // namespace flexcsi
