#include "bridge/node_registrar.h"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "bridge/cluster_access.h"
#include "kube/discovery.h"

namespace flexcsi {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int kConflictRetries = 5;
constexpr milliseconds kFirstRetry = seconds(1);
constexpr milliseconds kMaxRetry = std::chrono::minutes(5);
constexpr seconds kPollDrivers = seconds(5);      // NodeGetInfo: cheap, local
// Without a watch (RBAC of an older release: no list/watch), someone may have edited the objects
constexpr seconds kRecheckCluster = seconds(60);
constexpr seconds kRetryRefusedWatch = std::chrono::minutes(10);

kube::ResourcePath NodePath(const std::string& name) {
  return kube::ResourcePath::Core("nodes").Named(name);
}
// The node's CSINode, read where the cluster serves it (kube::CsiNodeGroupVersion: v1, or
// v1beta1 on 1.14-1.16, whose kubelet writes that version). Discovery says so: nothing is asked
// of an API the server lacks, so the RBAC of such a cluster need not name it, and no 404 is
// mistaken for a missing object.
struct CsiNodeRead {
  std::string group_version;  // "" where CSINode is not served (before 1.14)
  json object;                // {} when the node has none yet

  kube::ResourcePath Collection() const {
    return kube::ResourcePath::Group(group_version, "csinodes");
  }
  // What the registration rules take: null when not served.
  json ForRules() const { return group_version.empty() ? json(nullptr) : object; }
  // Reads the object again, in the group version already found.
  Status Reread(kube::KubeClient& client, const std::string& node_name) {
    object = json::object();
    if (group_version.empty()) return Status::Ok();
    auto csinode = client.Get(Collection().Named(node_name));
    if (csinode.ok()) {
      object = std::move(*csinode);
      return Status::Ok();
    }
    return kube::IsNotFound(csinode.status()) ? Status::Ok() : csinode.status();
  }
};

StatusOr<CsiNodeRead> GetCsiNode(kube::KubeClient& client, const std::string& node_name) {
  auto group_version = kube::CsiNodeGroupVersion(client);
  if (!group_version.ok()) return group_version.status();
  CsiNodeRead read{*group_version, json::object()};
  FLEXCSI_RETURN_IF_ERROR(read.Reread(client, node_name));
  return read;
}

// `read` is the CSINode as GetCsiNode just returned it; after a conflict it is read again (the
// group version stays: discovery is not asked twice).
Status WriteCsiNodeEntry(kube::KubeClient& client, const json& node, CsiNodeRead read,
                         DriverNodeInfo info) {
  if (read.group_version.empty()) return Status::Ok();  // labels and annotation only
  // CSINode v1beta1 is served alone on 1.14-1.16, whose entries have no `allocatable` (1.17):
  // the API server drops it, and an entry compared with it would never be found up to date.
  if (read.group_version == "storage.k8s.io/v1beta1") info.max_volumes = 0;
  const std::string name = node["metadata"].value("name", "");
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    if (attempt > 0) FLEXCSI_RETURN_IF_ERROR(read.Reread(client, name));
    const json& object = read.object;
    Status written;
    if (object.empty()) {
      written =
          client.Create(read.Collection(), NewCsiNode(node, info, read.group_version)).status();
      if (kube::IsAlreadyExists(written)) continue;  // kubelet made it meanwhile
    } else if (auto updated = CsiNodeWithDriver(object, info)) {
      // The API server keeps a driver entry immutable as a whole. kubelet only ever changes
      // one by unregistering the driver (its socket went away) and registering it again: do the
      // same, in two writes.
      auto without = CsiNodeWithoutDriver(object, info.driver);
      written =
          client.Update(read.Collection().Named(name), without ? *without : *updated).status();
      if (kube::IsConflict(written) || (written.ok() && without)) continue;
    }
    return written;
  }
  return Unavailable("CSINode " + name + " kept changing under " +
                     std::to_string(kConflictRetries) + " updates");
}

}  // namespace

StatusOr<bool> RegisterDriverOnNode(kube::KubeClient& client, const std::string& node_name,
                                    const DriverNodeInfo& info) {
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto node = client.Get(NodePath(node_name));
    if (!node.ok()) return node.status();
    auto csinode = GetCsiNode(client, node_name);
    if (!csinode.ok()) return csinode.status();
    auto patch = NodeRegistrationPatch(*node, csinode->ForRules(), info);
    if (!patch.ok()) return patch.status();
    if (patch->has_value()) {
      Status patched = client.Patch(NodePath(node_name), kube::PatchType::kMerge, **patch).status();
      if (kube::IsConflict(patched)) continue;
      FLEXCSI_RETURN_IF_ERROR(patched);
    }
    const bool served = !csinode->group_version.empty();
    FLEXCSI_RETURN_IF_ERROR(WriteCsiNodeEntry(client, *node, std::move(*csinode), info));
    return served;
  }
  return Unavailable("Node " + node_name + " kept changing under " +
                     std::to_string(kConflictRetries) + " patches");
}

Status UnregisterDriverFromNode(kube::KubeClient& client, const std::string& node_name,
                                const std::string& driver) {
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto node = client.Get(NodePath(node_name));
    if (!node.ok()) return node.status();
    auto csinode = GetCsiNode(client, node_name);
    if (!csinode.ok()) return csinode.status();
    // The labels first: which ones are the driver's own is read from its CSINode entry.
    if (auto patch = NodeUnregistrationPatch(*node, csinode->ForRules(), driver)) {
      Status patched = client.Patch(NodePath(node_name), kube::PatchType::kMerge, *patch).status();
      if (kube::IsConflict(patched)) continue;
      FLEXCSI_RETURN_IF_ERROR(patched);
    }
    if (!csinode->object.empty()) {
      if (auto updated = CsiNodeWithoutDriver(csinode->object, driver)) {
        Status written =
            client.Update(csinode->Collection().Named(node_name), *updated).status();
        if (kube::IsConflict(written)) continue;
        FLEXCSI_RETURN_IF_ERROR(written);
      }
    }
    return Status::Ok();
  }
  return Unavailable("Node or CSINode " + node_name + " kept changing");
}

StatusOr<RegisteredDriver> InspectDriverRegistration(kube::KubeClient& client,
                                                     const std::string& node_name,
                                                     const DriverNodeInfo& expected) {
  auto node = client.Get(NodePath(node_name));
  if (!node.ok()) return node.status();
  auto csinode = GetCsiNode(client, node_name);
  if (!csinode.ok()) return csinode.status();
  RegisteredDriver seen = ReadRegistration(*node, csinode->ForRules(), expected);
  seen.csinode_served = !csinode->group_version.empty();
  return seen;
}

RegistrationAccess ResolveRegistrationAccess(const BridgeConfig& config) {
  RegistrationAccess access;
  if (!config.register_drivers) {
    access.why_not = "registerDrivers is false in the configuration";
    return access;
  }
  access.node_name = config.node_name;
  if (access.node_name.empty()) {
    if (const char* env = std::getenv("NODE_NAME")) access.node_name = env;
  }
  if (access.node_name.empty()) {
    access.why_not =
        "no node name: set nodeName in the configuration, or NODE_NAME (the DaemonSet passes "
        "spec.nodeName through the downward API)";
    return access;
  }
  ClusterAccess cluster = ResolveClusterAccess(config);
  access.client = std::move(cluster.client);
  access.why_not = cluster.why_not;
  return access;
}

NodeRegistrar::NodeRegistrar(const BridgeConfig& config, CsiClients& clients,
                             RegistrationAccess access)
    : config_(config), clients_(clients), access_(std::move(access)) {
  if (access_.client) {
    watch_ = std::make_unique<RegistrationWatch>(*access_.client, access_.node_name, [this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        woken_ = true;
      }
      cv_.notify_all();
    });
  }
  for (const auto& d : config_.drivers) {
    DriverState& state = states_[d.csi_endpoint];
    state.driver = d.CsiDriver();
    if (!access_.client) {
      state.state = config_.register_drivers ? "off" : "disabled";
      state.message = access_.why_not;
    }
  }
}

NodeRegistrar::~NodeRegistrar() { Stop(); }

void NodeRegistrar::Start() {
  if (!config_.register_drivers) {
    spdlog::info("CSI driver registration on the Node is off (registerDrivers: false)");
    return;
  }
  if (!access_.client) {
    spdlog::warn(
        "CSI drivers are not registered on this node's Node and CSINode ({}); "
        "volumes whose PVs carry topology may not schedule to this node",
        access_.why_not);
    return;
  }
  spdlog::info("registering CSI drivers on node {}", access_.node_name);
  thread_ = std::thread([this] { Run(); });
}

void NodeRegistrar::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watch_) watch_->Stop();
}

json NodeRegistrar::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  json out = json::object();
  for (const auto& [endpoint, s] : states_) {
    out[endpoint] = {{"driver", s.driver},
                     {"node", access_.node_name},
                     {"nodeId", s.registered ? s.registered->node_id : ""},
                     {"state", s.state},
                     {"message", s.message},
                     {"attempts", s.attempts}};
  }
  return out;
}

void NodeRegistrar::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    woken_ = false;
    lock.unlock();
    KeepWatching();
    lock.lock();
    for (auto& [endpoint, state] : states_) {
      DriverState copy = state;
      lock.unlock();
      SyncEndpoint(endpoint, copy);  // talks to the driver and the API: never under mu_
      lock.lock();
      state = copy;
      if (stop_) return;
    }
    cv_.wait_for(lock, kPollDrivers, [this] { return stop_ || woken_; });
  }
}

void NodeRegistrar::KeepWatching() {
  const auto now = Clock::now();
  if (!watch_->Started()) {
    if (now < retry_watch_at_) return;
    // Discovery failed (API server unreachable): registration reports the same; try again.
    if (!watch_->Start().ok()) return;
  }
  const Status why = watch_->LastError();
  if (why.code() != Code::kPermissionDenied) return;
  // A failing list would be retried every 30 s, more requests than the timed check. Refused
  // may also mean a fresh install whose RoleBinding has not reached the authorizer yet: try
  // again now and then.
  watch_->Stop();
  retry_watch_at_ = now + kRetryRefusedWatch;
  if (watch_refusal_logged_) return;
  watch_refusal_logged_ = true;
  spdlog::warn(
      "cannot watch node {}'s Node and CSINode ({}); reading the drivers' registration back "
      "every {} s instead, and trying the watch again every {} min. Grant list and watch on "
      "nodes and csinodes (deploy/kubernetes/base/node/rbac.yaml)",
      access_.node_name, why.ToString(), kRecheckCluster.count(),
      std::chrono::duration_cast<std::chrono::minutes>(kRetryRefusedWatch).count());
}

bool NodeRegistrar::RegistrationMayHaveChanged(DriverState& state, const DriverNodeInfo& want,
                                               Clock::time_point now) {
  if (watch_->Started()) {
    const uint64_t generation = watch_->Generation();  // before Current: never skip an event
    if (generation == state.checked_generation) return false;
    auto seen = watch_->Current();
    if (!seen) return false;  // not listed yet: the events to come say when to look
    state.checked_generation = generation;
    RegisteredDriver cached = ReadRegistration(seen->node, seen->csinode, want);
    cached.csinode_served = !seen->csinode.is_null();
    // A mismatch may be the watch not having streamed our own last write yet: the caller
    // confirms it with a read before writing again.
    return !cached.Matches(want);
  }
  if (now < state.next_check) return false;
  state.next_check = now + kRecheckCluster;
  return true;
}

void NodeRegistrar::SyncEndpoint(const std::string& endpoint, DriverState& state) {
  const auto now = Clock::now();
  if (now < state.next_attempt) return;
  CsiClient& csi = clients_.For(endpoint);
  const Deadline deadline = Deadline::In(seconds(5));
  auto plugin = csi.GetPluginInfo(deadline);
  auto info = plugin.ok() ? csi.NodeGetInfo(deadline)
                          : StatusOr<csi::v1::NodeGetInfoResponse>(plugin.status());
  if (!info.ok()) {
    // Kept as registered: a restarting driver is still this node's driver.
    if (!state.registered) state.state = "pending";
    state.message = "driver not answering NodeGetInfo: " + info.status().ToString();
    return;
  }
  DriverNodeInfo want;
  want.driver = plugin->name();
  want.node_id = info->node_id();
  want.max_volumes = info->max_volumes_per_node();
  if (info->has_accessible_topology()) {
    for (const auto& [k, v] : info->accessible_topology().segments()) want.topology[k] = v;
  }
  state.driver = want.driver;
  const bool changed = !state.registered || !(*state.registered == want);
  if (!changed && !RegistrationMayHaveChanged(state, want, now)) return;
  if (!changed) {
    auto seen = InspectDriverRegistration(*access_.client, access_.node_name, want);
    if (seen.ok() && seen->Matches(want)) return;
    spdlog::warn(
        "driver {}: its registration on node {} changed in the cluster{}; writing it "
        "again",
        want.driver, access_.node_name,
        seen.ok() ? "" : " (cannot read it: " + seen.status().ToString() + ")");
  }
  StatusOr<bool> registered = RegisterDriverOnNode(*access_.client, access_.node_name, want);
  if (registered.ok()) {
    spdlog::info(
        "driver {} registered on node {}: node id {}, {} topology segment(s), "
        "max volumes {}{}",
        want.driver, access_.node_name, want.node_id, want.topology.size(), want.max_volumes,
        *registered ? "" : "; labels and node-id annotation only: this API server serves no "
                           "CSINode (Kubernetes before 1.14)");
    state.registered = want;
    state.state = "registered";
    state.message = "node id " + want.node_id;
    state.attempts = 0;
    state.delay = milliseconds(0);
    state.next_check = now + kRecheckCluster;  // without a watch
    return;
  }
  ++state.attempts;
  state.delay = state.delay.count() == 0 ? kFirstRetry : std::min(state.delay * 2, kMaxRetry);
  state.next_attempt = now + state.delay;
  state.state = "failed";
  state.message = registered.status().ToString();
  spdlog::warn("driver {}: cannot register on node {} (attempt {}, next in {} s): {}", want.driver,
               access_.node_name, state.attempts,
               std::chrono::duration_cast<seconds>(state.delay).count(), state.message);
}

}  // namespace flexcsi
