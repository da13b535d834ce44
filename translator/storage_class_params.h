// Parameter handling shared by the StorageClass translations of EBS, GCE PD and Azure Disk
// (translation.md §3.5): "zone" and "zones" (case-insensitive) are removed and become topology.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "translator/json_fields.h"

namespace flexcsi {
namespace translator {

extern const char kCsiFsTypeParameter[];  // csi.storage.k8s.io/fstype

// If `lower_key` is "zone" or "zones", stores the topology it generates for `csi_zone_key` in
// *generated (the last one seen wins, as in upstream) and returns true.
bool TakeZoneParameter(const std::string& lower_key, const std::string& value,
                       const std::string& csi_zone_key, std::optional<Json>* generated);

// Writes `params` as sc.parameters, leaving the field out when empty (omitempty).
void SetStorageClassParameters(Json& sc, const std::map<std::string, std::string>& params);

}  // namespace translator
}  // namespace flexcsi
