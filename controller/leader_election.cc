#include "controller/leader_election.h"

#include <thread>

#include <spdlog/spdlog.h>

#include "controller/event_recorder.h"

namespace flexcsi::controller {
namespace {

constexpr const char* kLeaderAnnotation = "control-plane.alpha.kubernetes.io/leader";
using Clock = std::chrono::steady_clock;
using Lock = LeaderElectionConfig::Lock;

// client-go's resource locks. The annotation-record kinds (ConfigMapLock, EndpointsLock) are one
// mechanism on two core kinds: nothing below tells them apart but this table.
struct LockKindSpec {
  Lock lock;
  const char* flag;  // --leader-election-lock
  const char* kind;
  const char* api_version;
  const char* plural;
  bool annotation_record;  // the record is kLeaderAnnotation's JSON; else the Lease's spec
};
constexpr LockKindSpec kLockKinds[] = {
    {Lock::kLease, "lease", "Lease", "coordination.k8s.io/v1", "leases", false},
    {Lock::kConfigMap, "configmap", "ConfigMap", "v1", "configmaps", true},
    {Lock::kEndpoints, "endpoints", "Endpoints", "v1", "endpoints", true},
};

// REQUIRES: lock is not kAuto.
const LockKindSpec& SpecOf(Lock lock) {
  for (const auto& spec : kLockKinds) {
    if (spec.lock == lock) return spec;
  }
  return kLockKinds[0];
}

}  // namespace

StatusOr<LeaderElectionConfig::Lock> ParseLeaderElectionLock(const std::string& value) {
  if (value == "auto") return Lock::kAuto;
  for (const auto& spec : kLockKinds) {
    if (value == spec.flag) return spec.lock;
  }
  return InvalidArgument(
      "--leader-election-lock \"" + value +
      "\" is not auto, lease, configmap or endpoints: take the lock your csi-provisioner takes, "
      "endpoints for v1.x with its default --leader-election-type (endpoints), lease for v1.x "
      "with --leader-election-type=leases and for v2 and later; configmap on clusters without "
      "Leases; auto is lease where coordination.k8s.io/v1 is served, else configmap");
}

LeaderElector::LeaderElector(kube::KubeClient* client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)) {}

std::string LeaderElector::LockKind() const { return SpecOf(kind_).kind; }

kube::ResourcePath LeaderElector::Collection() const {
  const LockKindSpec& spec = SpecOf(kind_);
  return kube::ResourcePath::Group(spec.api_version, spec.plural, config_.namespace_);
}

Status LeaderElector::ResolveLockKind() {
  if (kind_resolved_) return Status::Ok();
  if (config_.lock != Lock::kAuto) {
    kind_ = config_.lock;
  } else {
    // A list of an existing resource never answers 404; a cluster without the Lease API does.
    kube::ListOptions one;
    one.page_size = 1;
    auto listed = client_->List(
        kube::ResourcePath::Group("coordination.k8s.io/v1", "leases", config_.namespace_), one);
    if (!listed.ok() && !kube::IsNotFound(listed.status())) return listed.status();
    kind_ = listed.ok() ? Lock::kLease : Lock::kConfigMap;
  }
  kind_resolved_ = true;
  spdlog::info("leader election: {} {}/{} as {}", LockKind(), config_.namespace_, config_.name,
               config_.identity);
  return Status::Ok();
}

LeaderElector::Record LeaderElector::ReadRecord(const nlohmann::json& object) const {
  Record r;
  nlohmann::json src;
  if (!SpecOf(kind_).annotation_record) {
    src = object.value("spec", nlohmann::json::object());
    r.holder = src.value("holderIdentity", "");
    r.lease_seconds = src.value("leaseDurationSeconds", 0);
    r.acquire_time = src.value("acquireTime", "");
    r.renew_time = src.value("renewTime", "");
    r.transitions = src.value("leaseTransitions", 0);
    return r;
  }
  const auto& meta = object.value("metadata", nlohmann::json::object());
  const auto ann = meta.value("annotations", nlohmann::json::object());
  if (!ann.contains(kLeaderAnnotation) || !ann[kLeaderAnnotation].is_string()) return r;
  src = nlohmann::json::parse(ann[kLeaderAnnotation].get<std::string>(), nullptr, false);
  if (!src.is_object()) return r;
  r.holder = src.value("holderIdentity", "");
  r.lease_seconds = src.value("leaseDurationSeconds", 0);
  r.acquire_time = src.value("acquireTime", "");
  r.renew_time = src.value("renewTime", "");
  r.transitions = src.value("leaderTransitions", 0);
  return r;
}

nlohmann::json LeaderElector::WithRecord(nlohmann::json object, const Record& r) const {
  if (!SpecOf(kind_).annotation_record) {
    object["spec"] = {{"holderIdentity", r.holder},
                      {"leaseDurationSeconds", r.lease_seconds},
                      {"acquireTime", r.acquire_time},
                      {"renewTime", r.renew_time},
                      {"leaseTransitions", r.transitions}};
    return object;
  }
  // client-go's LeaderElectionRecord JSON; the rest of the object is written back as read.
  nlohmann::json record = {{"holderIdentity", r.holder},
                           {"leaseDurationSeconds", r.lease_seconds},
                           {"acquireTime", r.acquire_time},
                           {"renewTime", r.renew_time},
                           {"leaderTransitions", r.transitions}};
  object["metadata"]["annotations"][kLeaderAnnotation] = record.dump();
  return object;
}

StatusOr<nlohmann::json> LeaderElector::GetLockObject() {
  return client_->Get(Collection().Named(config_.name));
}

bool LeaderElector::IsLeader() const {
  return leading_ && Clock::now().time_since_epoch().count() < held_until_.load();
}

Status LeaderElector::CheckHeld() const {
  const auto give_up = Clock::now() + config_.renew_deadline;
  while (!IsLeader() && leading_ && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (IsLeader()) return Status::Ok();
  return FailedPrecondition(config_.identity + " does not hold the leader lock " + LockKind() +
                            " " + config_.namespace_ + "/" + config_.name +
                            " any more (or not yet): left to the instance that does");
}

Status LeaderElector::TryAcquireOrRenew() {
  const auto attempt_started = Clock::now();
  Status s = AcquireOrRenewOnce();
  // The successor counts leaseDuration from when it saw this write, which is after it was
  // sent: from the attempt's start, renew_deadline leaves the difference as margin.
  if (s.ok()) {
    held_until_ = (attempt_started + config_.renew_deadline).time_since_epoch().count();
  }
  return s;
}

Status LeaderElector::AcquireOrRenewOnce() {
  FLEXCSI_RETURN_IF_ERROR(ResolveLockKind());
  const int lease_seconds = static_cast<int>(std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration +
                                                          std::chrono::milliseconds(999))
             .count()));
  // Leases use MicroTime; the annotation record uses metav1.Time.
  const LockKindSpec& spec = SpecOf(kind_);
  const std::string now = spec.annotation_record ? NowRfc3339() : NowRfc3339Micro();
  Record mine{config_.identity, lease_seconds, now, now, 0};

  auto current = GetLockObject();
  if (!current.ok()) {
    if (!kube::IsNotFound(current.status())) return current.status();
    // As client-go creates it: the name, the namespace and the record, nothing else.
    nlohmann::json object = {
        {"apiVersion", spec.api_version},
        {"kind", spec.kind},
        {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}}};
    auto created = client_->Create(Collection(), WithRecord(object, mine));
    if (!created.ok()) return created.status();
    observed_ = mine;
    observed_raw_ = created->dump();
    observed_at_ = Clock::now();
    return Status::Ok();
  }

  Record theirs = ReadRecord(*current);
  const std::string raw =
      theirs.holder + "|" + theirs.renew_time + "|" + std::to_string(theirs.transitions);
  if (raw != observed_raw_) {
    observed_raw_ = raw;
    observed_at_ = Clock::now();
    observed_ = theirs;
  }
  const bool held_by_other = !theirs.holder.empty() && theirs.holder != config_.identity;
  const auto expires =
      observed_at_ + std::chrono::seconds(theirs.lease_seconds > 0 ? theirs.lease_seconds : 0);
  if (held_by_other && Clock::now() < expires) {
    return FailedPrecondition("lock held by " + theirs.holder);
  }
  if (theirs.holder == config_.identity) {
    if (!theirs.acquire_time.empty()) mine.acquire_time = theirs.acquire_time;
    mine.transitions = theirs.transitions;
  } else {
    mine.transitions = theirs.transitions + 1;
  }
  // Update with the read resourceVersion: a concurrent candidate's write makes this a 409.
  auto updated = client_->Update(Collection().Named(config_.name), WithRecord(*current, mine));
  if (!updated.ok()) return updated.status();
  observed_ = mine;
  observed_raw_ = mine.holder + "|" + mine.renew_time + "|" + std::to_string(mine.transitions);
  observed_at_ = Clock::now();
  return Status::Ok();
}

void LeaderElector::Release() {
  auto current = GetLockObject();
  if (!current.ok()) return;
  Record r = ReadRecord(*current);
  if (r.holder != config_.identity) return;
  // client-go's ReleaseOnCancel: an empty holder with a 1 s lease lets a successor in at once.
  r.holder = "";
  r.lease_seconds = 1;
  r.renew_time = SpecOf(kind_).annotation_record ? NowRfc3339() : NowRfc3339Micro();
  auto s = client_->Update(Collection().Named(config_.name), WithRecord(*current, r));
  if (!s.ok()) spdlog::warn("leader election: release failed: {}", s.status().ToString());
}

void LeaderElector::SleepWhile(std::chrono::milliseconds d,
                               const std::function<bool()>& go_on) const {
  const auto until = Clock::now() + d;
  while (go_on() && Clock::now() < until) {
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(50),
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()) +
            std::chrono::milliseconds(1)));
  }
}

bool LeaderElector::RenewWhile(const std::function<bool()>& go_on) {
  auto last_renewed = Clock::now();
  while (go_on()) {
    SleepWhile(config_.retry_period, go_on);
    if (!go_on()) break;
    Status s = TryAcquireOrRenew();
    if (s.ok()) {
      last_renewed = Clock::now();
      continue;
    }
    spdlog::warn("leader election: renew failed: {}", s.ToString());
    if (s.code() == Code::kFailedPrecondition ||
        Clock::now() - last_renewed > config_.renew_deadline) {
      return false;
    }
  }
  return true;
}

void LeaderElector::Run(const std::atomic<bool>& stop,
                        const std::function<void()>& on_started_leading,
                        const std::function<void()>& stop_work) {
  const auto running = [&stop] { return !stop; };
  // Campaign.
  while (!stop) {
    Status s = TryAcquireOrRenew();
    if (s.ok()) break;
    if (s.code() != Code::kFailedPrecondition) {
      spdlog::info("leader election: not acquired: {}", s.ToString());
    }
    SleepWhile(config_.retry_period, running);
  }
  if (stop) return;
  leading_ = true;
  spdlog::info("leader election: {} became leader", config_.identity);
  on_started_leading();

  bool held = RenewWhile(running);
  if (held) {
    spdlog::info(
        "leader election: {} stopping: waiting for the work in progress before "
        "releasing the lock",
        config_.identity);
  } else {
    // The lease may be another's already: nothing more goes out in its name.
    leading_ = false;
    spdlog::warn("leader election: {} lost the lock", config_.identity);
  }
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    stop_work();
    stopped = true;
  });
  // Work still finishing after a stop does so under a lease that stays renewed.
  if (held && !RenewWhile([&stopped] { return !stopped; })) {
    held = false;
    leading_ = false;
    spdlog::warn("leader election: {} lost the lock while its work stopped", config_.identity);
  }
  stopper.join();
  leading_ = false;
  spdlog::info("leader election: {} stopped leading", config_.identity);
  if (held) Release();
}

}  // namespace flexcsi::controller
