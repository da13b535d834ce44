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
//   <workload>/Pod     runs flexcsi-controller with pods asked for (served_provisioners.h):
//                      while it runs it may provision FlexVolume PVs, also for a class that
//                      has moved already
// Nothing in the API marks a node where the executable was installed by hand or by the Debian
// package (the bridge registers the CSI driver exactly as kubelet's CSI plugin does, and that
// registration stays after the move): such nodes are not seen; docs/migration.md says so.
//
// Which StorageClasses flexcsi-controller serves. Its classes name a CSI driver (or a
// `provisioner:` of its own) like any CSI class; what tells them apart, in this order:
//   --rules             a provisioner equal to a rule's csiDriver (storage_class_plan.h), or
//   the cluster         FlexVolume PVs provisioned-by the class's provisioner, and the
//                       configuration of the flexcsi-controllers deployed in the cluster
//                       (served_provisioners.h; used for the rules too when --rules is not
//                       given).
// When neither --rules nor any flexcsi-controller configuration in the cluster settles it, every
// class whose provisioner could be flexcsi-controller's (not kubernetes.io/, not moved) is listed
// as not checked: the check never says "nothing is left" about what it could not see. --rules
// settles them.
//
// A FlexVolume PV whose class has moved (its claim was provisioned while flexcsi-controller
// still served the class's name: both running, or between the hand-over steps) is a
// PersistentVolume like any other, and says so.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/cluster_objects.h"
#include "migrate/planner.h"
#include "migrate/served_provisioners.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

struct Leftover {
  std::string kind;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string name;
  std::string what;  // what ties it to FlexVolume / in-tree
  std::string todo;  // what to do
  bool checked = true;  // false: could not be told from a CSI object without --rules
};

// What the check knows besides the listed objects.
struct LeftoverContext {
  bool rules_given = false;   // --rules: the rules settle which classes flexcsi-controller serves
  ServedProvisioners served;  // the flexcsi-controllers the cluster runs (ReadServedProvisioners)
};

// `plan` is BuildPlan over `objects` (which must include ListLeftoverObjects' lists); the
// StorageClasses are planned here, with the context (PlanLeftoverStorageClasses), not taken from
// the plan.
std::vector<Leftover> FindLeftovers(const ClusterObjects& objects, const Plan& plan,
                                    const translator::Translator& translator,
                                    const LeftoverContext& context);

// PlanStorageClasses with the provisioner names the cluster's flexcsi-controllers serve, and,
// when --rules is not given, their rules.
std::vector<StorageClassPlan> PlanLeftoverStorageClasses(const ClusterObjects& objects,
                                                         const translator::Translator& translator,
                                                         const LeftoverContext& context);

nlohmann::json LeftoversToJson(const std::vector<Leftover>& leftovers);
void PrintLeftoversTable(const std::vector<Leftover>& leftovers, std::ostream& out);

}  // namespace flexcsi::migrate
