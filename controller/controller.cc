#include "controller/controller.h"

#include <spdlog/spdlog.h>

#include "controller/relevant_revision.h"
#include "controller/topology_objects.h"

namespace flexcsi::controller {
namespace {

// The informer's cache key: namespace/name, or the name of a cluster-scoped object.
std::string CacheKeyOf(const nlohmann::json& object) {
  const auto& meta = JField(object, "metadata");
  const std::string ns = JStr(meta, "namespace");
  return (ns.empty() ? "" : ns + "/") + JStr(meta, "name");
}

std::string KeyOf(const std::string& prefix, const nlohmann::json& object) {
  return prefix + "/" + CacheKeyOf(object);
}

// Server-side apply's bookkeeping, often the larger half of a claim or PV, read by nothing here:
// with 10,000 of each watched, it is most of the controller's memory (client-go's documented
// use of SetTransform).
nlohmann::json WithoutManagedFields(nlohmann::json object) {
  if (object.contains("metadata")) object["metadata"].erase("managedFields");
  return object;
}

// A claim that is Bound goes to the resizer only, which has nothing to do unless more is asked.
bool Settled(const nlohmann::json& claim) {
  return JStr(JField(claim, "status"), "phase") == "Bound" && !Resizer::ExpansionRequested(claim);
}

}  // namespace

void Controller::Enqueue(const std::string& kind, const nlohmann::json& object) {
  queue_.Add(KeyOf(kind, object), RelevantRevision(kind, object));
}

Controller::Controller(ControllerOptions options, BridgeConfig bridge, kube::KubeClient* client,
                       kube::KubeClient* election_client)
    : options_(std::move(options)),
      provisioner_(ctx_),
      deleter_(ctx_),
      resizer_(ctx_),
      snapshotter_(ctx_),
      queue_(options_.retry_interval_start, options_.retry_interval_max),
      election_client_(election_client) {
  ctx_.client = client;
  ctx_.bridge = std::move(bridge);
  ctx_.metrics = &metrics_;
  metrics_.ExposeBuildInfo("controller");
  ctx_.timeout = options_.timeout;
  ctx_.node_deployment = options_.node_deployment;
  ctx_.stopping = &stopping_operations_;
  for (const auto& d : ctx_.bridge.drivers) {
    ctx_.csi[d.flex_driver] = std::make_unique<CsiClient>(d.csi_endpoint, &metrics_);
  }
}

Controller::~Controller() {
  stop_threads_ = true;
  queue_.ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (metrics_server_) metrics_server_->Stop();
}

Status Controller::Start() {
  char host[256] = "";
  ::gethostname(host, sizeof(host) - 1);
  // Per node, the event's source host says which node's instance acted (as kubelet's do).
  events_ = std::make_unique<EventRecorder>(
      ctx_.client, kComponent, ctx_.node_deployment ? ctx_.node_deployment->node_name : host);
  ctx_.events = events_.get();
  auto journal = IntentJournal::Open(options_.journal_path);
  if (!journal.ok()) return journal.status();
  journal_ = std::move(*journal);
  ctx_.journal = journal_.get();

  if (!options_.metrics_address.empty()) {
    metrics_server_ = std::make_unique<MetricsHttpServer>(metrics_, [this] { return Healthy(); });
    FLEXCSI_RETURN_IF_ERROR(metrics_server_->Start(options_.metrics_address));
    spdlog::info("metrics and /healthz on port {}", metrics_server_->port());
  }

  // What the API server serves and is, before any watch: an old cluster gets fewer informers
  // and refusals with events, never a crash loop on a 404.
  auto cluster = DiscoverCapabilities(*ctx_.client);
  if (!cluster.ok()) return cluster.status();
  ctx_.cluster = *cluster;
  spdlog::info("{}", ctx_.cluster.Summary());
  if (options_.leader_election) {
    if (election_client_ == nullptr) return Internal("leader election without its own client");
    if (options_.election.lock == LeaderElectionConfig::Lock::kAuto) {
      options_.election.lock = ctx_.cluster.leases ? LeaderElectionConfig::Lock::kLease
                                                   : LeaderElectionConfig::Lock::kConfigMap;
    }
    elector_ = std::make_unique<LeaderElector>(election_client_, options_.election);
    // Whatever acts for the leader passes the lock's fence: claims' PVs and annotations,
    // deletions, snapshots, resizes, events, and the driver's calls that change storage.
    auto fence = [elector = elector_.get()] { return elector->CheckHeld(); };
    ctx_.client->SetWriteFence(fence);
    for (auto& [driver, csi] : ctx_.csi) csi->SetWriteFence(fence);
  }

  if (ctx_.node_deployment) {
    FLEXCSI_RETURN_IF_ERROR(LearnNodeTopology());
    if (ctx_.cluster.snapshots) {
      spdlog::info("--node-deployment: VolumeSnapshots are not taken per node (run a central "
                   "flexcsi-controller or `flexcsi snapshot` for them)");
    }
  }

  claims_ = std::make_unique<kube::Informer>(ctx_.client,
                                             kube::ResourcePath::Core("persistentvolumeclaims"));
  claims_->SetTransform(WithoutManagedFields);
  ctx_.claim_cache = claims_.get();
  claims_->OnEvent([this](const std::string& type, const nlohmann::json& o) {
    claim_candidates_.Update(CacheKeyOf(o), type != "DELETED" && !Settled(o));
    if (type != "DELETED") Enqueue("claim", o);
  });
  volumes_ =
      std::make_unique<kube::Informer>(ctx_.client, kube::ResourcePath::Core("persistentvolumes"));
  volumes_->SetTransform(WithoutManagedFields);
  ctx_.volume_cache = volumes_.get();
  volumes_->OnEvent([this](const std::string& type, const nlohmann::json& o) {
    volume_candidates_.Update(CacheKeyOf(o), type != "DELETED" && Deleter::MayNeedWork(o));
    if (type != "DELETED") Enqueue("pv", o);
    // A PV change (the expand controller raising capacity, a bind) may concern its claim.
    const auto& ref = JField(JField(o, "spec"), "claimRef");
    if (!JStr(ref, "name").empty()) {
      Enqueue("claim/" + JStr(ref, "namespace") + "/" + JStr(ref, "name"));
    }
  });
  // Per node: a content names no node, so which node's instance deletes it cannot be decided
  // from the objects; snapshots are left to a central instance.
  if (ctx_.cluster.snapshots && !ctx_.node_deployment) {
    snapshots_ = std::make_unique<kube::Informer>(
        ctx_.client, kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshots"));
    snapshots_->OnEvent([this](const std::string& type, const nlohmann::json& o) {
      if (type != "DELETED") Enqueue("snapshot", o);
      const std::string uid = JStr(JField(o, "metadata"), "uid");
      if (!uid.empty()) Enqueue("content/snapcontent-" + uid);
    });
    contents_ = std::make_unique<kube::Informer>(
        ctx_.client,
        kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshotcontents"));
    contents_->OnEvent([this](const std::string& type, const nlohmann::json& o) {
      if (type != "DELETED") Enqueue("content", o);
      const auto& ref = JField(JField(o, "spec"), "volumeSnapshotRef");
      if (!JStr(ref, "name").empty()) {
        Enqueue("snapshot/" + JStr(ref, "namespace") + "/" + JStr(ref, "name"));
      }
    });
  }
  if (!ctx_.cluster.snapshots) {
    spdlog::info("snapshot.storage.k8s.io/v1 not served: VolumeSnapshots via `flexcsi snapshot` "
                 "only; claims restoring from one are refused with an event");
  }
  // Topology comes from watched Nodes and CSINodes, a small view of each, as csi-provisioner
  // reads it from its informers: listing every Node and CSINode for each claim cost O(nodes) of
  // API traffic and parsing per claim (about 4 MB a claim at 1,000 nodes). Not per node: N
  // instances each watching N Nodes would cost the cluster N^2 events; they list as before.
  if (!ctx_.node_deployment) {
    nodes_ = std::make_unique<kube::Informer>(ctx_.client, kube::ResourcePath::Core("nodes"));
    nodes_->SetTransform(NodeTopologyView);
    nodes_->OnEvent([this](const std::string& type, const nlohmann::json& view) {
      ctx_.TopologyObjectChanged("node", type, view);
    });
    ctx_.node_cache = nodes_.get();
    if (ctx_.cluster.csinodes) {
      csinodes_ = std::make_unique<kube::Informer>(
          ctx_.client, kube::ResourcePath::Group("storage.k8s.io/v1", "csinodes"));
      csinodes_->SetTransform(CsiNodeTopologyView);
      csinodes_->OnEvent([this](const std::string& type, const nlohmann::json& view) {
        ctx_.TopologyObjectChanged("csinode", type, view);
      });
      ctx_.csinode_cache = csinodes_.get();
    }
  }
  // Without `list`/`watch` on storageclasses (the Role of 0.1.0) the cache never syncs and each
  // claim's class is read from the API server as before.
  classes_ = std::make_unique<kube::Informer>(
      ctx_.client, kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses"));
  classes_->SetTransform(WithoutManagedFields);
  ctx_.class_cache = classes_.get();
  for (kube::Informer* inf : {claims_.get(), volumes_.get(), snapshots_.get(), contents_.get(),
                              nodes_.get(), csinodes_.get(), classes_.get()}) {
    if (inf == nullptr) continue;
    threads_.emplace_back([this, inf] { inf->Run(stop_threads_); });
  }
  return Status::Ok();
}

Status Controller::LearnNodeTopology() {
  const NodeDeployment& node = *ctx_.node_deployment;
  for (const auto& driver : ctx_.bridge.drivers) {
    // Ownership of PVs is judged by topology: a driver without it would let every node's
    // instance delete every PV, on storage that exists on one node only.
    auto supported = ctx_.SupportsTopology(driver);
    if (!supported.ok()) return supported.status().WithContext("driver " + driver.flex_driver);
    auto info = ctx_.Csi(driver).NodeGetInfo(Deadline::In(ctx_.timeout));
    if (!info.ok()) {
      return info.status().WithContext("--node-deployment: NodeGetInfo of driver " +
                                       driver.flex_driver + " (this node's instance)");
    }
    TopologySegment segment(info->accessible_topology().segments().begin(),
                            info->accessible_topology().segments().end());
    if (!*supported || segment.empty()) {
      return FailedPrecondition(
          "--node-deployment needs a driver with topology (VOLUME_ACCESSIBILITY_CONSTRAINTS and "
          "an accessible topology in NodeGetInfo) so that each node's volumes are known by their "
          "nodeAffinity; driver " + driver.flex_driver + " at " + driver.csi_endpoint +
          " has none: run one flexcsi-controller for the cluster instead");
    }
    std::string where;
    for (const auto& [k, v] : segment) where += (where.empty() ? "" : ",") + k + "=" + v;
    spdlog::info("--node-deployment: node {}, driver {} (node id {}) at {{{}}}", node.node_name,
                 driver.flex_driver, info->node_id(), where);
    ctx_.node_topology[driver.flex_driver] = std::move(segment);
  }
  return Status::Ok();
}

bool Controller::Healthy() const {
  // Not the Node and CSINode views: until they sync (the Role of 0.1.0 has no `watch` on them)
  // topology is listed from the API server as before.
  for (const kube::Informer* inf :
       {claims_.get(), volumes_.get(), snapshots_.get(), contents_.get()}) {
    if (inf != nullptr && !inf->HasSynced()) return false;
  }
  return true;
}

void Controller::ResyncAll() {
  Enqueue("journal");
  // Only what may have work: with 10,000 bound claims, queueing every claim and PV every 30 s
  // put new claims behind 20,000 keys that Process would drop at once; and only the candidates
  // are even decoded (resync_candidates.h).
  for (const std::string& key : claim_candidates_.Keys()) {
    if (auto o = claims_->Get(key); o && ClaimMayNeedWork(*o)) Enqueue("claim", *o);
  }
  for (const std::string& key : volume_candidates_.Keys()) {
    if (auto o = volumes_->Get(key); o && Deleter::MayNeedWork(*o)) Enqueue("pv", *o);
  }
  if (snapshots_) {
    for (const auto& o : snapshots_->List()) Enqueue("snapshot", o);
    for (const auto& o : contents_->List()) Enqueue("content", o);
  }
}

bool Controller::ClaimMayNeedWork(const nlohmann::json& claim) const {
  if (Settled(claim) || Provisioned(claim)) return false;
  return JStr(JField(claim, "status"), "phase") == "Bound" || provisioner_.MayHaveWork(claim);
}

bool Controller::Provisioned(const nlohmann::json& claim) const {
  if (JStr(JField(claim, "status"), "phase") == "Bound") return false;  // the resizer's
  const std::string uid = JStr(JField(claim, "metadata"), "uid");
  return !uid.empty() && volumes_->Get("pvc-" + uid).has_value();
}

Status Controller::Process(const std::string& key) {
  const auto slash = key.find('/');
  const std::string kind = key.substr(0, slash);
  const std::string rest = slash == std::string::npos ? "" : key.substr(slash + 1);
  const auto split = rest.find('/');
  if (kind == "journal") return provisioner_.RecoverJournal();
  // A resync visits every claim and PV; those settled in the watched copy (a PV neither
  // Released nor being deleted, a Bound claim asking for no more than it has, a claim whose PV
  // exists or that none of our provisioners is asked for yet) are left without a read, as
  // csi-provisioner works from its informers: 10,000 bound claims must not cost 20,000 GETs
  // every resync. Anything with work to do is read afresh before it is acted on.
  if (kind == "pv") {
    if (auto cached = volumes_->Get(rest); cached && !Deleter::MayNeedWork(*cached)) {
      return Status::Ok();
    }
    return deleter_.SyncVolume(rest);
  }
  if (kind == "content") return snapshotter_.SyncContent(rest);
  if (split == std::string::npos) return InvalidArgument("bad key " + key);
  const std::string ns = rest.substr(0, split), name = rest.substr(split + 1);
  if (kind == "snapshot") return snapshotter_.SyncSnapshot(ns, name);
  if (kind == "claim") {
    const auto cached = claims_->Get(rest);
    // Not in the synced cache: deleted (a PV event names its claim after the claim is gone), or
    // so new that its own ADDED event, which queues it again, is still to come.
    if (!cached && claims_->HasSynced()) return Status::Ok();
    if (cached && !ClaimMayNeedWork(*cached)) return Status::Ok();
    auto claim =
        ctx_.client->Get(kube::ResourcePath::Core("persistentvolumeclaims", ns).Named(name));
    if (!claim.ok()) return kube::IsNotFound(claim.status()) ? Status::Ok() : claim.status();
    if (JStr(JField(*claim, "status"), "phase") == "Bound") return resizer_.SyncClaim(*claim);
    return provisioner_.SyncClaim(*claim);
  }
  return InvalidArgument("bad key " + key);
}

void Controller::Worker() {
  while (auto key = queue_.Get()) {
    // Not acting (not the leader, stepping down, or a lease that may have run out while the
    // renewal loop has not noticed yet): keep the key for later.
    const bool acting = operations_.Enter();
    if (!acting || (elector_ && !elector_->IsLeader())) {
      if (acting) operations_.Exit();
      queue_.Done(*key, WorkQueue::Outcome::kDeferred);
      queue_.AddAfter(*key, std::chrono::milliseconds(500));
      continue;
    }
    Status s = Process(*key);
    operations_.Exit();
    if (s.ok()) {
      queue_.Done(*key, WorkQueue::Outcome::kSucceeded);
      continue;
    }
    const auto delay = queue_.Done(*key, WorkQueue::Outcome::kFailed);
    spdlog::warn("{}: {} (retry in {} ms)", *key, s.ToString(), delay.count());
  }
}

void Controller::ResyncUntil(const std::atomic<bool>& until) {
  // Wait for the caches, then look at everything once, the journal first.
  while (!until && !Healthy()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ResyncAll();
  auto next = std::chrono::steady_clock::now() + options_.resync;
  while (!until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() >= next) {
      ResyncAll();
      next = std::chrono::steady_clock::now() + options_.resync;
    }
  }
}

void Controller::StopOperations() {
  stopping_operations_ = true;
  if (const int running = operations_.Running(); running > 0) {
    spdlog::info("waiting for {} operation(s) in progress to end", running);
  }
  operations_.CloseAndDrain();
  spdlog::info("no operation in progress");
}

void Controller::CancelFencedCallsUntil(const std::atomic<bool>& until) {
  // Watched, not told: the loss may be noticed by the renewal loop while the work drains after
  // SIGTERM as well as while it runs. Cancelling while not leading is cheap: no new fenced call
  // gets past the fence meanwhile (before leading there is none). Leading() is asked again
  // where calls register: the lock may be taken between this look and the cancel.
  const auto lost = [this] { return !elector_->Leading(); };
  while (!until) {
    if (lost()) {
      for (auto& [driver, csi] : ctx_.csi) csi->CancelFencedCallsIf(lost);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status Controller::Run(const std::atomic<bool>& stop) {
  for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
    threads_.emplace_back([this] { Worker(); });
  }
  if (!elector_) {
    operations_.Open();
    ResyncUntil(stop);
    StopOperations();
    return Status::Ok();
  }
  std::atomic<bool> stepping_down{false}, work_stopped{false};
  std::thread resync;
  std::thread fence_watch([&] { CancelFencedCallsUntil(work_stopped); });
  elector_->Run(
      stop,
      [&] {
        operations_.Open();
        resync = std::thread([&] { ResyncUntil(stepping_down); });
      },
      [&] {
        stepping_down = true;
        StopOperations();
      });
  work_stopped = true;
  fence_watch.join();
  stepping_down = true;
  if (resync.joinable()) resync.join();
  if (stop) return Status::Ok();
  return FailedPrecondition("lost leadership");
}

}  // namespace flexcsi::controller
