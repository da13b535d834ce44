// The StorageClass parameters that name secrets (csi.storage.k8s.io/*-secret-name|namespace and
// their deprecated csi*SecretName forms), resolved as external-provisioner resolves them:
//   name:      ${pv.name} ${pvc.name} ${pvc.namespace} ${pvc.annotations['KEY']}
//   namespace: ${pv.name} ${pvc.namespace}
// The provisioner and controller-expand secrets may not use ${pvc.annotations[...]}: those
// secrets are the driver's own credentials and a claim's author must not pick them.
// A VolumeSnapshotClass's csi.storage.k8s.io/snapshotter-secret-name|namespace (kSnapshotter)
// resolve the same way, with no claim and no PV: a literal name, as the classes of the drivers'
// own examples give it (csi-snapshotter's ${volumesnapshot.*} templates are refused, named).
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bridge/flex_options.h"  // RedactSecretValues
#include "common/status.h"

namespace flexcsi::controller {

enum class SecretKind {
  kProvisioner,
  kControllerPublish,
  kNodeStage,
  kNodePublish,
  kControllerExpand,
  kNodeExpand,
  kSnapshotter,
};
const char* SecretKindName(SecretKind kind);  // "Provisioner", "NodeStage", ...

struct SecretRef {
  std::string name;
  std::string namespace_;
  bool operator==(const SecretRef& o) const {
    return name == o.name && namespace_ == o.namespace_;
  }
};

// std::nullopt when the class names no secret of this kind (nor a default
// csi.storage.k8s.io/secret-name|namespace pair). INVALID_ARGUMENT, naming the parameter, for
// half a pair, both spellings at once, an unknown ${...} token, or a result that is not a valid
// name. `claim` may be null (deletion, when the claim is gone): then only ${pv.name} resolves.
StatusOr<std::optional<SecretRef>> ResolveSecretRef(SecretKind kind,
                                                    const std::map<std::string, std::string>& params,
                                                    const std::string& pv_name,
                                                    const nlohmann::json* claim);

// True for keys the provisioner consumes itself and never passes to CreateVolume.
bool IsProvisionerOnlyParameter(const std::string& key);

// A driver's error for a request that carried `secrets` (a std::map or the request's protobuf
// map), with every secret value in its message redacted as the bridge redacts them
// (RedactSecretValues, bridge/flex_options.h): drivers have been known to echo their request,
// and the message goes on to an event any reader of the claim sees, a log line and the work
// queue's retry log. Every CSI call made with secrets passes its error through this at once.
template <typename SecretMap>
Status WithSecretsRedacted(const Status& status, const SecretMap& secrets) {
  if (status.ok() || secrets.empty()) return status;
  const std::map<std::string, std::string> values(secrets.begin(), secrets.end());
  return Status(status.code(), RedactSecretValues(status.message(), values));
}

}  // namespace flexcsi::controller
