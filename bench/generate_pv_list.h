// A realistic, deterministic PersistentVolumeList for the translator benchmark and tests: what
// `kubectl get pv -o json` (or `-o yaml`) prints for a cluster that mixes every in-tree plugin
// and FlexVolume. The same (seed, count) always gives the same bytes.
//
// The mix, by PV index: GCE PD zonal and regional (beta and GA zone labels, nodeAffinity),
// AWS EBS, Azure Disk, Azure File (secrets, with and without secretNamespace), Cinder, vSphere
// (storage policies), Portworx (auth-secret annotations), RBD, and FlexVolume `acme/lvm`, which
// needs the rules of kFlexVolumeRulesJson. Every generated PV translates.
#pragma once

#include <cstdint>
#include <ostream>

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace bench {

// FlexVolume rules (JSON text) for the `acme/lvm` volumes of the list.
extern const char kFlexVolumeRulesJson[];

// PV number `index` of the list generated from `seed`.
nlohmann::json GeneratePV(uint64_t seed, uint64_t index);

enum class ListFormat { kJson, kYaml };

// Writes a PersistentVolumeList of `count` PVs as kubectl prints it: JSON indented by four
// spaces with keys sorted (apiVersion, items, kind, metadata: items is not the last key), or
// YAML. Streams item by item, so memory does not grow with `count`.
void WritePVList(std::ostream& out, uint64_t seed, uint64_t count, ListFormat format);

}  // namespace bench
}  // namespace flexcsi
