// EventRecorder: v1 Events on the objects the controller acts for (claims, snapshots), as
// client-go's recorder writes them, so `kubectl describe pvc` shows Provisioning,
// ProvisioningSucceeded and ProvisioningFailed with the driver's own message. A repeat of the
// same event on the same object bumps `count` and `lastTimestamp` instead of piling up objects.
// Recording never fails the caller: an event that cannot be written is logged and dropped.
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/lru_cache.h"
#include "kube/kube_client.h"

namespace flexcsi::controller {

inline constexpr const char* kEventNormal = "Normal";
inline constexpr const char* kEventWarning = "Warning";

class EventRecorder {
 public:
  // `component` is the event's source.component ("flexcsi-controller").
  EventRecorder(kube::KubeClient* client, std::string component, std::string host);

  // `object` without "kind" (list and watch items carry none) is taken to be a claim.
  void Record(const nlohmann::json& object, const std::string& type, const std::string& reason,
              const std::string& message);
  // For refusals that no retry can change (a feature the cluster lacks): records the event the
  // first time this process asks for it on this object, and returns false without writing
  // anything when it already did, so resyncs add neither events nor count bumps.
  bool RecordOnce(const nlohmann::json& object, const std::string& type, const std::string& reason,
                  const std::string& message);

 private:
  struct Seen {
    std::string name;
    std::string namespace_;
    int count = 0;
    std::string first_timestamp;
  };
  kube::KubeClient* client_;
  std::string component_;
  std::string host_;
  std::mutex mu_;
  // Both guarded by mu_, keyed by uid/type/reason/message, and bounded as client-go bounds its
  // correlator's cache (4096), since claims come and go for weeks. Repeats that matter are
  // retries minutes apart, so 1024 (two events per provisioned claim, ~1.3 KiB together) is
  // ample; a repeat after 1024 other events writes a new Event instead of bumping the old one's
  // count (a RecordOnce refusal is recorded once more).
  // FLEXCSI_CONTROLLER_REMEMBERED_EVENTS=N replaces 1024 for the soak (tests/soak), whose short
  // run must see the caches full within its warm-up to tell them from a leak.
  static size_t RememberedEvents();
  LruCache<Seen> seen_{RememberedEvents()};
  LruCache<bool> once_{RememberedEvents()};  // RecordOnce keys already recorded
};

// "2026-11-23T15:04:05Z" (metav1.Time) and "2026-11-23T15:04:05.123456Z" (metav1.MicroTime).
std::string NowRfc3339();
std::string NowRfc3339Micro();

}  // namespace flexcsi::controller
