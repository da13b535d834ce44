// FlexVolume PVs and inline volumes as Kubernetes JSON <-> CSI (translation.md §12.1-12.3).
// The mapping itself lives in flexvolume_rules.h; this file only reads and writes the objects.
#pragma once

#include <string>

#include "common/status.h"
#include "translator/derived_secrets.h"
#include "translator/flexvolume_rules.h"
#include "translator/json_fields.h"
#include "translator/source_pv.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

// REQUIRES: pv.spec.flexVolume is set. Records its replacement by spec.csi in `changes`.
Status TranslateFlexVolumePVToCsi(const FlexVolumeRules& rules, const SourcePV& pv,
                                  DerivedSecrets derived, SpecChanges* changes);
// REQUIRES: pv.spec.flexVolume is set. The CSI volume the PV's rule makes, read_secret's namespace
// the claim's where the rule names none: what `flexcsi migrate` derives the Secret it writes from
// (DeriveSecrets).
StatusOr<CsiVolume> FlexVolumePVToCsiVolume(const FlexVolumeRules& rules, const SourcePV& pv);
// REQUIRES: volume.flexVolume is set. Returns a new PV.
StatusOr<Json> TranslateFlexVolumeInlineToCsi(const FlexVolumeRules& rules, const Json& volume,
                                              const std::string& pod_namespace);
// REQUIRES: pv.spec.csi.driver is `rule.csi_driver`. Replaces spec.csi by spec.flexVolume.
Status TranslateCsiPVToFlexVolume(const FlexVolumeRule& rule, Json& pv);

}  // namespace translator
}  // namespace flexcsi
