// Discovery: which Kubernetes version the API server is and which resources it serves, as
// kubectl and client-go's discovery client find out (/version, /api/v1, /apis/<group>/<version>).
// Tools that must run against old clusters (1.9-1.13 lack CSINode, Leases, VolumeAttachment v1,
// the snapshot API) ask here first instead of meeting a 404 on a watch.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"

namespace flexcsi::kube {

struct ServerVersion {
  int major = 0;  // 0: unknown
  int minor = 0;
  std::string git_version;  // "v1.10.6" as the server says it

  bool known() const { return major > 0; }
  // True when the server is at least major.minor. An unknown version counts as new enough:
  // callers then act as on a current cluster rather than refusing on a guess.
  bool AtLeast(int want_major, int want_minor) const;
  // "v1.10.6", or "an unknown version".
  std::string Describe() const;
};

// The /version answer: gitVersion "v1.10.6[-anything]" first, else major/minor ("1", "10+", as
// some distributions report them). INVALID_ARGUMENT when neither parses.
StatusOr<ServerVersion> ParseServerVersion(const nlohmann::json& version_info);

// GET /version.
StatusOr<ServerVersion> GetServerVersion(KubeClient& client);

// Whether `resource` (a plural, "csinodes") is served in `group_version` ("v1",
// "storage.k8s.io/v1"): the group version's APIResourceList names it. A group version the server
// does not know (404) is "not served", not an error; other failures (401, 403, unreachable) are.
StatusOr<bool> ServesResource(KubeClient& client, const std::string& group_version,
                              const std::string& resource);

// Where CSINode is served: "storage.k8s.io/v1" (1.17 and later), else "storage.k8s.io/v1beta1"
// (1.14-1.16, where kubelet's nodeinfomanager writes it and csi-provisioner v1.x reads it), else
// "" (before 1.14). Writers create the object in the version they read it from.
StatusOr<std::string> CsiNodeGroupVersion(KubeClient& client);

}  // namespace flexcsi::kube
