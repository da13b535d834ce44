// RepairBackoff: which records' repairs keep failing, and when each may be tried again.
//
// A record whose undo failed (a rollback in a FlexVolume call, or a reconciler pass) is retried
// 1 s later, then 2 s, 4 s, ... doubling up to 5 minutes, per record, so that a driver that keeps
// refusing one volume is not called at full rate forever and the other records are not held up.
// The table lives in memory: a restart of the bridge forgets it and retries every unfinished
// record once at start-up, which is what the start-up reconciliation does anyway.
//
// Keys name a record the way people read them ("staging /var/lib/kubelet/..."); `kind` is the
// record's table (attachment | staging | publication), for the metric. Failing records are shown
// by `bridge.health` (and so by `flexcsi doctor`) and counted in flexcsi_failing_repairs.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace flexcsi {

class Metrics;

class RepairBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFirstDelay{1};
  static constexpr std::chrono::seconds kMaxDelay{300};

  // The delay after `failures` consecutive failures (>= 1): 1 s, 2 s, 4 s, ... kMaxDelay.
  static std::chrono::seconds DelayAfter(int failures);

  // `metrics` may be null; otherwise flexcsi_failing_repairs follows every change.
  explicit RepairBackoff(Metrics* metrics = nullptr);

  // Whether a repair of `key` may be tried at `now`: always for a record that has not failed.
  bool Due(const std::string& key, Clock::time_point now) const;
  // One more failed attempt on `key`; its next attempt waits DelayAfter(attempts).
  void RecordFailure(const std::string& kind, const std::string& key, const std::string& error,
                     Clock::time_point now);
  // The record was repaired (or found fine): it is forgotten.
  void RecordSuccess(const std::string& key);
  // Forgets every key not in `existing` (records finished or removed by other means).
  void Retain(const std::set<std::string>& existing);

  // The earliest next attempt of any failing record.
  std::optional<Clock::time_point> NextDue() const;

  struct FailingRecord {
    std::string kind;
    std::string key;
    int attempts = 0;
    std::string last_error;
    Clock::time_point next_attempt;
  };
  std::vector<FailingRecord> Failing() const;  // sorted by key

 private:
  // REQUIRES: mu_ held.
  void PublishCountsLocked();

  Metrics* metrics_;
  mutable std::mutex mu_;
  std::map<std::string, FailingRecord> records_;  // by key; guarded by mu_
};

// The keys of each record kind, shared by the call paths and the reconciler.
std::string StagingRepairKey(const std::string& staging_path);
std::string PublicationRepairKey(const std::string& target_path);
std::string AttachmentRepairKey(const std::string& flex_driver, const std::string& volume_name,
                                const std::string& node_name);

}  // namespace flexcsi
