#include "controller/work_queue.h"

#include <algorithm>

namespace flexcsi::controller {

WorkQueue::WorkQueue(std::chrono::milliseconds base_delay, std::chrono::milliseconds max_delay)
    : base_delay_(base_delay), max_delay_(max_delay) {}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  if (processing_.count(key)) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  delayed_.emplace(Clock::now() + delay, key);
  cv_.notify_one();
}

void WorkQueue::PromoteDueLocked() {
  const auto now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    if (processing_.count(key)) {
      dirty_.insert(key);
    } else if (queued_.insert(key).second) {
      queue_.push_back(key);
    }
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked();
    if (!queue_.empty()) break;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, delayed_.begin()->first);
    }
  }
  std::string key = queue_.front();
  queue_.pop_front();
  queued_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.erase(key) && queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::Retry(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int n = std::min(failures_[key]++, 16);
    delay = std::min<std::chrono::milliseconds>(base_delay_ * (1 << n), max_delay_);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + delayed_.size();
}

}  // namespace flexcsi::controller
