// Informer: list, then watch from the list's resourceVersion, re-list on 410 or a dropped stream;
// keeps a cache by namespace/name and calls handlers. The controller's only way of watching.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/kube_client.h"

namespace flexcsi::kube {

class Informer {
 public:
  using Handler = std::function<void(const std::string& type, const nlohmann::json& object)>;
  // Reduces each object to what the caller reads, as client-go's SetTransform: the cache then
  // holds, and handlers get, only that. Watching every Node of a big cluster for its labels
  // keeps a few hundred bytes per Node instead of its whole status. The result must keep
  // metadata.name (and namespace), which key the cache.
  using Transform = std::function<nlohmann::json(nlohmann::json object)>;

  Informer(KubeClient* client, ResourcePath collection, ListOptions options = {});

  // Called for ADDED (also for every object of a (re-)list), MODIFIED and DELETED; a re-list
  // reports objects that vanished meanwhile as DELETED. Handlers run on Run's thread, without
  // the cache lock (they may call List/Get). REQUIRES: registered before Run starts.
  void OnEvent(Handler handler);
  // REQUIRES: set before Run starts.
  void SetTransform(Transform transform);

  // Blocks until stop is set: list, watch, re-list. Errors are retried with backoff.
  void Run(const std::atomic<bool>& stop);

  // Snapshot of the cache; key "namespace/name" (or "name" when cluster-scoped).
  std::vector<nlohmann::json> List() const;
  std::optional<nlohmann::json> Get(const std::string& key) const;
  bool HasSynced() const;
  // True while a watch stream is open on the listed cache (its 2xx answer arrived): every
  // change then reaches the cache within the stream's latency. False before the first list,
  // between one stream and the next, and for good where watches are refused (403: the cache is
  // then only re-listed with backoff, and may be tens of seconds old). Callers that must not act
  // on an old cache read the server instead while this is false.
  bool Watching() const;
  // The resourceVersion the cache reflects: its list's, then each event's and bookmark's. Empty
  // before the first list.
  std::string ResourceVersion() const;
  // Why the last list or watch failed (OK once one succeeded again), for callers that wait for
  // HasSynced and want to say why it is taking long (e.g. 403 Forbidden: missing RBAC).
  Status LastError() const;

 private:
  void RecordError(const Status& status);

  KubeClient* client_;
  ResourcePath collection_;
  ListOptions options_;
  std::vector<Handler> handlers_;
  Transform transform_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> cache_;  // key -> the object as CBOR (informer.cc)
  std::atomic<bool> synced_{false};
  std::atomic<bool> watching_{false};
  std::string resource_version_;  // REQUIRES mutex_
  Status last_error_;  // REQUIRES mutex_
};

}  // namespace flexcsi::kube
