#include "controller/provisioner.h"

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "controller/fault_points.h"
#include "controller/flex_pv.h"
#include "controller/intent_journal.h"
#include "controller/node_deployment.h"
#include "controller/quantity.h"
#include "controller/secret_params.h"
#include "controller/topology.h"
#include "controller/unservable_claim.h"

namespace flexcsi::controller {
namespace {

kube::ResourcePath Claims(const std::string& ns) {
  return kube::ResourcePath::Core("persistentvolumeclaims", ns);
}
kube::ResourcePath PVs() { return kube::ResourcePath::Core("persistentvolumes"); }

int64_t BytesOr0(const std::string& q) {
  if (q.empty()) return 0;
  auto b = ParseStorageQuantity(q);
  return b.ok() ? *b : 0;
}

}  // namespace

void Provisioner::Failed(const nlohmann::json& claim, const std::string& storage_class,
                         const Status& why) {
  // external-provisioner's wording, so runbooks written for CSI clusters still match.
  ctx_.events->Record(
      claim, kEventWarning, "ProvisioningFailed",
      "failed to provision volume with StorageClass \"" + storage_class + "\": " + why.message());
}

void Provisioner::RefuseOnce(const nlohmann::json& claim, const std::string& storage_class,
                             const std::string& why) {
  const auto& meta = JField(claim, "metadata");
  if (ctx_.events->RecordOnce(claim, kEventWarning, "ProvisioningFailed",
                              "failed to provision volume with StorageClass \"" + storage_class +
                                  "\": " + why)) {
    spdlog::warn("claim {}/{} refused: {}", JStr(meta, "namespace"), JStr(meta, "name"), why);
  }
}

Status Provisioner::RefuseUnannotated(const nlohmann::json& claim) {
  if (!RequestedProvisioner(claim).empty()) return Status::Ok();  // another provisioner's
  const std::string class_name = JStr(JField(claim, "spec"), "storageClassName");
  if (class_name.empty() || !JStr(JField(claim, "spec"), "volumeName").empty()) {
    return Status::Ok();
  }
  const std::string phase = JStr(JField(claim, "status"), "phase");
  if (!phase.empty() && phase != "Pending") return Status::Ok();
  auto sc = ctx_.StorageClass(class_name);
  if (!sc.ok()) return kube::IsNotFound(sc.status()) ? Status::Ok() : sc.status();
  if (ctx_.DriverByProvisioner(JStr(*sc, "provisioner")) == nullptr) return Status::Ok();
  if (auto why = WhyClaimCannotBeServed(claim, *sc, ctx_.cluster)) {
    RefuseOnce(claim, class_name, *why);
  }
  return Status::Ok();
}

bool Provisioner::MayHaveWork(const nlohmann::json& claim) const {
  if (BeingDeleted(claim) || !JStr(JField(claim, "spec"), "volumeName").empty()) return false;
  const std::string requested = RequestedProvisioner(claim);
  if (!requested.empty()) return ctx_.DriverByProvisioner(requested) != nullptr;
  if (!SelectedNode(claim).empty()) return true;  // maybe a placed claim of one of our classes
  // Neither handed over nor placed: nothing to do until the PV controller or the scheduler
  // writes, except before 1.11, where such a claim of ours may have to be refused.
  return !ctx_.node_deployment && !ctx_.cluster.ProvisionsDelayedBinding();
}

const DriverConfig* Provisioner::DriverOfPlacedClaim(const nlohmann::json& claim) {
  if (SelectedNode(claim).empty() || !RequestedProvisioner(claim).empty()) return nullptr;
  const std::string class_name = JStr(JField(claim, "spec"), "storageClassName");
  if (class_name.empty()) return nullptr;
  auto sc = ctx_.StorageClass(class_name);
  if (!sc.ok()) return nullptr;  // no class: the PV controller's annotation never comes either
  return ctx_.DriverByProvisioner(ProvisionerOfClaim(claim, *sc));
}

Status Provisioner::SyncClaim(const std::string& ns, const std::string& name) {
  auto claim = ctx_.client->Get(Claims(ns).Named(name));
  if (!claim.ok()) return kube::IsNotFound(claim.status()) ? Status::Ok() : claim.status();
  return SyncClaim(*claim);
}

Status Provisioner::SyncClaim(const nlohmann::json& claim_json) {
  const nlohmann::json* claim = &claim_json;
  const DriverConfig* driver = ctx_.DriverByProvisioner(RequestedProvisioner(*claim));
  if (driver == nullptr) driver = DriverOfPlacedClaim(*claim);
  if (driver == nullptr) {
    // Before 1.11 the PV controller never hands a WaitForFirstConsumer claim to a provisioner
    // (no provisioner annotation): such claims of our classes are found by their class. Per
    // node nobody owns them (no node is selected), so no node speaks for them either.
    if (ctx_.node_deployment || ctx_.cluster.ProvisionsDelayedBinding()) return Status::Ok();
    return RefuseUnannotated(*claim);
  }
  if (ctx_.node_deployment) {
    // Per node, before anything that writes an event: another node's claim is left in silence.
    switch (OwnerOfClaim(*claim, ctx_.node_deployment->node_name)) {
      case ClaimOwner::kOtherNode:
        return Status::Ok();
      case ClaimOwner::kNobodyYet:
        return ClaimForThisNode(*claim, *driver);
      case ClaimOwner::kThisNode:
        break;
    }
  }
  const std::string class_name = JStr(JField(*claim, "spec"), "storageClassName");
  if (class_name.empty()) return Status::Ok();
  auto sc = ctx_.StorageClass(class_name);
  if (!sc.ok()) {
    if (kube::IsNotFound(sc.status())) {
      Failed(*claim, class_name,
             NotFound("storageclass.storage.k8s.io \"" + class_name + "\" not found"));
    }
    return sc.status();
  }
  if (JStr(*sc, "provisioner") == driver->provisioner) {
    if (auto why = WhyClaimCannotBeServed(*claim, *sc, ctx_.cluster)) {
      RefuseOnce(*claim, class_name, *why);
      return Status::Ok();  // no retry can change it
    }
  }
  if (!ClaimNeedsProvisioning(*claim, *sc, driver->provisioner)) return Status::Ok();
  if (JStr(*sc, "provisioner") != driver->provisioner) return Status::Ok();
  const std::string uid = JStr(JField(*claim, "metadata"), "uid");
  {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    if (!in_flight_.insert(uid).second) return Unavailable("provisioning already in progress");
  }
  Status s = Provision(*claim, *sc, *driver);
  std::lock_guard<std::mutex> lock(in_flight_mu_);
  in_flight_.erase(uid);
  return s;
}

StatusOr<ContentSource> Provisioner::ResolveDataSource(const nlohmann::json& claim,
                                                       const DriverConfig& driver) {
  const auto& spec = JField(claim, "spec");
  nlohmann::json source = JField(spec, "dataSourceRef");
  if (source.is_null()) source = JField(spec, "dataSource");
  if (source.is_null()) return ContentSource{};
  const std::string ns = JStr(JField(claim, "metadata"), "namespace");
  const std::string kind = JStr(source, "kind");
  const std::string source_name = JStr(source, "name");
  const int64_t requested =
      BytesOr0(JStr(JField(JField(spec, "resources"), "requests"), "storage"));
  if (kind == "PersistentVolumeClaim" && JStr(source, "apiGroup").empty()) {
    auto src = ctx_.client->Get(Claims(ns).Named(source_name));
    if (!src.ok()) {
      return NotFound("clone source claim " + ns + "/" + source_name + " not found");
    }
    if (JStr(JField(*src, "status"), "phase") != "Bound") {
      return FailedPrecondition("clone source claim " + source_name + " is not Bound");
    }
    const int64_t source_bytes =
        BytesOr0(JStr(JField(JField(*src, "status"), "capacity"), "storage"));
    if (requested < source_bytes) {
      return InvalidArgument("the clone requests " + std::to_string(requested) +
                             " bytes, less than its source's " + std::to_string(source_bytes));
    }
    auto pv = ctx_.client->Get(PVs().Named(JStr(JField(*src, "spec"), "volumeName")));
    if (!pv.ok()) return pv.status().WithContext("clone source volume");
    const DriverConfig* source_driver = DriverOfPV(ctx_.bridge, *pv);
    if (source_driver != &driver) {
      return InvalidArgument("clone source " + source_name + " is not a volume of driver " +
                             driver.flex_driver);
    }
    auto volume = CsiVolumeOfPV(driver, *pv);
    if (!volume.ok()) return volume.status();
    return ContentSource{ContentSource::kVolume, volume->volume_handle};
  }
  if (kind == "VolumeSnapshot" && JStr(source, "apiGroup") == "snapshot.storage.k8s.io") {
    auto snap = ctx_.client->Get(
        kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshots", ns)
            .Named(source_name));
    if (!snap.ok()) return NotFound("snapshot " + ns + "/" + source_name + " not found");
    const auto& status = JField(*snap, "status");
    if (!JField(status, "readyToUse").is_boolean() || !status["readyToUse"].get<bool>()) {
      return FailedPrecondition("snapshot " + source_name + " is not ready to use");
    }
    const std::string content_name = JStr(status, "boundVolumeSnapshotContentName");
    auto content = ctx_.client->Get(
        kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshotcontents")
            .Named(content_name));
    if (!content.ok()) return content.status().WithContext("snapshot content " + content_name);
    if (JStr(JField(*content, "spec"), "driver") != driver.CsiDriver()) {
      return InvalidArgument("snapshot " + source_name + " belongs to another driver");
    }
    const std::string handle = JStr(JField(*content, "status"), "snapshotHandle");
    if (handle.empty()) return FailedPrecondition("snapshot " + source_name + " has no handle");
    const auto& restore = JField(JField(*content, "status"), "restoreSize");
    if (restore.is_number_integer() && requested < restore.get<int64_t>()) {
      return InvalidArgument("the claim requests less than the snapshot's restoreSize " +
                             std::to_string(restore.get<int64_t>()));
    }
    return ContentSource{ContentSource::kSnapshot, handle};
  }
  return InvalidArgument("dataSource " + JStr(source, "apiGroup") + "/" + kind +
                         " is not supported (PersistentVolumeClaim or VolumeSnapshot)");
}

Status Provisioner::Provision(const nlohmann::json& claim, const nlohmann::json& sc,
                              const DriverConfig& driver) {
  const auto& meta = JField(claim, "metadata");
  const std::string ns = JStr(meta, "namespace");
  const std::string name = JStr(meta, "name");
  const std::string uid = JStr(meta, "uid");
  const std::string class_name = JStr(JField(sc, "metadata"), "name");
  const std::string pv_name = "pvc-" + uid;

  // 1. Already done (e.g. crashed after the PV create, before the claim was bound)?
  auto existing = ctx_.VolumeExists(pv_name);
  if (!existing.ok()) return existing.status();
  if (*existing) return ctx_.journal->Finish(pv_name);

  const std::string node_name = SelectedNode(claim);
  std::optional<nlohmann::json> node;
  if (!node_name.empty()) {
    auto n = ctx_.Node(node_name);
    if (!n.ok()) {
      Failed(claim, class_name, n.status().WithContext("selected node " + node_name));
      return n.status();
    }
    node = *n;
  }
  auto source = ResolveDataSource(claim, driver);
  if (!source.ok()) {
    Failed(claim, class_name, source.status());
    return source.status();
  }
  auto supported = ctx_.SupportsTopology(driver);
  if (!supported.ok()) {
    Failed(claim, class_name, supported.status());
    return supported.status();
  }
  ProvisionInputs inputs{driver, claim, sc};
  inputs.node = node ? &*node : nullptr;
  inputs.source = *source;
  inputs.topology.supported = *supported;
  std::shared_ptr<const RegisteredTopology> registered;
  if (*supported) {
    inputs.topology_keys = ctx_.TopologyKeys(driver, node_name);
    if (node_name.empty()) {
      auto r = ctx_.RegisteredTopologyOf(driver);
      if (!r.ok()) {
        Failed(claim, class_name, r.status());
        return r.status();
      }
      registered = std::move(*r);
      inputs.topology.registered = registered.get();
    }
  }
  auto plan = PlanProvision(inputs);
  if (!plan.ok()) {
    Failed(claim, class_name, plan.status());
    return plan.status();
  }
  ctx_.events->Record(
      claim, kEventNormal, "Provisioning",
      "External provisioner is provisioning volume for claim \"" + ns + "/" + name + "\"");

  // 2. The journal row, before anything exists in the driver.
  Intent intent{pv_name, ns, name, uid, driver.flex_driver, plan->request.SerializeAsString(), ""};
  FLEXCSI_RETURN_IF_ERROR(ctx_.journal->Begin(intent));
  CrashPoint("journal-begin");

  // 3. CreateVolume, with the provisioner secret read now and never stored.
  csi::v1::CreateVolumeRequest request = plan->request;
  if (plan->provisioner_secret) {
    auto data = ctx_.SecretData(*plan->provisioner_secret);
    if (!data.ok()) {
      Failed(claim, class_name, data.status());
      return data.status();
    }
    for (const auto& [k, v] : *data) (*request.mutable_secrets())[k] = v;
  }
  auto created = ctx_.Csi(driver).CreateVolume(request, Deadline::In(ctx_.timeout));
  if (!created.ok()) {
    const Status failed = WithSecretsRedacted(created.status(), request.secrets());
    if (IsPendingCsiError(failed)) {
      // The driver is still making this volume (a CephFS clone copies in the background and
      // answers "pending" until it is done): no failure, so no ProvisioningFailed event. The
      // claim's backoff repeats CreateVolume by the same name, which finds that volume.
      spdlog::info("claim {}/{}: {} still pending in the driver; asking again", ns, name, pv_name);
      return failed;
    }
    Failed(claim, class_name, failed);
    // A final error means nothing was created; anything else may still be in flight, and the
    // row stays so that the volume is found again (retry) or deleted (claim gone).
    if (IsFinalCsiError(failed)) (void)ctx_.journal->Finish(pv_name);
    return failed;
  }
  CrashPoint("create-volume");
  csi::v1::Volume volume = created->volume();
  // A driver without accessibility constraints gets no nodeAffinity, whatever it answered.
  if (!*supported) volume.clear_accessible_topology();
  FLEXCSI_RETURN_IF_ERROR(ctx_.journal->SetVolumeId(pv_name, volume.volume_id()));

  auto pv = BuildFlexVolumePV(driver, *plan, volume, claim, driver.provisioner);
  if (!pv.ok()) {
    Failed(claim, class_name, pv.status());
    csi::v1::DeleteVolumeRequest del;
    del.set_volume_id(volume.volume_id());
    for (const auto& [k, v] : request.secrets()) (*del.mutable_secrets())[k] = v;
    FLEXCSI_RETURN_IF_ERROR(WithSecretsRedacted(
        ctx_.Csi(driver).DeleteVolume(del, Deadline::In(ctx_.timeout)), del.secrets()));
    (void)ctx_.journal->Finish(pv_name);
    return pv.status();
  }

  // 5. The claim may have been deleted (or replaced) while the driver worked. Its watched copy
  // tells, read afresh only when the cache no longer holds it. A deletion the watch has not
  // delivered yet leaves a PV bound to a claim that is gone: the PV controller releases it and
  // the deleter deletes it, as with csi-provisioner, which never reads the claim again.
  auto live = ctx_.Claim(ns, name);
  if (!live.ok() && !kube::IsNotFound(live.status())) return live.status();
  if (!live.ok() || JStr(JField(*live, "metadata"), "uid") != uid) {
    spdlog::info("claim {}/{} ({}) vanished during provisioning; deleting volume {}", ns, name, uid,
                 volume.volume_id());
    csi::v1::DeleteVolumeRequest del;
    del.set_volume_id(volume.volume_id());
    for (const auto& [k, v] : request.secrets()) (*del.mutable_secrets())[k] = v;
    FLEXCSI_RETURN_IF_ERROR(WithSecretsRedacted(
        ctx_.Csi(driver).DeleteVolume(del, Deadline::In(ctx_.timeout)), del.secrets()));
    return ctx_.journal->Finish(pv_name);
  }

  // 6. The PV. AlreadyExists: an earlier attempt created it before crashing.
  auto made = ctx_.client->Create(PVs(), *pv);
  if (!made.ok() && !kube::IsAlreadyExists(made.status())) {
    Failed(claim, class_name, made.status().WithContext("creating PV " + pv_name));
    return made.status();
  }
  CrashPoint("pv-create");
  FLEXCSI_RETURN_IF_ERROR(ctx_.journal->Finish(pv_name));
  spdlog::info("provisioned PV {} (volume {}) for claim {}/{}{}", pv_name, volume.volume_id(), ns,
               name, node_name.empty() ? "" : " on node " + node_name);
  ctx_.events->Record(claim, kEventNormal, "ProvisioningSucceeded",
                      "Successfully provisioned volume " + pv_name);
  WarnIfNoNodeMatches(claim, pv_name, volume);
  return Status::Ok();
}

void Provisioner::WarnIfNoNodeMatches(const nlohmann::json& claim, const std::string& pv_name,
                                      const csi::v1::Volume& volume) {
  if (volume.accessible_topology().empty()) return;
  auto nodes = ctx_.ListNodes();
  if (!nodes.ok()) {
    spdlog::warn("cannot check the nodeAffinity of PV {}: {}", pv_name, nodes.status().ToString());
    return;
  }
  if (!NodesMatchingTopology(volume.accessible_topology(), **nodes).empty()) return;
  std::string where;
  for (const auto& topology : volume.accessible_topology()) {
    std::map<std::string, std::string> sorted(topology.segments().begin(),
                                              topology.segments().end());
    std::string segment;
    for (const auto& [k, v] : sorted) segment += (segment.empty() ? "" : ",") + k + "=" + v;
    where += (where.empty() ? "{" : " or {") + segment + "}";
  }
  // The PV is kept (as external-provisioner keeps it): the volume exists, and a node that
  // registers the driver with these labels later can use it.
  ctx_.events->Record(claim, kEventWarning, "VolumeTopologyMatchesNoNode",
                      "volume " + pv_name + " is accessible only from " + where +
                          ", which no node's labels match: pods using it stay Pending until a "
                          "node with these labels has the driver registered");
}

Status Provisioner::ClaimForThisNode(const nlohmann::json& claim, const DriverConfig& driver) {
  const NodeDeployment& node = *ctx_.node_deployment;
  const auto& meta = JField(claim, "metadata");
  const std::string ns = JStr(meta, "namespace"), name = JStr(meta, "name");
  const std::string uid = JStr(meta, "uid");
  const std::string class_name = JStr(JField(claim, "spec"), "storageClassName");
  if (!node.immediate_binding || class_name.empty()) return Status::Ok();
  auto sc = ctx_.StorageClass(class_name);
  // No class: nobody can own the claim; the event would come from every node at once.
  if (!sc.ok()) return kube::IsNotFound(sc.status()) ? Status::Ok() : sc.status();
  // WaitForFirstConsumer claims wait for the scheduler's choice (ClaimNeedsProvisioning).
  if (JStr(*sc, "provisioner") != driver.provisioner ||
      !ClaimNeedsProvisioning(claim, *sc, driver.provisioner)) {
    return Status::Ok();
  }
  if (!ClassAllowsNode(*sc, ctx_.node_topology[driver.flex_driver])) return Status::Ok();

  // Every node's instance wants the claim: each waits a random time (longer after lost races,
  // so the herd thins), gives up as soon as its cache shows another owner, and otherwise writes
  // its node with the resourceVersion it read; the API server lets exactly one write through.
  int lost_races;
  {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    lost_races = lost_races_[uid];
  }
  static thread_local std::mt19937 random{std::random_device{}()};
  const auto wait = OwnershipDelay(node, lost_races, std::uniform_real_distribution<>(0, 1)(random));
  const auto until = std::chrono::steady_clock::now() + wait;
  const auto poll = std::max(std::chrono::milliseconds(10), node.base_delay / 100);
  auto owned_elsewhere = [&](const nlohmann::json& current) {
    const std::string selected = SelectedNode(current);
    return JStr(JField(current, "metadata"), "uid") != uid || !selected.empty();
  };
  while (std::chrono::steady_clock::now() < until) {
    if (ctx_.stopping != nullptr && *ctx_.stopping) return Unavailable("shutting down");
    if (ctx_.claim_cache != nullptr) {
      auto cached = ctx_.claim_cache->Get(ns + "/" + name);
      if (!cached || owned_elsewhere(*cached)) break;  // gone, replaced or taken: re-read below
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        poll, until - std::chrono::steady_clock::now()));
  }
  auto current = ctx_.client->Get(Claims(ns).Named(name));
  if (!current.ok() && !kube::IsNotFound(current.status())) return current.status();
  if (!current.ok() || owned_elsewhere(*current)) {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    lost_races_.erase(uid);  // decided; a claim sent back for a new node starts from scratch
    return Status::Ok();
  }
  (*current)["metadata"]["annotations"][kAnnSelectedNode] = node.node_name;
  auto updated = ctx_.client->Update(Claims(ns).Named(name), *current);
  if (!updated.ok()) {
    if (!kube::IsConflict(updated.status())) {
      return updated.status().WithContext("selecting node " + node.node_name + " for claim");
    }
    // Lost the race, or some other change: the next attempt waits longer and most likely
    // sees the winner at once.
    {
      std::lock_guard<std::mutex> lock(in_flight_mu_);
      ++lost_races_[uid];
    }
    return ClaimForThisNode(claim, driver);
  }
  {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    lost_races_.erase(uid);
  }
  // The update's watch event brings the claim back, now this node's: it is provisioned then.
  spdlog::info("claim {}/{} (Immediate binding) taken for node {} after {} ms", ns, name,
               node.node_name,
               std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
  return Status::Ok();
}

Status Provisioner::UndoIntent(const Intent& intent) {
  const DriverConfig* driver = ctx_.bridge.FindDriver(intent.flex_driver);
  if (driver == nullptr) {
    return FailedPrecondition("journal row " + intent.volume_name + " names driver " +
                              intent.flex_driver + ", which is no longer configured");
  }
  std::string volume_id = intent.volume_id;
  if (volume_id.empty()) {
    // The response was lost. CreateVolume is idempotent by name: repeating it returns the
    // volume if it exists (and creates it if it never did, which the delete then undoes).
    csi::v1::CreateVolumeRequest request;
    if (!request.ParseFromString(intent.request)) {
      return Internal("journal row " + intent.volume_name + " holds an unreadable request");
    }
    auto again = ctx_.Csi(*driver).CreateVolume(request, Deadline::In(ctx_.timeout));
    if (!again.ok()) return again.status().WithContext("re-finding " + intent.volume_name);
    volume_id = again->volume().volume_id();
  }
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(volume_id);
  FLEXCSI_RETURN_IF_ERROR(ctx_.Csi(*driver).DeleteVolume(del, Deadline::In(ctx_.timeout)));
  spdlog::info("deleted volume {} ({}): its claim {}/{} is gone", volume_id, intent.volume_name,
               intent.claim_namespace, intent.claim_name);
  return ctx_.journal->Finish(intent.volume_name);
}

Status Provisioner::RecoverJournal() {
  auto intents = ctx_.journal->List();
  if (!intents.ok()) return intents.status();
  Status result;
  for (const Intent& intent : *intents) {
    auto pv = ctx_.client->Get(PVs().Named(intent.volume_name));
    if (pv.ok()) {
      (void)ctx_.journal->Finish(intent.volume_name);
      continue;
    }
    if (!kube::IsNotFound(pv.status())) {
      result = pv.status();
      continue;
    }
    auto claim = ctx_.client->Get(Claims(intent.claim_namespace).Named(intent.claim_name));
    if (claim.ok() && JStr(JField(*claim, "metadata"), "uid") == intent.claim_uid &&
        !BeingDeleted(*claim)) {
      // Still wanted: the claim's own key (queued by every resync and claim event) provisions
      // it again and finds the same volume. Not here: that would retry a failing claim outside
      // its backoff, with one more ProvisioningFailed event each time.
      continue;
    }
    if (!claim.ok() && !kube::IsNotFound(claim.status())) {
      result = claim.status();
      continue;
    }
    Status s = UndoIntent(intent);
    if (!s.ok()) result = s;
  }
  return result;
}

}  // namespace flexcsi::controller
