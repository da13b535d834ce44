// `flexcsi migrate plan --leftovers`: everything that still ties the cluster to FlexVolume or an
// in-tree volume plugin, each with what to do about it. The last check before
// `flexcsi uninstall-driver` takes the FlexVolume executable off the nodes. Pure: it reads the
// plan and the listed objects only.
//
// What counts, and how it is seen:
//   PersistentVolume   an in-tree (the eight migratable plugins) or flexVolume source
//   StorageClass       an in-tree provisioner, or served by flexcsi-controller
//                      (storage_class_plan.h), not yet replaced by its twin
//   <workload>/Pod     an inline in-tree or flexVolume volume in a pod template or a bare pod
//   VolumeAttachment   of a PV above, or of an inline in-tree volume attached through CSI
//                      migration (spec.source.inlineVolumeSpec)
//   Node               status.volumesInUse or status.volumesAttached names a FlexVolume volume
//                      ("vendor/driver/...": every name outside kubernetes.io/) or one of an
//                      in-tree plugin (kubernetes.io/aws-ebs/...): it would break without the
//                      executable
//   DaemonSet          a container runs `flexcsi install-driver` (the flexcsi-node DaemonSet's
//                      step that installs the FlexVolume executable), with the nodes its pods
//                      run on.
// Nothing in the API marks a node where the executable was installed by hand or by the Debian
// package (the bridge registers the CSI driver exactly as kubelet's CSI plugin does, and that
// registration stays after the move): such nodes are not seen; docs/migration.md says so.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/cluster_objects.h"
#include "migrate/planner.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

struct Leftover {
  std::string kind;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string name;
  std::string what;  // what ties it to FlexVolume / in-tree
  std::string todo;  // what to do
};

// `plan` is BuildPlan over `objects` (which must include ListLeftoverObjects' lists).
std::vector<Leftover> FindLeftovers(const ClusterObjects& objects, const Plan& plan,
                                    const translator::Translator& translator);

nlohmann::json LeftoversToJson(const std::vector<Leftover>& leftovers);
void PrintLeftoversTable(const std::vector<Leftover>& leftovers, std::ostream& out);

}  // namespace flexcsi::migrate
