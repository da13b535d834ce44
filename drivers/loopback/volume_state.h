// The driver's memory: volumes, snapshots and where each volume is published, staged and
// attached. Kept behind this small API so that the RPC handlers never see the file format.
//
// Every mutation is written to <state_dir>/state.json before it returns (temp file, fsync,
// rename, fsync of the directory), so a driver restarted at any moment finds either the old or
// the new state, never a torn one.
//
// Thread-safe: each call takes the state's own mutex. Callers that need a read-modify-write over
// one volume serialise on that volume with VolumeLocks (volume_locks.h) first.
//
// A shared store (OpenShared: --shared-store, several csi-loopback processes, one per node) is
// not owned by one process: every call takes an exclusive flock on <store>/lock, reloads
// state.json and writes it back before letting go, so no process overwrites another's record.
// A read-modify-write that must be atomic across processes holds LockStore() around it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {
namespace loopback {

// ControllerPublishVolume to one node.
struct ControllerPublication {
  bool readonly = false;
  std::string capability_key;  // CapabilityKey() of the capability it was published with
};

// NodePublishVolume at one target path. Each target keeps its own: kubelet publishes one volume
// to every pod on the node with that pod's read-only flag and fsGroup.
struct NodePublication {
  bool readonly = false;
  std::string capability_key;
  int64_t mount_group = -1;  // volume_mount_group applied at this target; -1 when none
};

struct VolumeRecord {
  std::string id;
  std::string name;
  uint64_t seq = 0;  // creation order; ListVolumes pages by it
  int64_t capacity_bytes = 0;
  bool block = false;   // created for raw block access only
  std::string fs_type;  // "ext4" or "xfs"; the filesystem NodeStage makes when the device is blank
  std::map<std::string, std::string> parameters;
  std::string source_snapshot_id;  // content source, at most one of the two set
  std::string source_volume_id;

  std::map<std::string, ControllerPublication> controller_publications;  // by node id
  // Node side. staging_path is empty when not staged; device is the loop device attached for
  // the volume (staged, or published without staging), empty when none.
  std::string staging_path;
  std::string staged_capability_key;
  std::string device;
  // With a shared store: the device's disk sequence number when this node attached it, so that
  // the node detaches only its own attachment (loop devices are one kernel's, and nodes
  // imitated on one machine share it); 0 when unknown.
  uint64_t device_seq = 0;
  std::map<std::string, NodePublication> node_publications;  // by target path
};

struct SnapshotRecord {
  std::string id;
  std::string name;
  uint64_t seq = 0;
  std::string source_volume_id;
  bool block = false;  // taken from a block volume: restores only into block volumes
  int64_t size_bytes = 0;
  int64_t creation_seconds = 0;
  int32_t creation_nanos = 0;
};

class VolumeState {
 public:
  // Loads <state_dir>/state.json (creating state_dir, volumes/ and snapshots/ when missing).
  // A missing state file is an empty state; an unreadable or corrupt one is DATA_LOSS, because
  // starting empty would orphan every volume. Holds an exclusive lock on <state_dir>/lock for
  // its lifetime: a second driver on the same state dir is FAILED_PRECONDITION, because two
  // writers would overwrite each other's state.
  static StatusOr<std::unique_ptr<VolumeState>> Open(const std::string& state_dir);
  // A store several processes use at once (see above). Its lock is taken per call, not held.
  static StatusOr<std::unique_ptr<VolumeState>> OpenShared(const std::string& store_dir);

  // Holds a shared store's file lock (reloading the store once on taking it) until destroyed;
  // calls made meanwhile by the same thread see and write under that one lock. Does nothing for
  // a state owned by one process. Take it after any VolumeLocks lock, never before one.
  class StoreLock {
   public:
    explicit StoreLock(const VolumeState* state);
    ~StoreLock();
    StoreLock(const StoreLock&) = delete;
    StoreLock& operator=(const StoreLock&) = delete;

   private:
    const VolumeState* state_;
  };
  StoreLock LockStore() const { return StoreLock(this); }

  ~VolumeState();
  VolumeState(const VolumeState&) = delete;
  VolumeState& operator=(const VolumeState&) = delete;

  // Backing files. Paths only; the state does not create or remove them.
  std::string VolumeFilePath(const std::string& volume_id) const;
  std::string SnapshotFilePath(const std::string& snapshot_id) const;
  const std::string& state_dir() const { return state_dir_; }

  std::optional<VolumeRecord> GetVolume(const std::string& id) const;
  std::optional<VolumeRecord> FindVolumeByName(const std::string& name) const;
  std::vector<VolumeRecord> ListVolumes() const;  // in creation order

  // Inserts or replaces by id; a new record (seq == 0) gets the next sequence number.
  // Returns the record as stored.
  StatusOr<VolumeRecord> PutVolume(VolumeRecord volume);
  Status RemoveVolume(const std::string& id);  // OK when absent

  // The highest sequence number handed out so far (0 when none); list tokens above it are bogus.
  uint64_t LastIssuedSeq() const;

  std::optional<SnapshotRecord> GetSnapshot(const std::string& id) const;
  std::optional<SnapshotRecord> FindSnapshotByName(const std::string& name) const;
  std::vector<SnapshotRecord> ListSnapshots() const;  // in creation order
  StatusOr<SnapshotRecord> PutSnapshot(SnapshotRecord snapshot);
  Status RemoveSnapshot(const std::string& id);

 private:
  explicit VolumeState(std::string state_dir);
  Status Load();
  // Shared stores: takes the file lock and reloads on the outermost acquisition per thread.
  void AcquireStore() const;
  void ReleaseStore() const;
  // REQUIRES: mu_ held.
  Status SaveLocked() const;

  const std::string state_dir_;
  int lock_fd_ = -1;  // flock'ed <state_dir>/lock (shared store: only while a call runs)
  bool shared_ = false;
  // Shared stores: one thread at a time holds the file lock; depth counts its nested holds.
  mutable std::recursive_mutex store_mu_;
  mutable int store_depth_ = 0;   // guarded by store_mu_
  mutable Status reload_status_;  // guarded by store_mu_: how the last reload went
  mutable std::mutex mu_;
  uint64_t next_seq_ = 1;                            // guarded by mu_
  std::map<std::string, VolumeRecord> volumes_;      // guarded by mu_
  std::map<std::string, SnapshotRecord> snapshots_;  // guarded by mu_
};

}  // namespace loopback
}  // namespace flexcsi
