#include "bridge/repair_backoff.h"

#include <algorithm>

#include "bridge/metrics.h"

namespace flexcsi {

constexpr std::chrono::seconds RepairBackoff::kFirstDelay;
constexpr std::chrono::seconds RepairBackoff::kMaxDelay;

std::chrono::seconds RepairBackoff::DelayAfter(int failures) {
  std::chrono::seconds delay = kFirstDelay;
  for (int i = 1; i < failures && delay < kMaxDelay; ++i) delay *= 2;
  return std::min(delay, kMaxDelay);
}

RepairBackoff::RepairBackoff(Metrics* metrics) : metrics_(metrics) {
  std::lock_guard<std::mutex> lock(mu_);
  PublishCountsLocked();
}

bool RepairBackoff::Due(const std::string& key, Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  return it == records_.end() || it->second.next_attempt <= now;
}

void RepairBackoff::RecordFailure(const std::string& kind, const std::string& key,
                                  const std::string& error, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  FailingRecord& r = records_[key];
  r.kind = kind;
  r.key = key;
  r.attempts += 1;
  r.last_error = error;
  r.next_attempt = now + DelayAfter(r.attempts);
  PublishCountsLocked();
}

void RepairBackoff::RecordSuccess(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (records_.erase(key) > 0) PublishCountsLocked();
}

void RepairBackoff::Retain(const std::set<std::string>& existing) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (auto it = records_.begin(); it != records_.end();) {
    if (existing.count(it->first) == 0) {
      it = records_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed) PublishCountsLocked();
}

std::optional<RepairBackoff::Clock::time_point> RepairBackoff::NextDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Clock::time_point> earliest;
  for (const auto& [key, r] : records_) {
    if (!earliest || r.next_attempt < *earliest) earliest = r.next_attempt;
  }
  return earliest;
}

std::vector<RepairBackoff::FailingRecord> RepairBackoff::Failing() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FailingRecord> out;
  for (const auto& [key, r] : records_) out.push_back(r);
  return out;
}

void RepairBackoff::PublishCountsLocked() {
  if (metrics_ == nullptr) return;
  std::map<std::string, int64_t> counts{{"attachment", 0}, {"staging", 0}, {"publication", 0}};
  for (const auto& [key, r] : records_) ++counts[r.kind];
  for (const auto& [kind, n] : counts) metrics_->SetFailingRepairs(kind, n);
}

std::string StagingRepairKey(const std::string& staging_path) { return "staging " + staging_path; }

std::string PublicationRepairKey(const std::string& target_path) {
  return "publication " + target_path;
}

std::string AttachmentRepairKey(const std::string& flex_driver, const std::string& volume_name,
                                const std::string& node_name) {
  return "attachment of " + volume_name + " (" + flex_driver + ") to " + node_name;
}

}  // namespace flexcsi
