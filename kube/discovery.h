// What the API server serves, read as client-go's discovery client reads it: features that an
// old cluster lacks (CSINode before 1.14, CSI PVs kubelet can mount before 1.13) are found out
// by asking, never by a 404 on the object or a crash loop.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/kube_client.h"

namespace flexcsi::kube {

struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string git_version;  // "v1.10.6"

  bool AtLeast(int want_major, int want_minor) const {
    return major != want_major ? major > want_major : minor >= want_minor;
  }
};

// GET /version. Distributions write the minor as "10+"; the leading digits count.
StatusOr<ServerVersion> GetServerVersion(KubeClient& client);
// Parses /version's answer (split out for tests).
StatusOr<ServerVersion> ParseServerVersion(const nlohmann::json& answer);

// Whether `group_version` ("storage.k8s.io/v1", "v1") lists `resource` ("csinodes"). A group
// version the server does not serve at all is `false`, not an error.
StatusOr<bool> ServesResource(KubeClient& client, const std::string& group_version,
                              const std::string& resource);

}  // namespace flexcsi::kube
