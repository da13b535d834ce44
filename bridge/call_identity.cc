#include "bridge/call_identity.h"

#include <spdlog/spdlog.h>

#include "bridge/cluster_objects.h"
#include "bridge/flex_calls.h"
#include "common/json_access.h"

namespace flexcsi {
namespace {

constexpr char kSeeSecurityDoc[] = " (docs/security.md)";

bool IsKubeletKey(const std::string& key) { return key.rfind("kubernetes.io/", 0) == 0; }

// The mount path and kubelet's keys must tell the same story: kubelet writes both, so a
// difference means the call did not come from kubelet as it claims.
Status CheckPathMatchesOptions(const KubeletPath& path, const DriverConfig& driver,
                               const FlexOptions& options) {
  if (path.volume_name != options.volume_name || path.flex_driver != driver.flex_driver) {
    return InvalidArgument("path " + path.path + " is for volume " + path.volume_name +
                           " of driver " + path.flex_driver + ", but the options are for " +
                           options.volume_name + " of " + driver.flex_driver);
  }
  if (path.kind == KubeletPathKind::kPodVolumeDir && path.pod_uid != options.pod_uid) {
    return InvalidArgument("path " + path.path + " is pod " + path.pod_uid +
                           "'s, but kubernetes.io/pod.uid is \"" + options.pod_uid + "\"");
  }
  return Status::Ok();
}

// The first pod bound to `node_name` that `wanted` accepts: from the cached list, then, for a pod
// bound a moment ago, from one listed at most a second ago (ClusterObjects::PodsOnNode), which
// lets one list serve a burst of calls. nullopt when no pod there is wanted.
template <typename Wanted>
StatusOr<std::optional<nlohmann::json>> FindPodOnNode(ClusterObjects& cluster,
                                                      const std::string& node_name,
                                                      const Wanted& wanted) {
  for (bool fresh : {false, true}) {
    auto pods = cluster.PodsOnNode(node_name, fresh);
    if (!pods.ok()) return pods.status();
    for (const auto& pod : **pods) {
      if (wanted(pod)) return std::optional<nlohmann::json>(pod);
    }
  }
  return std::optional<nlohmann::json>();
}

// The pod a mount is for: among its node's pods instead of a GET each; a GET for a pod that
// list lacks, and on a bridge of no node.
StatusOr<std::optional<nlohmann::json>> MountingPod(ClusterObjects& cluster,
                                                    const std::string& node_name,
                                                    const FlexOptions& options,
                                                    const std::string& uid) {
  if (!node_name.empty()) {
    auto found = FindPodOnNode(cluster, node_name, [&](const nlohmann::json& pod) {
      return JStr(JField(pod, "metadata"), "uid") == uid;
    });
    if (!found.ok() || found->has_value()) return found;
  }
  return cluster.Pod(options.pod_namespace, options.pod_name, uid);
}

// attach and mountdevice name no pod: the PV is attached to or staged on a node only for a pod
// bound there that uses its claim, as the attach/detach controller attaches it for such a pod.
Status SomePodOnNodeUsesClaim(ClusterObjects& cluster, const std::string& node_name,
                              const CallIdentity& identity) {
  if (identity.claim_name.empty()) {
    return PermissionDenied("PV " + identity.pv_name + " is bound to no claim: refused on node " +
                            node_name + kSeeSecurityDoc);
  }
  auto found = FindPodOnNode(cluster, node_name, [&](const nlohmann::json& pod) {
    return PodUsesClaim(pod, identity.claim_namespace, identity.claim_name, identity.pv_name).ok();
  });
  if (!found.ok()) return found.status();
  if (found->has_value()) return Status::Ok();
  return PermissionDenied("no pod on node " + node_name + " uses claim " +
                          identity.claim_namespace + "/" + identity.claim_name + " of PV " +
                          identity.pv_name + ": refused" + kSeeSecurityDoc);
}

StatusOr<CallIdentity> IdentifyPersistentVolume(ClusterObjects& cluster, const nlohmann::json& pv,
                                                const FlexOptions& options,
                                                const CallContext& context) {
  CallIdentity identity;
  identity.source = CallSource::kPersistentVolume;
  identity.pv_name = options.volume_name;
  const nlohmann::json& claim = JField(JField(pv, "spec"), "claimRef");
  identity.claim_namespace = JStr(claim, "namespace");
  identity.claim_name = JStr(claim, "name");
  if (context.path == nullptr || context.path->kind != KubeletPathKind::kPodVolumeDir) {
    if (context.node_name.empty()) return identity;  // expandvolume, expandfs; a bridge of no node
    FLEXCSI_RETURN_IF_ERROR(SomePodOnNodeUsesClaim(cluster, context.node_name, identity));
    return identity;
  }
  identity.pod_namespace = options.pod_namespace;
  identity.pod_uid = context.path->pod_uid;
  const std::string pod = options.pod_namespace + "/" + options.pod_name;
  if (identity.claim_name.empty()) {
    return PermissionDenied("pod " + pod + " mounts PV " + identity.pv_name +
                            ", which is bound to no claim: refused" + kSeeSecurityDoc);
  }
  auto found = MountingPod(cluster, context.node_name, options, identity.pod_uid);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return PermissionDenied("pod " + pod + " with uid " + identity.pod_uid +
                            " is not in the cluster: refused mounting PV " + identity.pv_name +
                            kSeeSecurityDoc);
  }
  FLEXCSI_RETURN_IF_ERROR(
      PodUsesClaim(**found, identity.claim_namespace, identity.claim_name, identity.pv_name));
  return identity;
}

StatusOr<CallIdentity> IdentifyCall(BridgeContext& ctx, const DriverConfig& driver,
                                    const FlexOptions& options, const CallContext& context) {
  if (ctx.config.trust_pod_authors) return CallIdentity{};
  if (ctx.cluster == nullptr) {
    return FailedPrecondition(
        "the bridge cannot tell a PV's call from an inline volume's: it "
        "has no cluster access; give it a kubeconfig, or set "
        "trustPodAuthors: true where only the admin creates pods" +
        std::string(kSeeSecurityDoc));
  }
  auto pv = ctx.cluster->PersistentVolume(options.volume_name);
  if (!pv.ok()) return pv.status();
  if (pv->has_value() && PvHoldsFlexVolume(**pv, driver.flex_driver, AuthorOptions(options.all))) {
    return IdentifyPersistentVolume(*ctx.cluster, **pv, options, context);
  }
  if (context.persistent_volume_only) {
    return FailedPrecondition("volume " + options.volume_name + " is no FlexVolume PV of " +
                              driver.flex_driver +
                              " with these options: only a PV's volume "
                              "is expanded" +
                              kSeeSecurityDoc);
  }
  if (!driver.inline_volumes) {
    return PermissionDenied("inline volumes of FlexVolume driver " + driver.flex_driver +
                            " are refused: set inlineVolumes: true in its driver entry of the "
                            "bridge configuration to allow volume \"" +
                            options.volume_name + "\"" + kSeeSecurityDoc);
  }
  CallIdentity identity;
  identity.source = CallSource::kInline;
  if (context.path != nullptr && context.path->kind == KubeletPathKind::kPodVolumeDir) {
    identity.pod_namespace = options.pod_namespace;
    identity.pod_uid = context.path->pod_uid;
  }
  return identity;
}

// An inline volume may not be a PV's volume: the same storage, staged a second time for a pod
// that may not use the PV's claim.
Status CheckInlineVolume(BridgeContext& ctx, const DriverConfig& driver, const FlexOptions& options,
                         const CsiVolume& volume) {
  auto pvs = ctx.cluster->PersistentVolumes();
  if (!pvs.ok()) return pvs.status();
  if (auto pv = PvWithVolumeHandle(**pvs, ctx.config, driver, volume.volume_handle)) {
    return PermissionDenied("inline volume \"" + options.volume_name + "\" resolves to the " +
                            "volume handle of PV " + *pv + ": refused" + kSeeSecurityDoc);
  }
  return Status::Ok();
}

// A refusal is the admin's to see too, not only the pod's event: one line naming the call, the
// volume and the pod (kubelet's keys, never the author's options).
Status Refused(const FlexCall& call, const FlexOptions& options, const Status& why) {
  if (why.code() == Code::kPermissionDenied) {
    const std::string pod =
        options.pod_name.empty() ? "" : ", pod " + options.pod_namespace + "/" + options.pod_name;
    spdlog::warn("refused {} of volume {} (driver {}{}): {}", call.name, options.volume_name,
                 call.driver.flex_driver, pod, why.message());
  }
  return why;
}

}  // namespace

const char* CallSourceName(CallSource source) {
  switch (source) {
    case CallSource::kTrusted:
      return "trusted";
    case CallSource::kPersistentVolume:
      return "persistentVolume";
    case CallSource::kInline:
      return "inline";
  }
  return "trusted";
}

std::map<std::string, std::string> AuthorOptions(const std::map<std::string, std::string>& all) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : all) {
    if (!IsKubeletKey(key)) out.emplace(key, value);
  }
  return out;
}

bool PvHoldsFlexVolume(const nlohmann::json& pv, const std::string& flex_driver,
                       const std::map<std::string, std::string>& author_options) {
  const nlohmann::json& flex = JField(JField(pv, "spec"), "flexVolume");
  if (!flex.is_object() || JStr(flex, "driver") != flex_driver) return false;
  std::map<std::string, std::string> written;
  const nlohmann::json& options = JField(flex, "options");
  if (options.is_object()) {
    for (auto it = options.begin(); it != options.end(); ++it) {
      if (!it->is_string()) return false;
      // kubelet writes its own keys over any such key of the PV's.
      if (!IsKubeletKey(it.key())) written.emplace(it.key(), it->get<std::string>());
    }
  }
  return written == author_options;
}

Status PodUsesClaim(const nlohmann::json& pod, const std::string& claim_namespace,
                    const std::string& claim_name, const std::string& pv_name) {
  const nlohmann::json& metadata = JField(pod, "metadata");
  const std::string pod_namespace = JStr(metadata, "namespace");
  const std::string pod_name = JStr(metadata, "name");
  if (pod_namespace == claim_namespace) {
    const nlohmann::json& volumes = JField(JField(pod, "spec"), "volumes");
    for (const auto& v : volumes.is_array() ? volumes : nlohmann::json::array()) {
      if (JStr(JField(v, "persistentVolumeClaim"), "claimName") == claim_name) {
        return Status::Ok();
      }
      // A generic ephemeral volume's claim is named after the pod and the volume.
      if (JField(v, "ephemeral").is_object() && pod_name + "-" + JStr(v, "name") == claim_name) {
        return Status::Ok();
      }
    }
  }
  return PermissionDenied("pod " + pod_namespace + "/" + pod_name + " does not use claim " +
                          claim_namespace + "/" + claim_name + " of PV " + pv_name + ": refused" +
                          kSeeSecurityDoc);
}

std::optional<std::string> PvWithVolumeHandle(const std::vector<nlohmann::json>& pvs,
                                              const BridgeConfig& config,
                                              const DriverConfig& driver,
                                              const std::string& handle) {
  for (const auto& pv : pvs) {
    const nlohmann::json& spec = JField(pv, "spec");
    const std::string name = JStr(JField(pv, "metadata"), "name");
    const nlohmann::json& csi = JField(spec, "csi");
    if (csi.is_object() && JStr(csi, "driver") == driver.CsiDriver() &&
        JStr(csi, "volumeHandle") == handle) {
      return name;
    }
    const DriverConfig* entry = config.FindDriver(JStr(JField(spec, "flexVolume"), "driver"));
    if (entry == nullptr || entry->CsiDriver() != driver.CsiDriver()) continue;
    auto volume = CsiVolumeOfPV(*entry, pv);
    if (volume.ok() && volume->volume_handle == handle) return name;
  }
  return std::nullopt;
}

StatusOr<ResolvedCall> ResolveCall(BridgeContext& ctx, const FlexCall& call,
                                   const std::string& options_json, const CallContext& context) {
  auto options = FlexOptions::Parse(options_json);
  if (!options.ok()) return options.status();
  if (context.path != nullptr) {
    FLEXCSI_RETURN_IF_ERROR(CheckPathMatchesOptions(*context.path, call.driver, *options));
  }
  auto identity = IdentifyCall(ctx, call.driver, *options, context);
  if (!identity.ok()) return Refused(call, *options, identity.status());
  auto volume = MapFlexVolume(call.driver, *options);
  if (!volume.ok()) return volume.status();
  if (identity->source == CallSource::kInline) {
    Status allowed = CheckInlineVolume(ctx, call.driver, *options, *volume);
    if (!allowed.ok()) return Refused(call, *options, allowed);
  }
  return ResolvedCall{std::move(*options), std::move(*volume), std::move(*identity)};
}

}  // namespace flexcsi
