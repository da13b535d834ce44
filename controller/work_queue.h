// WorkQueue: client-go's workqueue semantics in miniature. A key is queued at most once, is
// processed by at most one worker at a time (a key re-added while being processed runs again
// afterwards), and failed keys come back after an exponential per-key backoff.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace flexcsi::controller {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WorkQueue(std::chrono::milliseconds base_delay = std::chrono::milliseconds(250),
                     std::chrono::milliseconds max_delay = std::chrono::seconds(30));

  void Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // Blocks until a key is ready or ShutDown(); nullopt after shutdown.
  std::optional<std::string> Get();
  // REQUIRES: `key` came from Get(). Marks it no longer in progress.
  void Done(const std::string& key);
  // Re-queues `key` after its next backoff delay.
  void Retry(const std::string& key);
  // Forgets the key's failure count (it succeeded).
  void Forget(const std::string& key);
  void ShutDown();
  size_t Length() const;

 private:
  void PromoteDueLocked();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  std::set<std::string> processing_;
  std::set<std::string> dirty_;  // re-added while processing
  std::multimap<Clock::time_point, std::string> delayed_;
  std::map<std::string, int> failures_;
  std::chrono::milliseconds base_delay_, max_delay_;
  bool shutdown_ = false;
};

}  // namespace flexcsi::controller
