#include "kube/informer.h"

#include <malloc.h>

#include <random>
#include <set>
#include <thread>

#include "kube/backoff.h"

namespace flexcsi::kube {
namespace {

using Json = nlohmann::json;

std::string KeyOf(const Json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return "";
  }
  const Json& meta = object["metadata"];
  std::string name = meta.value("name", "");
  std::string ns = meta.value("namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

// The cache holds each object as CBOR: about a quarter of nlohmann::json's tree (a PV of 1.1 KB
// of JSON text is 7.4 KB as a tree and 1.9 KB as CBOR), which at 10,000 claims and PVs is most
// of a controller's memory. Readers get a tree decoded for them.
std::string Pack(const Json& object) {
  std::string packed;
  Json::to_cbor(object, packed);
  return packed;
}

Json Unpack(const std::string& packed) { return Json::from_cbor(packed); }

std::string ResourceVersionOf(const Json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return "";
  }
  return object["metadata"].value("resourceVersion", "");
}

// Sleeps up to `duration`, waking early when stop is set. Returns false when stopped.
bool SleepUnlessStopped(std::chrono::milliseconds duration, const std::atomic<bool>& stop) {
  auto until = std::chrono::steady_clock::now() + duration;
  while (!stop.load()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50)));
  }
  return false;
}

}  // namespace

Informer::Informer(KubeClient* client, ResourcePath collection, ListOptions options)
    : client_(client), collection_(std::move(collection)), options_(std::move(options)) {}

void Informer::OnEvent(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::SetTransform(Transform transform) { transform_ = std::move(transform); }

void Informer::Run(const std::atomic<bool>& stop) {
  Backoff backoff(std::chrono::milliseconds(500), std::chrono::seconds(30));
  std::mt19937 random(std::random_device{}());
  auto notify = [&](const std::string& type, const Json& object) {
    for (const Handler& handler : handlers_) handler(type, object);
  };

  while (!stop.load()) {
    // List: the cache becomes exactly the listed objects.
    StatusOr<Json> listed = client_->List(collection_, options_);
    RecordError(listed.status());
    if (!listed.ok()) {
      if (!SleepUnlessStopped(backoff.Next(), stop)) return;
      continue;
    }
    std::string resource_version;
    if (listed->contains("metadata") && (*listed)["metadata"].is_object()) {
      resource_version = (*listed)["metadata"].value("resourceVersion", "");
    }
    if (transform_) {
      for (Json& item : (*listed)["items"]) item = transform_(std::move(item));
    }
    std::vector<Json> gone;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::map<std::string, std::string> fresh;
      for (const Json& item : (*listed)["items"]) fresh[KeyOf(item)] = Pack(item);
      for (auto& [key, old] : cache_) {
        if (fresh.find(key) == fresh.end()) gone.push_back(Unpack(old));
      }
      cache_ = std::move(fresh);
      resource_version_ = resource_version;
    }
    // Handlers run without the lock held, so they may call List()/Get() on this informer.
    for (const Json& object : gone) notify("DELETED", object);
    for (const Json& item : (*listed)["items"]) notify("ADDED", item);
    synced_ = true;
    // The listed tree is not kept while watching (it was, for the minutes of every watch); and
    // the heap it took goes back to the system, as a Go program's would after its next GC.
    *listed = Json();
    gone.clear();
    malloc_trim(0);

    // Watch from the list's resourceVersion until the server says it is too old (410), the
    // stream breaks, or stop is set; then list again.
    while (!stop.load()) {
      WatchOptions watch;
      watch.list = options_;
      watch.resource_version = resource_version;
      // Like client-go's reflector: 5 to 10 minutes, so many watchers do not end together.
      watch.timeout_seconds = 300 + static_cast<int>(random() % 300);
      watch.stop = &stop;
      watch.on_open = [this] { watching_ = true; };
      Status s = client_->Watch(collection_, watch, [&](const WatchEvent& event) {
        std::string rv = ResourceVersionOf(event.object);
        if (!rv.empty()) resource_version = rv;
        if (event.type == "BOOKMARK") {
          std::lock_guard<std::mutex> lock(mutex_);
          resource_version_ = resource_version;
          return true;
        }
        const Json object = transform_ ? transform_(event.object) : event.object;
        std::string key = KeyOf(object);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (event.type == "DELETED") {
            cache_.erase(key);
          } else {
            cache_[key] = Pack(object);
          }
          resource_version_ = resource_version;
        }
        notify(event.type, object);
        return !stop.load();
      });
      // Until the next stream opens (a resumed one waits for the rate limit too), changes do not
      // reach the cache.
      watching_ = false;
      if (stop.load()) return;
      RecordError(s);
      if (s.ok()) {
        backoff.Reset();
        continue;  // the server's timeout ended the watch: resume from the last version seen
      }
      if (s.code() != Code::kOutOfRange) {
        // A dropped stream or an unreachable server: wait, then list again (the versions we
        // missed may be gone from the server's history anyway).
        if (!SleepUnlessStopped(backoff.Next(), stop)) return;
      }
      break;  // re-list
    }
  }
}

std::vector<Json> Informer::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Json> out;
  out.reserve(cache_.size());
  for (const auto& [key, object] : cache_) out.push_back(Unpack(object));
  return out;
}

std::optional<Json> Informer::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return Unpack(it->second);
}

bool Informer::HasSynced() const { return synced_; }

bool Informer::Watching() const { return watching_; }

std::string Informer::ResourceVersion() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resource_version_;
}

Status Informer::LastError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

void Informer::RecordError(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = status;
}

}  // namespace flexcsi::kube
