// MigrationJournal: what `flexcsi migrate` has done and is about to do, one row per PV, kept in
// SQLite so that a kill -9 at any point can be resumed (`apply` again) or undone (`rollback`).
//
// Every step is written, and fsync'd (WAL, synchronous=FULL), BEFORE the cluster write it
// announces: after a crash the journal names a step that may or may not have happened, never one
// that happened unannounced. Steps are therefore re-entrant: the mover re-reads the live objects
// and decides, it never repeats a write blindly.
//
// The row keeps the original PV and PVC exactly as read (so rollback can re-create the PV with
// its original source and binding) and the recorded workload replicas. PVs and PVCs name secrets
// only by reference; Secrets are never read, so no secret data can reach the journal.
//
// One journal directory is used by one process at a time: Open takes an exclusive flock on
// DIR/lock and refuses a second concurrent run with a message naming the holder's pid.
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

namespace flexcsi::migrate {

// A workload scaled to zero for a migration, with the replicas to restore.
struct ScaledWorkload {
  std::string group_version;  // "apps/v1" or "v1" (ReplicationController)
  std::string resource;       // "deployments", "statefulsets", "replicasets", ...
  std::string kind;           // "Deployment", ...
  std::string namespace_;
  std::string name;
  int64_t replicas = 0;  // as read before scaling down
};

nlohmann::json ToJson(const ScaledWorkload& w);
StatusOr<ScaledWorkload> ScaledWorkloadFromJson(const nlohmann::json& j);

// Where a migration of one PV stands.
enum class RecordState {
  kInProgress,  // a step was announced and the run did not reach the end
  kMoved,       // apply finished: the claim is bound to the CSI PV
  kRolledBack,  // rollback finished: the claim is bound to the original PV again
};
const char* RecordStateName(RecordState s);

struct MigrationRecord {
  std::string pv_name;
  std::string direction = "apply";  // "apply" or "rollback"
  std::string step;                 // the last step announced (see pv_mover.h)
  RecordState state = RecordState::kInProgress;
  nlohmann::json original_pv;   // as read before the first write
  nlohmann::json original_pvc;  // as read before the first write
  nlohmann::json target_pv;     // the translator's output, ready to create
  std::string original_reclaim_policy;
  // The claimRef uid written to release a PV (see pv_mover.h); empty until chosen.
  std::string release_uid;
  std::string new_pv_uid;  // uid of the PV this run created, once known
  std::vector<ScaledWorkload> workloads;
  bool workloads_recorded = false;  // replicas were read before any scale-down
  std::string last_error;
  int64_t updated_at = 0;  // unix seconds, set by the journal
  // Set when the PV moves with the other PVs of its workloads under one scale-down: the id of the
  // WorkloadGroupRecord that scales and restores them. `workloads` then holds the group's.
  std::string workload_group;

  std::string ClaimKey() const;  // "namespace/name" of the original claim
};

// All PVs of a set of workloads (a StatefulSet's volumeClaimTemplates claims, a Deployment with
// two claims, workloads sharing a claim) move under one scale-down, in either direction (apply
// and rollback use the same steps). The group's row is written with the replicas read BEFORE the
// scale-down, and is never re-read afterwards, so a resume restores exactly the original
// replicas, once (restoring writes only while a workload is at 0).
//   group-scaling-down        replicas recorded; /scale to 0 for every workload
//   group-moving              each member PV runs its own steps (see pv_mover.h)
//   group-restoring-replicas  entered only when no member is in progress in the journal, in
//                             either direction
//   group-done
// One row per set of workloads: a rollback of a group apply left in flight takes the row over
// (keeping its replicas: the workloads are at 0 because of us), and a rollback after a finished
// apply starts the row afresh, reading the replicas again.
struct WorkloadGroupRecord {
  std::string id;  // WorkloadGroupId of the workloads
  std::string step;
  std::vector<ScaledWorkload> workloads;
  std::vector<std::string> members;  // PV names
  int64_t updated_at = 0;
  std::string direction = "apply";  // of the run that last opened the group: apply or rollback
};
const std::vector<std::string>& WorkloadGroupSteps();

// One StorageClass replaced by its CSI twin under the same name (storage_class_mover.h). Both
// objects are kept from the first step on, so a run killed between the delete and the create
// re-creates the right one, and rollback restores the original exactly.
struct StorageClassRecord {
  std::string name;
  std::string direction = "apply";  // of the run that last wrote it: apply or rollback
  std::string step;                 // sc-deleting, sc-creating, sc-done
  RecordState state = RecordState::kInProgress;
  nlohmann::json original;  // as read before the first write, server fields stripped
  nlohmann::json twin;      // the CSI twin, ready to create
  std::string last_error;
  int64_t updated_at = 0;
};

class MigrationJournal {
 public:
  // For `apply` and `rollback`. When DIR/journal.db exists: takes the run lock (DIR/lock, flock;
  // FailedPrecondition naming the holder's pid while another run holds it) and opens it. When it
  // does not, nothing is created yet (but a DIR whose journal could never be made, its deepest
  // existing part not a directory this process may write, is refused at once): reads answer
  // empty, and the first Put* creates DIR (0700),
  // takes the lock and creates the database (0600), so a run that refuses everything it was
  // asked writes nothing at all. Every cluster write is journaled before it is sent, so a second
  // run on a journal that did not exist yet is refused at its first write, before any cluster
  // write; so is a run whose journal another run created meanwhile (it read it as empty).
  static StatusOr<std::unique_ptr<MigrationJournal>> Open(const std::string& dir);
  // For `status`: no lock (WAL lets readers in while a run writes). NotFound when there is no
  // journal in DIR.
  static StatusOr<std::unique_ptr<MigrationJournal>> OpenForReading(const std::string& dir);
  ~MigrationJournal();

  // Durable before it returns (fsync). Also appends (pv, direction, step) to the history.
  Status Put(const MigrationRecord& record);
  StatusOr<std::optional<MigrationRecord>> Get(const std::string& pv_name);
  StatusOr<std::vector<MigrationRecord>> List();
  // (step, direction, unix seconds) in the order written.
  struct HistoryEntry {
    std::string direction;
    std::string step;
    int64_t at = 0;
  };
  StatusOr<std::vector<HistoryEntry>> History(const std::string& pv_name);

  // Workload groups: durable before return, like Put; the group's history is kept under the
  // name "group:<id>".
  Status PutGroup(const WorkloadGroupRecord& group);
  StatusOr<std::optional<WorkloadGroupRecord>> GetGroup(const std::string& id);
  StatusOr<std::vector<WorkloadGroupRecord>> ListGroups();

  // StorageClasses: durable before return, like Put; history under the name "storageclass:<name>".
  Status PutStorageClass(const StorageClassRecord& record);
  StatusOr<std::optional<StorageClassRecord>> GetStorageClass(const std::string& name);
  StatusOr<std::vector<StorageClassRecord>> ListStorageClasses();

  // Safe from any number of threads: every call takes the journal's mutex (one SQLite
  // connection, one writer), and each Put is its own transaction.

  const std::string& dir() const { return dir_; }

 private:
  MigrationJournal(std::string dir, std::unique_ptr<SqliteDatabase> db, int lock_fd);
  static StatusOr<std::unique_ptr<MigrationJournal>> OpenDatabase(const std::string& dir,
                                                                  int lock_fd);
  // REQUIRES: mu_ held. Creates the journal of a run that opened none (see Open).
  Status CreateOnFirstWrite();

  std::string dir_;
  std::unique_ptr<SqliteDatabase> db_;  // null until created (see Open)
  int lock_fd_;
  std::mutex mu_;
};

// The default journal directory: $XDG_STATE_HOME/flexcsi/migrate, else
// ~/.local/state/flexcsi/migrate.
std::string DefaultJournalDir();

}  // namespace flexcsi::migrate
