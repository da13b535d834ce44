// The AWS EBS volume-ID helper upstream exports (translation.md §5.1); the plugin itself is
// reached through NewAwsEbsPlugin() in in_tree_plugin.h.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {
namespace translator {

// aws://<zone>/<vol-id>, aws:///<vol-id> or a bare id -> the bare EBS volume id. A value without
// the aws:// prefix is returned verbatim, unvalidated, as upstream does.
StatusOr<std::string> KubernetesVolumeIDToEBSVolumeID(const std::string& kubernetes_id);

}  // namespace translator
}  // namespace flexcsi
