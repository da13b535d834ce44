// Per-volume serialisation. Two RPCs on the same volume (say a retried NodeStage racing the
// original) run one after the other; RPCs on different volumes run in parallel. Blocking rather
// than answering ABORTED keeps a CO's retries cheap: the retry simply finds the work done.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

namespace flexcsi {
namespace loopback {

class VolumeLocks {
 public:
  // Holds the lock on one key for its lifetime.
  class Guard {
   public:
    Guard(VolumeLocks* locks, std::string key);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    VolumeLocks* locks_;
    std::string key_;
  };

  // Blocks until no other Guard holds `key`. Keys are free-form: "vol:<id>", "name:<name>".
  Guard Lock(const std::string& key) { return Guard(this, key); }

 private:
  std::mutex mu_;
  std::condition_variable released_;
  std::map<std::string, bool> held_;  // only keys currently held are present
};

}  // namespace loopback
}  // namespace flexcsi
