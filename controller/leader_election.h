// LeaderElector: one active flexcsi-controller at a time, by the rules of client-go's
// leaderelection package, so it interoperates with (and is judged like) the CSI sidecars.
//
// The lock is one of client-go's resource locks, the kind external-provisioner of the same era
// takes (controller/provisioner_lock.h):
//   - a coordination.k8s.io/v1 Lease (holderIdentity, leaseDurationSeconds, acquireTime,
//     renewTime, leaseTransitions): external-provisioner v2 and later, and v1.x with
//     --leader-election-type=leases;
//   - an "annotation record" on a core v1 object: its annotation
//     control-plane.alpha.kubernetes.io/leader holds client-go's LeaderElectionRecord as JSON
//     (the same fields, leaderTransitions, times in RFC 3339 seconds). On an Endpoints object it
//     is external-provisioner v1.x's default lock (--leader-election-type=endpoints, v1.2.2
//     included); on a ConfigMap, the lock for clusters without Leases (before 1.14). The two
//     differ in nothing but the kind: create makes the object with only metadata and the
//     annotation, update writes the read object back with the annotation changed.
// `auto` takes the Lease when the cluster serves coordination.k8s.io/v1, else the ConfigMap; it
// never picks Endpoints, because which external-provisioner runs cannot be read from the
// cluster: for v1.x's default, say so (Lock::kEndpoints, --leader-election-lock endpoints).
// Every write is an update carrying the read resourceVersion, so of two candidates that both saw
// an expired lock exactly one wins (the other gets 409 Conflict).
//
// A candidate takes the lock only when renewTime + leaseDuration has passed on ITS clock since
// it last saw the record change (client-go's observedTime rule: clocks of different machines
// are never compared). The leader that fails to renew within renew_deadline stops leading.
//
// What the lock guards stops BEFORE the lock is given up (client-go leaves that to its user,
// with ReleaseOnCancel; external-provisioner exits at once and never releases):
//   - stopping (SIGTERM): the guarded work is asked to stop and waited for, while the lease is
//     still renewed, so that no successor starts what is still running here; then it is
//     released, and a successor takes over at once;
//   - a renewal that keeps failing: the lease may already be another's. CheckHeld refuses from
//     the moment renew_deadline has passed since the start of the last renewal that went
//     through, whether or not the renewal loop has noticed yet (a renewal request may hang):
//     every write acting for the leader asks it (KubeClient and CsiClient write fences), and a
//     successor can take the lock only leaseDuration after that renewal, so the gap between
//     the two is what a write already sent has to land.
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
  enum class Lock { kAuto, kLease, kConfigMap, kEndpoints };
  Lock lock = Lock::kAuto;  // auto: Lease when the cluster serves coordination.k8s.io/v1
  std::string namespace_ = "default";
  std::string name;      // lock object name
  std::string identity;  // this candidate, e.g. "<hostname>_<random>"
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// --leader-election-lock's value ("auto", "lease", "configmap", "endpoints"); INVALID_ARGUMENT
// saying which to choose for which external-provisioner otherwise.
StatusOr<LeaderElectionConfig::Lock> ParseLeaderElectionLock(const std::string& value);

class LeaderElector {
 public:
  LeaderElector(kube::KubeClient* client, LeaderElectionConfig config);

  // Blocks: campaigns until it leads, calls on_started_leading (which must return promptly,
  // the work runs elsewhere), renews, and returns when leadership is lost or stop is set. Either
  // way, if it ever led, it first calls stop_work, which must return only when none of the work
  // the lock guards runs any more; after a stop the lease is renewed meanwhile and released
  // afterwards, after a loss CheckHeld already refuses.
  void Run(const std::atomic<bool>& stop, const std::function<void()>& on_started_leading,
           const std::function<void()>& stop_work);

  // Whether this candidate leads and its last renewal is recent enough that nobody else can
  // hold the lock (see above). Safe from any thread.
  bool IsLeader() const;
  // Whether the renewal loop still counts this candidate as the leader: false before it leads,
  // and from the moment the loop notices the lock lost (IsLeader() may turn false earlier).
  bool Leading() const { return leading_; }
  // For write fences: OK when IsLeader(); else FAILED_PRECONDITION saying whose lock was lost.
  // While a renewal is late but the loop still counts itself the leader, it waits (at most
  // renew_deadline) for the outcome: a renewal that is merely slow, on a busy machine, must not
  // fail the write that records a volume the driver has just made, leaving a successor to
  // make it again.
  Status CheckHeld() const;
  // Which lock kind is in use ("Lease", "ConfigMap" or "Endpoints"), after the first attempt.
  std::string LockKind() const;

 private:
  struct Record {
    std::string holder;
    int lease_seconds = 0;
    std::string acquire_time;
    std::string renew_time;
    int transitions = 0;
  };
  // One acquire-or-renew round; OK when this candidate holds the lock afterwards. Moves
  // held_until_ on success.
  Status TryAcquireOrRenew();
  Status AcquireOrRenewOnce();
  Status ResolveLockKind();
  StatusOr<nlohmann::json> GetLockObject();
  Record ReadRecord(const nlohmann::json& object) const;
  nlohmann::json WithRecord(nlohmann::json object, const Record& record) const;
  kube::ResourcePath Collection() const;
  void Release();
  // Renews every retry_period while `go_on()` holds; false as soon as a renewal fails with the
  // lock another's, or fails for longer than renew_deadline.
  bool RenewWhile(const std::function<bool()>& go_on);
  // Sleeps `d`, waking early (every 50 ms at most) once `go_on()` is false.
  void SleepWhile(std::chrono::milliseconds d, const std::function<bool()>& go_on) const;

  kube::KubeClient* client_;
  LeaderElectionConfig config_;
  // The kind in use: never kAuto once kind_resolved_.
  LeaderElectionConfig::Lock kind_ = LeaderElectionConfig::Lock::kLease;
  bool kind_resolved_ = false;
  std::atomic<bool> leading_{false};
  // Start of the last acquire or renewal that went through, plus renew_deadline, as
  // steady_clock ticks: CheckHeld refuses from then on.
  std::atomic<std::chrono::steady_clock::rep> held_until_{0};
  // What we saw last and when (our monotonic clock).
  std::string observed_raw_;
  std::chrono::steady_clock::time_point observed_at_{};
  Record observed_;
};

}  // namespace flexcsi::controller
