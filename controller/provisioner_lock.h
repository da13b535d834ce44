// The leader-election lock that external-provisioner takes for a driver, so that
// flexcsi-controller can take the very same one: while either holds it, the other does not
// provision (docs/migration.md, "Hand provisioning over").
//
// external-provisioner names the lock after the provisioner name with '/' made '-', and
// csi-lib-utils' leaderelection then replaces every character outside [a-zA-Z0-9-] with '-' and
// appends 'X' to a name ending in '-' (sanitizeName). The name is the same from v1.1 on (v1.0.x
// left its lock to sig-storage-lib-external-provisioner, which made only '/' '-'); the kind
// differs (LeaderElectionConfig::Lock, controller/leader_election.h):
//   - v3.x (cmd/csi-provisioner, csi-lib-utils v0.12.0 in v3.4.1) and v2.x: a
//     coordination.k8s.io/v1 Lease;
//   - v1.1-v1.6 (v1.2.2 on Kubernetes 1.14; flag --enable-leader-election): an Endpoints
//     object by default (--leader-election-type=endpoints), a Lease with
//     --leader-election-type=leases; its record is client-go's, in the Endpoints annotation
//     control-plane.alpha.kubernetes.io/leader.
// The namespace is --leader-election-namespace, by default $POD_NAMESPACE, else the namespace
// of the pod's service account, else "default" (both eras alike).
#pragma once

#include <string>

namespace flexcsi::controller {

std::string ExternalProvisionerLockName(const std::string& provisioner);

// Where external-provisioner puts the lock when no namespace is given: `pod_namespace` (the
// POD_NAMESPACE environment variable, empty when unset), else the namespace file of the pod's
// service account (`service_account_namespace_file`), else "default".
std::string DefaultLockNamespace(const std::string& pod_namespace,
                                 const std::string& service_account_namespace_file);

inline constexpr char kServiceAccountNamespaceFile[] =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

}  // namespace flexcsi::controller
