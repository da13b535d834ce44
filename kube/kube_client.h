// KubeClient: flexcsi's one Kubernetes API client. Everything that talks to a cluster (migrate,
// flexcsi-controller, doctor) goes through it: one HTTP stack (libcurl), one JSON stack
// (nlohmann::json), API errors as Status.
//
// Configuration is found exactly as kubectl finds it (kube_config.h); this file is the wire side.
// Objects travel as nlohmann::json in the API's own JSON shape, so callers read fields by their
// Kubernetes names and nothing is lost in a typed copy.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_config.h"
#include "kube/rate_limiter.h"

namespace flexcsi::kube {

// Where an object or a collection lives: /api/v1/... for the core group ("v1"),
// /apis/<group>/<version>/... otherwise.
struct ResourcePath {
  std::string group_version;  // "v1", "storage.k8s.io/v1", "coordination.k8s.io/v1"
  std::string resource;       // plural: "persistentvolumes", "leases"
  std::string namespace_;     // empty for cluster-scoped resources or all namespaces
  std::string name;           // empty for a collection
  std::string subresource;    // "status", "scale" or empty

  // Core-group helpers: Core("persistentvolumes"), Core("persistentvolumeclaims", "ns").
  static ResourcePath Core(std::string resource, std::string ns = "");
  static ResourcePath Group(std::string group_version, std::string resource, std::string ns = "");
  ResourcePath Named(std::string object_name) const;
  ResourcePath Sub(std::string subresource_name) const;

  // "/api/v1/namespaces/ns/persistentvolumeclaims/name/status", without a query.
  std::string UrlPath() const;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;  // `limit`; List follows `continue` until the end
};

struct WriteOptions {
  bool dry_run = false;  // ?dryRun=All: validated and admitted, never stored
  std::string field_manager = "flexcsi";
};

struct DeleteOptions {
  std::optional<std::string> precondition_uid;               // 409 when the live uid differs
  std::optional<std::string> precondition_resource_version;  // 409 when it differs
  bool dry_run = false;
  std::string propagation_policy;  // "", "Orphan", "Background", "Foreground"
};

enum class PatchType { kMerge, kStrategicMerge, kJson };

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

struct WatchOptions {
  ListOptions list;
  std::string resource_version;  // start point; empty: list first (Informer does this for you)
  int timeout_seconds = 300;     // server-side watch timeout; the call then returns OK
  bool allow_bookmarks = true;
  // Checked every 100 ms or so, also while the stream is idle; once set, Watch returns
  // kCancelled.
  // Not owned; must outlive the call. (The Informer's Run(stop) passes its flag here.)
  const std::atomic<bool>* stop = nullptr;
  // Called when the server has answered 2xx and the stream is open, before any event (an idle
  // collection may send none for minutes). May be empty.
  std::function<void()> on_open;
};

// Why an API call failed, as the server said it. Status codes map from HTTP:
// 400 kInvalidArgument, 401 kUnauthenticated, 403 kPermissionDenied, 404 kNotFound,
// 409 reason AlreadyExists kAlreadyExists, 409 other (Conflict) kAborted, 410 kOutOfRange
// (Expired/Gone: re-list), 422 kInvalidArgument, 429/5xx after retries kUnavailable,
// transport failure or timeout kUnavailable / kDeadlineExceeded.
// The message is "<reason>: <server message>", e.g. "Conflict: the object has been modified...".
// ApiReason(status) returns the reason word ("Conflict", "AlreadyExists", "NotFound", "Invalid",
// "Gone", ...) or "" when the failure never reached a server.
std::string ApiReason(const Status& status);
inline bool IsNotFound(const Status& s) { return s.code() == Code::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == Code::kAlreadyExists; }
inline bool IsConflict(const Status& s) { return s.code() == Code::kAborted; }

// Thread safety: a KubeClient may be shared by any number of threads; every call is independent
// (its own libcurl handle from a pool, credentials resolved per request, the exec-plugin cache
// behind a mutex). Only destruction must wait until no call is running.
class KubeClient {
 public:
  // Builds a client from a resolved configuration (see LoadClientConfig in kube_config.h).
  static StatusOr<std::unique_ptr<KubeClient>> Create(ClientConfig config);
  ~KubeClient();

  // The namespace kubectl would use: --namespace, else the context's, else the in-cluster
  // namespace file, else "default".
  const std::string& DefaultNamespace() const;
  const ClientConfig& config() const;

  // What this client has sent so far: every request that went out (retries and watches
  // included), and what the client-side rate limit (config().rate_limit) cost.
  struct RequestStats {
    uint64_t requests = 0;
    std::optional<TokenBucketSize> rate_limit;  // nullopt: no limit
    uint64_t delayed_requests = 0;              // requests that waited for a token
    std::chrono::milliseconds total_delay{0};   // their waits added up
  };
  RequestStats Stats() const;

  // A check that every attempt of a Create, Update, Patch or Delete passes before it is sent:
  // when it answers an error, nothing is sent and that error is returned. flexcsi-controller
  // fences its writes with its leader lock this way (LeaderElector::CheckHeld), so that no
  // write goes out once another instance may have taken over. Reads and watches never ask it.
  // REQUIRES: set before the client is shared between threads.
  void SetWriteFence(std::function<Status()> fence);

  // Each call is retried on 429 and 5xx with backoff honouring Retry-After, up to the
  // configured limits; 4xx answers are returned at once. Every attempt, and every watch's opening
  // request, first passes the client-side rate limit when one is configured (rate_limiter.h).
  StatusOr<nlohmann::json> Get(const ResourcePath& object);
  // GET of a path outside the resource tree, for discovery (discovery.h): "/version", "/apis",
  // "/apis/<group>/<version>". `url_path` must start with '/' and carries no query.
  StatusOr<nlohmann::json> GetPath(const std::string& url_path);
  // Follows `continue` until the end. Returns {"items": [...], "metadata": {"resourceVersion": RV}}
  // (the RV of the first page, which is where a watch must start).
  StatusOr<nlohmann::json> List(const ResourcePath& collection, const ListOptions& options = {});
  StatusOr<nlohmann::json> Create(const ResourcePath& collection, const nlohmann::json& object,
                                  const WriteOptions& options = {});
  // PUT: carries the object's metadata.resourceVersion, so a stale copy fails with kAborted.
  StatusOr<nlohmann::json> Update(const ResourcePath& object, const nlohmann::json& value,
                                  const WriteOptions& options = {});
  StatusOr<nlohmann::json> Patch(const ResourcePath& object, PatchType type,
                                 const nlohmann::json& patch, const WriteOptions& options = {});
  // Returns the server's answer: the object (when finalizers only set deletionTimestamp) or a
  // Status object.
  StatusOr<nlohmann::json> Delete(const ResourcePath& object, const DeleteOptions& options = {});

  // Streams events until on_event returns false, the server ends the watch (returns OK), or an
  // error. A 410 / ERROR event with code 410 returns kOutOfRange: the caller re-lists.
  Status Watch(const ResourcePath& collection, const WatchOptions& options,
               const std::function<bool(const WatchEvent&)>& on_event);

 private:
  class Impl;
  explicit KubeClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flexcsi::kube
