#include "common/volume_locks.h"

namespace flexcsi {

VolumeLocks::Guard VolumeLocks::Lock(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  released_.wait(lock, [&] { return held_.count(key) == 0; });
  held_[key] = 1;
  return Guard(this, key);
}

void VolumeLocks::Release(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(key);
  }
  released_.notify_all();
}

size_t VolumeLocks::HeldCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

}  // namespace flexcsi
