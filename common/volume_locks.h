// VolumeLocks: serialises work on one volume while letting work on different volumes run in
// parallel. The bridge needs it because kubelet does not serialise mounts of one PV for attach:false
// drivers (flexvolume.md §2.10) and the CSI spec asks a CO for one call per volume in flight; the
// bundled driver needs it because a CO's retry may race the original RPC. Blocking rather than
// answering ABORTED keeps such retries cheap: the retry simply finds the work done.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

namespace flexcsi {

class VolumeLocks {
 public:
  // Holds the lock of one key until destroyed.
  class Guard {
   public:
    Guard(VolumeLocks* locks, std::string key) : locks_(locks), key_(std::move(key)) {}
    ~Guard() { locks_->Release(key_); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    VolumeLocks* locks_;
    std::string key_;
  };

  // Blocks until no other Guard holds `key`.
  Guard Lock(const std::string& key);

  // Keys currently held (for tests and the health report).
  size_t HeldCount();

 private:
  void Release(const std::string& key);

  std::mutex mu_;
  std::condition_variable released_;
  std::map<std::string, int> held_;  // key -> 1 while held; entries vanish on release
};

// The lock key of one CSI volume.
inline std::string VolumeLockKey(const std::string& csi_driver, const std::string& volume_id) {
  return csi_driver + "\n" + volume_id;
}

}  // namespace flexcsi
