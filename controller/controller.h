// Controller: flexcsi-controller's runtime. Informers feed one work queue with keys
// ("claim/<ns>/<name>", "pv/<name>", "snapshot/<ns>/<name>", "content/<name>", "journal");
// worker threads run the parts (Provisioner, Deleter, Resizer, Snapshotter) only while this
// instance leads, and a periodic resync re-queues everything so that nothing depends on a
// single watch event arriving. With leader election every write to the API and every CSI call
// that changes storage is fenced by the lock (LeaderElector::CheckHeld), and stepping down
// stops taking keys and waits for the operations running before the lock is given up. Failed keys
// wait out their own backoff (work_queue.h): neither resyncs nor watch updates of the same revision
// retry them early.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bridge/metrics.h"
#include "bridge/metrics_http_server.h"
#include "controller/controller_context.h"
#include "controller/deleter.h"
#include "controller/in_flight_gate.h"
#include "controller/leader_election.h"
#include "controller/provisioner.h"
#include "controller/resizer.h"
#include "controller/resync_candidates.h"
#include "controller/snapshotter.h"
#include "controller/work_queue.h"
#include "kube/informer.h"

namespace flexcsi::controller {

struct ControllerOptions {
  std::string bridge_config_path;
  std::string journal_path = "/var/lib/flexcsi-controller/journal.db";
  int worker_threads = 4;
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds resync{30000};
  // Per-key backoff after a failure, doubling from start to max (external-provisioner's
  // --retry-interval-start / --retry-interval-max).
  std::chrono::milliseconds retry_interval_start{1000};
  std::chrono::milliseconds retry_interval_max{300000};
  std::string metrics_address;  // "" = no listener
  bool leader_election = false;
  LeaderElectionConfig election;
  std::string identity;
  // --node-deployment: serve only this node (node_deployment.h); no leader election then.
  std::optional<NodeDeployment> node_deployment;
};

class Controller {
 public:
  // `election_client` (REQUIRED with options.leader_election) serves the lock alone: `client`'s
  // writes are fenced by that lock, and its requests should time out within the renew deadline.
  Controller(ControllerOptions options, BridgeConfig bridge, kube::KubeClient* client,
             kube::KubeClient* election_client = nullptr);
  ~Controller();

  // Opens the journal, starts informers and the metrics listener.
  Status Start();
  // Blocks until `stop` is set or leadership is lost (then returns FAILED_PRECONDITION so the
  // process exits and restarts as a candidate, like the CSI sidecars). Either way it returns
  // only once no operation runs any more.
  Status Run(const std::atomic<bool>& stop);

  bool Healthy() const;
  int metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }

 private:
  // Related-object keys: no revision, so they never cut a key's failure backoff short.
  void Enqueue(const std::string& key) { queue_.Add(key); }
  // The object's own key with its RelevantRevision.
  void Enqueue(const std::string& kind, const nlohmann::json& object);
  void Worker();
  Status Process(const std::string& key);
  // A claim not yet Bound whose PV (pvc-<uid>) is already in the PV cache: only the PV
  // controller's bind is left (and the journal row, which RecoverJournal closes).
  bool Provisioned(const nlohmann::json& claim) const;
  // From the watched copy: false for a claim that is Settled, Provisioned, or not Bound and
  // without work for the provisioner (Provisioner::MayHaveWork). Such a claim is neither queued
  // by a resync nor read when an event queues it.
  bool ClaimMayNeedWork(const nlohmann::json& claim) const;
  // --node-deployment: this node's segment of every driver, from its NodeGetInfo.
  Status LearnNodeTopology();
  void ResyncAll();
  // Re-queues everything now and every resync period until `until` is set.
  void ResyncUntil(const std::atomic<bool>& until);
  // No operation starts any more; returns once those running have ended.
  void StopOperations();
  // With leader election, until `until` is set: once the lock is lost (LeaderElector::Leading
  // false, while the work stops after SIGTERM too), the CSI calls in flight that change storage
  // are cancelled, so that the successor, which repeats them by name, is the only one whose
  // call the driver runs.
  void CancelFencedCallsUntil(const std::atomic<bool>& until);

  ControllerOptions options_;
  ControllerContext ctx_;
  Metrics metrics_;
  std::unique_ptr<EventRecorder> events_;
  std::unique_ptr<IntentJournal> journal_;
  std::unique_ptr<MetricsHttpServer> metrics_server_;
  Provisioner provisioner_;
  Deleter deleter_;
  Resizer resizer_;
  Snapshotter snapshotter_;
  WorkQueue queue_;
  InFlightGate operations_;  // open while this instance acts (leads, without leader election)
  std::unique_ptr<LeaderElector> elector_;  // with leader election
  kube::KubeClient* election_client_;
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  std::unique_ptr<kube::Informer> claims_, volumes_, snapshots_, contents_;
  std::unique_ptr<kube::Informer> nodes_, csinodes_;  // topology views (topology_objects.h)
  std::unique_ptr<kube::Informer> classes_;           // StorageClasses, read for every claim
  // What ResyncAll looks at: claims not Settled, PVs that Deleter::MayNeedWork.
  ResyncCandidates claim_candidates_, volume_candidates_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_threads_{false};
  std::atomic<bool> stopping_operations_{false};  // ctx_.stopping: waits in operations give up
};

}  // namespace flexcsi::controller
