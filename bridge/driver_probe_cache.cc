#include "bridge/driver_probe_cache.h"

#include <utility>

namespace flexcsi {
namespace {

std::string ProbeAgeText(DriverProbeCache::Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

}  // namespace

DriverProbeCache::DriverProbeCache(const std::vector<DriverConfig>& drivers, ProbeFn probe,
                                   Options options)
    : drivers_(drivers), probe_(std::move(probe)), options_(options) {
  results_.reserve(drivers_.size());
  for (const auto& d : drivers_) {
    Result r;
    r.flex_driver = d.flex_driver;
    r.endpoint = d.csi_endpoint;
    r.message = "not probed yet";
    results_.push_back(std::move(r));
  }
}

DriverProbeCache::~DriverProbeCache() { Stop(); }

void DriverProbeCache::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  threads_.reserve(drivers_.size());
  for (size_t i = 0; i < drivers_.size(); ++i) threads_.emplace_back([this, i] { ProbeLoop(i); });
}

void DriverProbeCache::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void DriverProbeCache::ProbeLoop(size_t index) {
  const DriverConfig& driver = drivers_[index];
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    results_[index].probing = true;
    results_[index].probing_since = Clock::now();
    lock.unlock();
    Status probe = probe_(driver, Deadline::In(options_.probe_timeout));
    lock.lock();
    Result& r = results_[index];
    r.probing = false;
    r.probed = true;
    r.ready = probe.ok();
    r.code = probe.code();
    r.message = probe.ok() ? "ready" : probe.ToString();
    r.answered_at = Clock::now();
    wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

std::vector<DriverProbeCache::Result> DriverProbeCache::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return results_;
}

bool DriverProbeCache::Fresh(const Result& r, Clock::time_point now) const {
  return r.probed && r.ready && now - r.answered_at <= options_.stale_after;
}

bool DriverProbeCache::AllReady() const {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Result& r : results_) {
    if (!Fresh(r, now)) return false;
  }
  return true;
}

std::string DriverProbeCache::Describe() const {
  const auto now = Clock::now();
  std::string out;
  for (const Result& r : Snapshot()) {
    out += r.flex_driver + ": ";
    if (!r.probed) {
      out += "not probed yet";
    } else if (Fresh(r, now)) {
      out += "ready (probed " + ProbeAgeText(now - r.answered_at) + " ago)";
    } else if (r.ready) {
      out += "no answer for " + ProbeAgeText(now - r.answered_at) + " (stale after " +
             ProbeAgeText(options_.stale_after) + ")";
    } else {
      out += std::string("not ready (") + CodeName(r.code) + ", probed " +
             ProbeAgeText(now - r.answered_at) + " ago)";
    }
    if (r.probing) out += "; probe in progress for " + ProbeAgeText(now - r.probing_since);
    out += "\n";
  }
  return out;
}

}  // namespace flexcsi
