// ProvisionPlan: everything one claim's provisioning decides before any side effect, computed
// from the claim, its StorageClass and (WaitForFirstConsumer) the selected node, the way
// external-provisioner computes its CreateVolumeRequest. Pure: no API or CSI calls, so every
// rule (capacity, capabilities, parameters, secrets, topology, refusals) is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/bridge_config.h"
#include "common/status.h"
#include "controller/secret_params.h"
#include "controller/topology.h"
#include "csi.pb.h"

namespace flexcsi::controller {

inline constexpr const char* kAnnStorageProvisioner = "volume.kubernetes.io/storage-provisioner";
inline constexpr const char* kAnnBetaStorageProvisioner =
    "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr const char* kAnnSelectedNode = "volume.kubernetes.io/selected-node";
// Kubernetes 1.11's scheduler (alpha DynamicProvisioningScheduling) wrote this one; 1.12 renamed
// it.
inline constexpr const char* kAnnAlphaSelectedNode = "volume.alpha.kubernetes.io/selected-node";
inline constexpr const char* kAnnProvisionedBy = "pv.kubernetes.io/provisioned-by";
inline constexpr const char* kAnnDeletionSecretName =
    "volume.kubernetes.io/provisioner-deletion-secret-name";
inline constexpr const char* kAnnDeletionSecretNamespace =
    "volume.kubernetes.io/provisioner-deletion-secret-namespace";
inline constexpr const char* kProvisionerFinalizer =
    "external-provisioner.volume.kubernetes.io/finalizer";

// Where the new volume's content comes from.
struct ContentSource {
  enum Kind { kNone, kVolume, kSnapshot } kind = kNone;
  std::string id;  // CSI volume id or snapshot id
};

struct ProvisionPlan {
  std::string pv_name;  // "pvc-<claim uid>", also the CreateVolume name
  // Secrets are not filled in: they are read from the API just before the call and never kept.
  csi::v1::CreateVolumeRequest request;
  std::optional<SecretRef> provisioner_secret;
  std::optional<SecretRef> node_secret;  // node-stage/node-publish: the FlexVolume secretRef
  std::optional<SecretRef> controller_expand_secret;
  std::string fs_type;
  int64_t requested_bytes = 0;
  std::vector<std::string> access_modes;
  std::string reclaim_policy = "Delete";
  std::string storage_class;
};

// The provisioner a claim asks for: the GA annotation, else the beta one, else "".
std::string RequestedProvisioner(const nlohmann::json& claim);

// The node the scheduler selected for a WaitForFirstConsumer claim: the annotation, else the
// alpha one of 1.11, else "".
std::string SelectedNode(const nlohmann::json& claim);

// The provisioner a claim is handed to: RequestedProvisioner, else, for a WaitForFirstConsumer
// claim the scheduler has placed (a selected node), its class's provisioner. The scheduler
// selects a node only on a claim it decided to provision; the PV controller then merely copies
// the class's provisioner into the annotation, from one claim worker at its --kube-api-qps (20),
// between its binds: with 300 claims, waiting for it took 44-66 s a claim. The PV controller
// binds a PV made meanwhile all the same: it looks for a PV bound to the claim before anything
// else (FindMatchingVolume, 1.11 to 1.24). An Immediate claim still waits, because there the PV
// controller first looks for an existing PV to bind.
std::string ProvisionerOfClaim(const nlohmann::json& claim, const nlohmann::json& storage_class);

// True when `claim` is this provisioner's to provision now: Pending, no volumeName, handed to
// `provisioner` (ProvisionerOfClaim), not being deleted, and for WaitForFirstConsumer classes a
// selected node.
bool ClaimNeedsProvisioning(const nlohmann::json& claim, const nlohmann::json& storage_class,
                            const std::string& provisioner);

// What one claim's plan is computed from, as the provisioner read it from the API.
struct ProvisionInputs {
  const DriverConfig& driver;  // its rule's default fsType fills in a class without one
  const nlohmann::json& claim;
  const nlohmann::json& storage_class;
  const nlohmann::json* node = nullptr;  // the selected node; null for Immediate binding
  // The driver's topology keys: CSINode topologyKeys, else NodeGetInfo's accessible topology.
  std::vector<std::string> topology_keys = {};
  ContentSource source = {};
  TopologyOptions topology = {};  // see topology.h for the rules
};

// INVALID_ARGUMENT (shown on the claim as ProvisioningFailed) for anything the class or claim
// asks that a FlexVolume PV of this driver cannot be.
StatusOr<ProvisionPlan> PlanProvision(const ProvisionInputs& inputs);

// The capacity range of a claim: requests.storage as required, limits.storage as limit.
Status CapacityRangeFromClaim(const nlohmann::json& claim, csi::v1::CapacityRange* range);

// Kubernetes access modes -> CSI volume capabilities (mount access type with fsType).
Status AddCapabilities(const std::vector<std::string>& access_modes, const std::string& fs_type,
                       google::protobuf::RepeatedPtrField<csi::v1::VolumeCapability>* out);

}  // namespace flexcsi::controller
