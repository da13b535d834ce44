// WorkQueue: client-go's rate-limited workqueue in miniature, with external-provisioner's
// per-item backoff. A key is queued at most once, is processed by at most one worker at a time,
// and a key whose last attempt failed comes back only after its own exponential backoff (1 s,
// 2 s, 4 s, ... up to 5 min by default; reset by a success).
//
// The backoff is binding: informer updates, resyncs and re-adds while the key is being
// processed do NOT retry a failed key early (that is what made one failing claim retry 4-5
// times within 70 ms). Only a new *revision* does: callers pass, with each Add, a fingerprint
// of the parts of the object the work depends on (RelevantRevision); a key waiting out its
// backoff whose revision differs from the one that failed is a new attempt, queued at once with
// its backoff reset. Adds without a revision (resync of related objects, the journal) never
// bypass the backoff.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace flexcsi::controller {

// The delay after the `failures`-th consecutive failure (1-based): base * 2^(failures-1), at
// most max_delay.
std::chrono::milliseconds BackoffDelay(int failures, std::chrono::milliseconds base,
                                       std::chrono::milliseconds max_delay);

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Outcome {
    kSucceeded,  // failures forgotten; a re-add during processing runs again at once
    kFailed,     // retried after the key's next backoff delay
    kDeferred,   // not attempted (e.g. not the leader): the caller re-adds it with AddAfter
  };

  explicit WorkQueue(std::chrono::milliseconds base_delay = std::chrono::seconds(1),
                     std::chrono::milliseconds max_delay = std::chrono::minutes(5));

  // Queues `key` now, unless it waits out a failure backoff with the same (or an unknown)
  // revision. While `key` is being processed it is marked to run again afterwards (which a
  // failure turns into its backoff retry unless the revision changed meanwhile).
  void Add(const std::string& key, const std::string& revision = "");
  // Queues `key` after `delay` (the earlier time wins if it is already waiting).
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // Blocks until a key is ready or ShutDown(); nullopt after shutdown.
  std::optional<std::string> Get();
  // REQUIRES: `key` came from Get(). Marks it no longer in progress. Returns the retry delay
  // for kFailed (the first backoff step, with the backoff reset, when the revision changed
  // while the attempt ran), else 0.
  std::chrono::milliseconds Done(const std::string& key, Outcome outcome);
  void ShutDown();

  // All keys queued or waiting for a later time.
  size_t Length() const;
  // Keys ready to be handed out by Get() now.
  size_t ReadyLength() const;
  // Consecutive failures of `key` (0 once it succeeded).
  int Failures(const std::string& key) const;

 private:
  void QueueLocked(const std::string& key);
  void DelayLocked(const std::string& key, Clock::time_point when, bool backoff);
  void UndelayLocked(const std::string& key);
  void PromoteDueLocked();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  std::set<std::string> processing_;
  std::set<std::string> dirty_;  // re-added while processing
  // One waiting entry per key: by time (for Get) and by key.
  std::set<std::pair<Clock::time_point, std::string>> delayed_;
  std::map<std::string, Clock::time_point> delayed_at_;
  std::set<std::string> backing_off_;  // delayed entries that are failure retries
  std::map<std::string, int> failures_;
  // Revisions: the latest one added (for the next attempt), the one the running attempt saw,
  // and the one that failed. Entries exist only while a key is queued, running or failing.
  std::map<std::string, std::string> next_revision_, attempt_revision_, failed_revision_;
  std::chrono::milliseconds base_delay_, max_delay_;
  bool shutdown_ = false;
};

}  // namespace flexcsi::controller
