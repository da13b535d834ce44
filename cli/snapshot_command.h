// `flexcsi snapshot create|list|delete`: CSI snapshots of FlexVolume PVs on clusters without
// the snapshot.storage.k8s.io CRDs (with them, flexcsi-controller serves VolumeSnapshots).
// A PV is given as its manifest (`kubectl get pv NAME -o json | flexcsi snapshot create --pv -`)
// and mapped to its CSI volume and driver endpoint by the bridge configuration, exactly as the
// bridge maps it; or the volume is named directly with --endpoint and --volume-id.
// Restore with `flexcsi volume create --from-snapshot ID`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace flexcsi {

// create: prints the snapshot id. list: a table. delete: nothing. Exit 0, 1 on failure with the
// reason on stderr, 2 on a usage error.
int RunSnapshotCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                       std::ostream& err);

}  // namespace flexcsi
