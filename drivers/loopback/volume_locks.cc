#include "drivers/loopback/volume_locks.h"

namespace flexcsi {
namespace loopback {

VolumeLocks::Guard::Guard(VolumeLocks* locks, std::string key)
    : locks_(locks), key_(std::move(key)) {
  std::unique_lock<std::mutex> lock(locks_->mu_);
  locks_->released_.wait(lock, [&] { return locks_->held_.count(key_) == 0; });
  locks_->held_[key_] = true;
}

VolumeLocks::Guard::~Guard() {
  {
    std::lock_guard<std::mutex> lock(locks_->mu_);
    locks_->held_.erase(key_);
  }
  locks_->released_.notify_all();
}

}  // namespace loopback
}  // namespace flexcsi
