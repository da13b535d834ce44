// What a StorageClass becomes under CSI: its twin, the class `migrate apply --storage-class`
// creates under the same name. Pure computation over ClusterObjects (no I/O), shared by `plan`
// (every class), `apply` (the fresh class, re-read before its first write) and the leftovers
// check.
//
// Two kinds of classes tie new claims to the old kind of volume:
//   in-tree     provisioner is an in-tree plugin (kubernetes.io/aws-ebs, ...): the twin is the
//               translator's StorageClass translation (parameters and allowedTopologies, as
//               csi-translation-lib does it) with the plugin's CSI driver as provisioner. Other
//               kubernetes.io/ provisioners have no CSI translation and are refused.
//   flexvolume  served by flexcsi-controller, which provisions FlexVolume PVs for it. The
//               class names a CSI driver like any CSI class, so these classes are known from
//               the FlexVolume rules (--rules): a provisioner equal to a rule's csiDriver (the
//               controller's default provisioner name), or named by the
//               pv.kubernetes.io/provisioned-by annotation of FlexVolume PVs of a rule's
//               flexDriver (a `provisioner:` other than the driver name), or, for `plan
//               --leftovers` only, by a flexcsi-controller configuration the cluster holds
//               (served_provisioners.h). The twin names the rule's CSI driver and keeps the
//               parameters: flexcsi-controller reads them exactly as external-provisioner does
//               (docs/controller.md), with one difference made explicit: the rule's
//               defaultFsType becomes csi.storage.k8s.io/fstype when the class names no fstype
//               (external-provisioner would leave it to the driver). Topology keys are the CSI
//               driver's already and stay.
// Every twin carries the annotation flexcsi.io/migrated-from-provisioner (the original
// provisioner): a flexvolume class keeps its provisioner name, so only this marks it as moved.
// Everything else (labels, annotations such as the default-class ones, reclaimPolicy,
// volumeBindingMode, mountOptions, allowVolumeExpansion) is copied unchanged.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/cluster_objects.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

inline constexpr const char* kMigratedFromAnnotation = "flexcsi.io/migrated-from-provisioner";

struct StorageClassPlan {
  std::string name;
  std::string kind;         // "in-tree" or "flexvolume"
  std::string provisioner;  // the class's now
  std::string csi_driver;   // the twin's provisioner; "" when refused without knowing it
  bool is_default = false;  // either default-class annotation is "true"
  nlohmann::json original;  // as read
  nlohmann::json twin;      // ready to create; null when refused
  std::string refusal;      // why it cannot move; "" when it can
};

// FlexVolume provisioner names seen in the cluster: provisioned-by of FlexVolume PVs -> their
// flexDriver ("vendor/name").
std::map<std::string, std::string> FlexVolumeProvisioners(const std::vector<nlohmann::json>& pvs);

// The plan of one class, or nullopt when it ties nothing to FlexVolume or an in-tree plugin
// (a CSI class, a class migrate moved already, kubernetes.io/no-provisioner).
std::optional<StorageClassPlan> PlanStorageClass(
    const nlohmann::json& sc, const translator::Translator& translator,
    const std::map<std::string, std::string>& flex_provisioners);

// Every class that needs to move, sorted by name. `served`: more provisioner names known to be
// flexcsi-controller's -> their flexDriver (the cluster's flexcsi-controller configurations,
// served_provisioners.h), besides those the FlexVolume PVs show.
std::vector<StorageClassPlan> PlanStorageClasses(
    const ClusterObjects& objects, const translator::Translator& translator,
    const std::map<std::string, std::string>& served = {});

}  // namespace flexcsi::migrate
