// Who a FlexVolume call is for, decided once before any rule, Secret read or staging lookup
// uses the call (docs/security.md). A call's options come from whoever wrote the volume: the
// admin for a PV, anyone who may create a pod for an inline flexVolume. Nothing in the call
// says which, so the bridge asks the cluster:
//
// - PersistentVolume: kubernetes.io/pvOrVolumeName names a PV whose spec.flexVolume has the
//   call's driver and exactly its options. A mount also proves that its pod may use that PV: the
//   pod named by kubelet's kubernetes.io/pod.* keys has the uid of the mount path and lists the
//   PV's claim among its volumes. attach and mountdevice, which name no pod, prove that a pod
//   bound to their node uses the claim. A PV that matches but whose claim no such pod uses is
//   refused: it is a pod author's inline volume named and written like someone else's PV, and
//   is neither attached to its node nor staged there with the PV's Secrets.
// - Inline: no PV matches. Refused unless the driver entry says inlineVolumes: true; then its
//   Secrets come from its pod's namespace only (rule_secrets.h), it never shares a staging with
//   a PV (mount_calls.cc) and it may not resolve to the volume handle of any PV of the driver.
// - Trusted: the configuration says trustPodAuthors: every call is taken as the admin's, as
//   before 0.2.0, and nothing is read from the cluster.
//
// Handlers call ResolveCall, which parses the options, identifies the call, maps it to its CSI
// volume and applies the inline checks, so that no handler can use a volume it has not
// identified.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/bridge_context.h"
#include "bridge/flex_options.h"
#include "bridge/kubelet_paths.h"
#include "bridge/volume_mapping.h"
#include "common/status.h"

namespace flexcsi {

struct FlexCall;

enum class CallSource { kTrusted, kPersistentVolume, kInline };
// "trusted", "persistentVolume", "inline": what staging records keep (StageSpec::source).
const char* CallSourceName(CallSource source);

struct CallIdentity {
  CallSource source = CallSource::kTrusted;
  std::string pv_name;          // kPersistentVolume
  std::string claim_namespace;  // kPersistentVolume: the PV's claimRef, empty when unbound
  std::string claim_name;
  std::string pod_namespace;  // mount: kubelet's kubernetes.io/pod.namespace; else empty
  std::string pod_uid;        // mount: the uid of the pod volume dir; else empty
};

// What a handler knows besides the options.
struct CallContext {
  // The kubelet path of the call (mount's pod volume dir, mountdevice's device mount path);
  // null for attach and expandvolume.
  const KubeletPath* path = nullptr;
  // expandvolume and expandfs: kubelet grows only PVs, never inline volumes.
  bool persistent_volume_only = false;
  // attach: the node the volume goes to; mountdevice and mount: this bridge's node (empty for a
  // bridge of no node). A call that names no pod is a PV's only while a pod on that node uses
  // the PV's claim; a mount finds its pod among that node's pods.
  std::string node_name;
};

struct ResolvedCall {
  FlexOptions options;
  CsiVolume volume;
  CallIdentity identity;
};

StatusOr<ResolvedCall> ResolveCall(BridgeContext& ctx, const FlexCall& call,
                                   const std::string& options_json, const CallContext& context);

// The pieces of the decision, without I/O.

// The options a volume's author wrote: every key but kubelet's kubernetes.io/* ones.
std::map<std::string, std::string> AuthorOptions(const std::map<std::string, std::string>& all);

// Whether `pv` is a FlexVolume PV of `flex_driver` with exactly `author_options`.
bool PvHoldsFlexVolume(const nlohmann::json& pv, const std::string& flex_driver,
                       const std::map<std::string, std::string>& author_options);

// OK when `pod` lists the claim claim_namespace/claim_name among its volumes (a
// persistentVolumeClaim volume, or a generic ephemeral volume whose claim is
// <pod>-<volume>); PERMISSION_DENIED otherwise, naming pod, claim and PV.
Status PodUsesClaim(const nlohmann::json& pod, const std::string& claim_namespace,
                    const std::string& claim_name, const std::string& pv_name);

// The name of a PV in `pvs` whose volume is `handle` of the CSI driver `driver` maps to: a
// FlexVolume PV of any driver entry of `config` on that CSI driver (two profiles may serve one
// CSI driver, rook-cephfs and cephfs), mapped through that entry's rule, or a CSI PV of the CSI
// driver. nullopt when none is.
std::optional<std::string> PvWithVolumeHandle(const std::vector<nlohmann::json>& pvs,
                                              const BridgeConfig& config,
                                              const DriverConfig& driver,
                                              const std::string& handle);

}  // namespace flexcsi
