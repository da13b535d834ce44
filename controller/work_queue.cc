#include "controller/work_queue.h"

#include <algorithm>

namespace flexcsi::controller {

std::chrono::milliseconds BackoffDelay(int failures, std::chrono::milliseconds base,
                                       std::chrono::milliseconds max_delay) {
  if (failures <= 0) return std::chrono::milliseconds(0);
  std::chrono::milliseconds delay = base;
  for (int i = 1; i < failures && delay < max_delay; ++i) delay *= 2;
  return std::min(delay, max_delay);
}

WorkQueue::WorkQueue(std::chrono::milliseconds base_delay, std::chrono::milliseconds max_delay)
    : base_delay_(base_delay), max_delay_(max_delay) {}

void WorkQueue::QueueLocked(const std::string& key) {
  UndelayLocked(key);
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::DelayLocked(const std::string& key, Clock::time_point when, bool backoff) {
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    // A backoff retry is never brought forward by a plain delayed add; otherwise the earlier
    // time wins.
    if (!backoff && (backing_off_.count(key) || it->second <= when)) return;
    delayed_.erase({it->second, key});
  }
  delayed_at_[key] = when;
  delayed_.emplace(when, key);
  if (backoff) backing_off_.insert(key);
  cv_.notify_one();
}

void WorkQueue::UndelayLocked(const std::string& key) {
  auto it = delayed_at_.find(key);
  if (it == delayed_at_.end()) return;
  delayed_.erase({it->second, key});
  delayed_at_.erase(it);
  backing_off_.erase(key);
}

void WorkQueue::Add(const std::string& key, const std::string& revision) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  auto failed = failed_revision_.find(key);
  const bool changed = !revision.empty() && failed != failed_revision_.end() &&
                       !failed->second.empty() && failed->second != revision;
  if (!revision.empty()) next_revision_[key] = revision;
  if (processing_.count(key)) {
    dirty_.insert(key);
    return;
  }
  if (backing_off_.count(key)) {
    if (!changed) return;  // the pending retry will run it
    failures_.erase(key);  // a new revision is a new attempt
    failed_revision_.erase(key);
  }
  QueueLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_ || queued_.count(key)) return;
  DelayLocked(key, Clock::now() + delay, /*backoff=*/false);
}

void WorkQueue::PromoteDueLocked() {
  const auto now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayed_at_.erase(key);
    backing_off_.erase(key);
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
  auto next = next_revision_.find(key);
  if (next != next_revision_.end()) {
    attempt_revision_[key] = next->second;
  } else {
    attempt_revision_.erase(key);
  }
  return key;
}

std::chrono::milliseconds WorkQueue::Done(const std::string& key, Outcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  const bool dirty = dirty_.erase(key) > 0;
  std::string attempt;
  if (auto it = attempt_revision_.find(key); it != attempt_revision_.end()) {
    attempt = it->second;
    attempt_revision_.erase(it);
  }
  switch (outcome) {
    case Outcome::kSucceeded:
      failures_.erase(key);
      failed_revision_.erase(key);
      if (dirty) {
        QueueLocked(key);
      } else {
        next_revision_.erase(key);
      }
      return std::chrono::milliseconds(0);
    case Outcome::kDeferred:
      return std::chrono::milliseconds(0);
    case Outcome::kFailed:
      break;
  }
  const int failures = ++failures_[key];
  if (!attempt.empty()) failed_revision_[key] = attempt;
  auto next = next_revision_.find(key);
  if (dirty && !attempt.empty() && next != next_revision_.end() && next->second != attempt) {
    // The object changed in a way that matters while this attempt ran: a new attempt with the
    // backoff started over, but not sooner than the first backoff step. On a real cluster the
    // PV controller annotates a new claim while our first attempt runs; retrying at once gave
    // two identical failures and events within milliseconds.
    failures_.erase(key);
    failed_revision_.erase(key);
    DelayLocked(key, Clock::now() + base_delay_, /*backoff=*/true);
    return base_delay_;
  }
  const auto delay = BackoffDelay(failures, base_delay_, max_delay_);
  DelayLocked(key, Clock::now() + delay, /*backoff=*/true);
  return delay;
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

size_t WorkQueue::ReadyLength() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  size_t due = 0;
  for (const auto& [when, key] : delayed_) {
    if (when > now) break;
    ++due;
  }
  return queue_.size() + due;
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace flexcsi::controller
