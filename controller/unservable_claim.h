// WhyClaimCannotBeServed: the claims of our StorageClasses that this cluster can never see
// provisioned the way they ask, decided once so that the controller refuses them with one event
// instead of leaving them Pending in silence (or, worse, provisioning an empty volume where a
// copy was asked for). Pure: unit-tested without a cluster.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "controller/cluster_capabilities.h"

namespace flexcsi::controller {

// kubectl apply's record of what the user sent; the only trace of a field an old API server
// dropped because it did not know it.
inline constexpr const char* kAnnLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

// The reason (for a ProvisioningFailed event) why `claim`, waiting for a volume of
// `storage_class` (one of ours), cannot be served on `cluster`, or nullopt when it can:
//   - volumeBindingMode WaitForFirstConsumer without a selected node, where the scheduler never
//     selects one (before 1.11);
//   - a VolumeSnapshot data source where snapshot.storage.k8s.io/v1 is not served;
//   - a dataSource / dataSourceRef that kubectl apply sent but the API server dropped (before
//     1.12 the field does not exist): provisioning would give an empty volume, not the copy.
// Claims not waiting for a volume (bound, named, being deleted) are never refused.
std::optional<std::string> WhyClaimCannotBeServed(const nlohmann::json& claim,
                                                  const nlohmann::json& storage_class,
                                                  const ClusterCapabilities& cluster);

}  // namespace flexcsi::controller
