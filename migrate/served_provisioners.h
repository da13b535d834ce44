// Which provisioner names flexcsi-controller serves, as the cluster itself shows it: the
// configuration of every flexcsi-controller deployed in it. A flexcsi-controller StorageClass
// names a CSI driver (or a `provisioner:` of its own) like any CSI class, so without the
// FlexVolume rules (--rules) nothing in the class tells it apart; this is the evidence that does
// when the rules are not given (leftovers.h).
//
// deploy/kubernetes/provisioner runs `flexcsi-controller --bridge-config=/etc/flexcsi/bridge.yaml`
// with /etc/flexcsi mounted from a ConfigMap (flexcsi-provisioner-config-<hash>, key bridge.yaml):
// its `drivers:` entries name each flexDriver, its mapping rule and the `provisioner:` name
// StorageClasses use (default: the rule's csiDriver), exactly as flexcsi-controller reads them
// (bridge/bridge_config.h). Found: Deployments, StatefulSets, DaemonSets (the provisioner-per-node
// component) and bare pods with a container whose command or args run flexcsi-controller, and
// the ConfigMap volume (whole, with items, or by subPath) that holds the file it names (default
// /etc/flexcsi/bridge.yaml, as flexcsi-controller's own). Not found: a flexcsi-controller run
// outside the cluster (a systemd service, a process beside the control plane), a configuration
// baked into the image or on a hostPath, and, with -n, one in another namespace.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/kube_client.h"
#include "migrate/cluster_objects.h"

namespace flexcsi::migrate {

// A workload whose pods run flexcsi-controller, and where its configuration lives.
struct ControllerWorkload {
  std::string kind;  // Deployment, StatefulSet, DaemonSet or Pod
  std::string namespace_;
  std::string name;
  // Pods it asks for: spec.replicas (default 1); a DaemonSet's status.desiredNumberScheduled
  // (1 before its status is written); a bare pod 1 unless Succeeded or Failed.
  int64_t replicas = 0;
  std::string config_path;  // --bridge-config
  std::string config_map;   // the ConfigMap holding it, in namespace_; "" when none does
  std::string config_key;
  std::string config_error;               // why its configuration was not read; "" when read
  std::vector<std::string> provisioners;  // the names it serves, once read
};

struct ServedProvisioners {
  std::vector<ControllerWorkload> controllers;
  // From every configuration read: provisioner name -> flexDriver.
  std::map<std::string, std::string> flex_driver_of;
  // Each driver's rule with its flexDriver filled in (flexVolumeRules entries), one per flexDriver.
  std::vector<nlohmann::json> rules;
  // Some configuration was read: the provisioner names above are what the cluster's
  // flexcsi-controllers serve.
  bool read_any = false;
};

// Pure: every workload of `objects` that runs flexcsi-controller, with its ConfigMap resolved
// (config_error says why not).
std::vector<ControllerWorkload> FindControllerWorkloads(const ClusterObjects& objects);

// Pure: adds the drivers of one flexcsi-controller configuration (YAML or JSON text) to `out`
// and their provisioner names to `controller`. Only `drivers[]` is read (flexDriver,
// provisioner, rule), each rule validated as the translator validates rules.
Status AddServedDrivers(const std::string& config_text, ControllerWorkload* controller,
                        ServedProvisioners* out);

// FindControllerWorkloads, then each one's ConfigMap read (GET; once per ConfigMap). A ConfigMap
// that cannot be read (absent, forbidden, no such key, invalid) is that workload's config_error,
// never an error of the whole: the caller decides what an unread configuration means.
ServedProvisioners ReadServedProvisioners(kube::KubeClient& client, const ClusterObjects& objects);

}  // namespace flexcsi::migrate
