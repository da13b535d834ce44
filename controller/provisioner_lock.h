// The leader-election lock that external-provisioner takes for a driver, so that
// flexcsi-controller can take the very same one: while either holds it, the other does not
// provision (docs/migration.md, "Hand provisioning over").
//
// external-provisioner (v3.x, cmd/csi-provisioner) names the lock after the provisioner name
// with '/' made '-', and csi-lib-utils' leaderelection then replaces every character outside
// [a-zA-Z0-9-] with '-' and appends 'X' to a name ending in '-'. The lock is a
// coordination.k8s.io/v1 Lease in --leader-election-namespace, by default $POD_NAMESPACE, else
// the namespace of the pod's service account, else "default" (csi-lib-utils v0.12.0, which
// v3.4.1 vendors).
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
