// Topology translation shared by the in-tree plugins (translation.md §3, §8.3): which Kubernetes
// label family a PV uses, renaming node-affinity keys between Kubernetes and CSI, deriving
// affinity from zone labels and labels from affinity, region parsers, and StorageClass
// allowedTopologies. Functions that read take a view of the object; the CSI -> in-tree ones
// modify a PV or StorageClass held as JSON in place, the in-tree -> CSI ones record the new
// spec.nodeAffinity in SpecChanges. They may throw FieldTypeError on malformed input (see
// json_fields.h).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "translator/json_fields.h"
#include "translator/source_pv.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

extern const char kLabelZoneGA[];         // topology.kubernetes.io/zone
extern const char kLabelRegionGA[];       // topology.kubernetes.io/region
extern const char kLabelZoneBeta[];       // failure-domain.beta.kubernetes.io/zone
extern const char kLabelRegionBeta[];     // failure-domain.beta.kubernetes.io/region
extern const char kMultiZoneDelimiter[];  // "__"

struct LabelFamily {
  const char* zone_key;
  const char* region_key;
};

// §3.1: GA or beta, from the node affinity first and the labels second; GA by default.
LabelFamily DetermineLabelFamily(JsonView pv);
LabelFamily DetermineLabelFamily(const SourcePV& pv);

// True if any matchExpressions entry of any required term of `node_affinity` (a
// VolumeNodeAffinity, may be null) uses `key`.
bool TopologyKeyExist(const std::string& key, const Json* node_affinity);
bool TopologyKeyExist(const std::string& key, JsonView node_affinity);

// Every value of every required requirement with `key`, de-duplicated and sorted.
std::vector<std::string> TopologyValues(JsonView pv, const std::string& key);

// Renames every required requirement key `old_key` to `new_key`.
void ReplaceTopologyKey(Json& pv, const std::string& old_key, const std::string& new_key);

using RegionParser = StatusOr<std::string> (*)(const std::vector<std::string>& zones);
StatusOr<std::string> AwsRegionFromZones(const std::vector<std::string>& zones);
StatusOr<std::string> GceRegionFromZones(const std::vector<std::string>& zones);

// §3.2 (EBS, GCE PD, Cinder). The second form changes `pv` in place.
void TranslateTopologyInTreeToCsi(const SourcePV& pv, std::string_view csi_zone_key,
                                  SpecChanges* changes);
void TranslateTopologyInTreeToCsi(Json& pv, const std::string& csi_zone_key);
// §3.3. `region_parser` may be null (Cinder). Fails only when the region parser fails; the
// message is upstream's "Failed to handle region topology. error: ...".
Status TranslateTopologyCsiToInTree(Json& pv, const std::string& csi_zone_key,
                                    RegionParser region_parser);

// §8.3 (vSphere).
void TranslateVsphereTopologyInTreeToCsi(const SourcePV& pv, std::string_view csi_zone_key,
                                         std::string_view csi_region_key, SpecChanges* changes);
void TranslateVsphereTopologyCsiToInTree(Json& pv, const std::string& csi_zone_key,
                                         const std::string& csi_region_key);

// §3.4: returns a translated copy of an allowedTopologies array.
Json TranslateAllowedTopologies(const Json& terms, const std::string& csi_zone_key);

// One term with one {key, values} entry: what zone/zones StorageClass parameters become.
Json GenerateTopologySelector(const std::string& key, const std::vector<std::string>& values);

// §3.5, the part after the parameters were scanned: `generated` is the topology built from a
// zone/zones parameter (null when there was none). Sets or translates sc.allowedTopologies.
Status ApplyStorageClassTopology(Json& sc, const Json* generated, const std::string& csi_zone_key);

}  // namespace translator
}  // namespace flexcsi
