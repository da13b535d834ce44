#include "controller/event_recorder.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <spdlog/spdlog.h>

namespace flexcsi::controller {
namespace {

std::string Format(bool micro) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (micro) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        now.time_since_epoch()).count() % 1000000;
    char frac[16];
    std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(us));
    out += frac;
  }
  return out + "Z";
}

// The object's uid ("" when it has none).
std::string UidOf(const nlohmann::json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("uid", "");
}

}  // namespace

std::string NowRfc3339() { return Format(false); }
std::string NowRfc3339Micro() { return Format(true); }

size_t EventRecorder::RememberedEvents() {
  const char* n = std::getenv("FLEXCSI_CONTROLLER_REMEMBERED_EVENTS");
  const long long parsed = n != nullptr ? std::atoll(n) : 0;
  return parsed > 0 ? static_cast<size_t>(parsed) : 1024;
}

EventRecorder::EventRecorder(kube::KubeClient* client, std::string component, std::string host)
    : client_(client), component_(std::move(component)), host_(std::move(host)) {}

void EventRecorder::Record(const nlohmann::json& object, const std::string& type,
                           const std::string& reason, const std::string& message) {
  const auto& meta = object.at("metadata");
  const std::string ns = meta.value("namespace", "default");
  const std::string uid = meta.value("uid", "");
  const std::string now = NowRfc3339();
  const std::string key = uid + "/" + type + "/" + reason + "/" + message;
  spdlog::info("event {} {} on {}/{}: {}", type, reason, ns, meta.value("name", ""), message);

  std::unique_lock<std::mutex> lock(mu_);
  if (Seen* seen = seen_.Find(key)) {
    const int count = ++seen->count;
    const std::string name = seen->name;
    lock.unlock();
    auto patched = client_->Patch(kube::ResourcePath::Core("events", ns).Named(name),
                                  kube::PatchType::kMerge,
                                  {{"count", count}, {"lastTimestamp", now}});
    if (patched.ok()) return;
    lock.lock();
    seen_.Erase(key);  // the event expired or was deleted: write a new one
    lock.unlock();
  } else {
    lock.unlock();
  }

  // client-go names events "<object>.<hex unix nanos>".
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%llx", static_cast<unsigned long long>(nanos));
  const std::string name = meta.value("name", "object") + "." + suffix;
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"involvedObject",
       {{"kind", object.value("kind", "PersistentVolumeClaim")},
        {"apiVersion", object.value("apiVersion", "v1")},
        {"namespace", ns},
        {"name", meta.value("name", "")},
        {"uid", uid},
        {"resourceVersion", meta.value("resourceVersion", "")}}},
      {"reason", reason},
      {"message", message},
      {"type", type},
      {"source", {{"component", component_}, {"host", host_}}},
      {"reportingComponent", component_},
      {"reportingInstance", host_},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now}};
  auto created = client_->Create(kube::ResourcePath::Core("events", ns), event);
  if (!created.ok()) {
    spdlog::warn("could not record event {} on {}/{}: {}", reason, ns, meta.value("name", ""),
                 created.status().ToString());
    return;
  }
  lock.lock();
  seen_.Put(key, Seen{name, ns, 1, now});
}

bool EventRecorder::RecordOnce(const nlohmann::json& object, const std::string& type,
                               const std::string& reason, const std::string& message) {
  const std::string key = UidOf(object) + "/" + type + "/" + reason + "/" + message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!once_.Put(key, true)) return false;
  }
  Record(object, type, reason, message);
  return true;
}

}  // namespace flexcsi::controller
