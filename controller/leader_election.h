// LeaderElector: one active flexcsi-controller at a time, by the rules of client-go's
// leaderelection package, so it interoperates with (and is judged like) the CSI sidecars.
//
// The lock is a coordination.k8s.io/v1 Lease (holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions), or on clusters without Leases (before 1.14) a
// ConfigMap whose annotation control-plane.alpha.kubernetes.io/leader holds the same record as
// JSON. Every write is an update carrying the read resourceVersion, so of two candidates that
// both saw an expired lease exactly one wins (the other gets 409 Conflict).
//
// A candidate takes the lock only when renewTime + leaseDuration has passed on ITS clock since
// it last saw the record change (client-go's observedTime rule: clocks of different machines
// are never compared). The leader that fails to renew within renew_deadline stops leading.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"

namespace flexcsi::controller {

struct LeaderElectionConfig {
  enum class Lock { kAuto, kLease, kConfigMap };
  Lock lock = Lock::kAuto;  // auto: Lease when the cluster serves coordination.k8s.io/v1
  std::string namespace_ = "default";
  std::string name;      // lock object name
  std::string identity;  // this candidate, e.g. "<hostname>_<random>"
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

class LeaderElector {
 public:
  LeaderElector(kube::KubeClient* client, LeaderElectionConfig config);

  // Blocks: campaigns until it leads, calls on_started_leading (which must return promptly,
  // the work runs elsewhere), renews, and returns when leadership is lost or stop is set (then
  // it releases the lock so a successor takes over at once). on_stopped_leading is called once
  // if it ever led.
  void Run(const std::atomic<bool>& stop, const std::function<void()>& on_started_leading,
           const std::function<void()>& on_stopped_leading);

  bool IsLeader() const { return leading_.load(); }
  // Which lock kind is in use ("Lease" or "ConfigMap"), after the first attempt.
  std::string LockKind() const;

 private:
  struct Record {
    std::string holder;
    int lease_seconds = 0;
    std::string acquire_time;
    std::string renew_time;
    int transitions = 0;
  };
  // One acquire-or-renew round; OK when this candidate holds the lock afterwards.
  Status TryAcquireOrRenew();
  Status ResolveLockKind();
  StatusOr<nlohmann::json> GetLockObject();
  Record ReadRecord(const nlohmann::json& object) const;
  nlohmann::json WithRecord(nlohmann::json object, const Record& record) const;
  kube::ResourcePath Collection() const;
  void Release();

  kube::KubeClient* client_;
  LeaderElectionConfig config_;
  bool use_lease_ = true;
  bool kind_resolved_ = false;
  std::atomic<bool> leading_{false};
  // What we saw last and when (our monotonic clock).
  std::string observed_raw_;
  std::chrono::steady_clock::time_point observed_at_{};
  Record observed_;
};

}  // namespace flexcsi::controller
