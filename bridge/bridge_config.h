// BridgeConfig: what one flexcsi-bridge serves, loaded from YAML or JSON
// (docs/bridge-interfaces.md §3). Validated completely at load time, so a typo stops the daemon
// at start instead of failing a pod's mount an hour later.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi {

inline constexpr const char* kDefaultBridgeConfigPath = "/etc/flexcsi/bridge.yaml";

// How one FlexVolume driver name is served.
struct DriverConfig {
  std::string flex_driver;   // "vendor/name", as kubelet knows the driver
  std::string csi_endpoint;  // "unix:///path/csi.sock"
  // Where the node bridge reaches the driver's controller service for ControllerExpandVolume
  // during expandfs: the csi_endpoint unless configured; "none" in a node-only deployment, where
  // flexcsi-controller must grow volumes cluster-side.
  std::string controller_endpoint;
  bool attach = true;        // the attach capability flexexec reports in init
  // The Kubernetes access mode the volumes are treated as having (a FlexVolume call does not
  // carry the PV's access modes): ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod.
  std::string access_mode = "ReadWriteOnce";
  std::vector<std::string> mount_flags;
  bool pod_info_on_mount = false;
  // Whether pods may use this driver in an inline flexVolume (docs/security.md). Off by default:
  // an inline volume's options are written by whoever may create a pod, so it gets its own
  // namespace's Secrets, its own staging and never a PV's volume handle.
  bool inline_volumes = false;
  std::map<std::string, std::string> node_id_map;  // Kubernetes node name -> CSI node id
  // The provisioner name flexcsi-controller answers to (StorageClass `provisioner:`); the CSI
  // driver name unless the configuration says `provisioner:`.
  std::string provisioner;
  // The translation.md §12 mapping rule (flexDriver filled in), evaluated by the translator
  // library so that the bridge and `flexcsi translate` compute the same CSI volume.
  // Parsed and validated at load time.
  translator::FlexVolumeRules mapping;

  // The CSI node id for a Kubernetes node name: the map entry, else the name itself.
  std::string NodeIdFor(const std::string& node_name) const;
  // The CSI driver name the rule maps to.
  std::string CsiDriver() const { return mapping.rules().front().csi_driver; }
  // The filesystem path of csi_endpoint ("unix:///run/x.sock" -> "/run/x.sock").
  std::string CsiSocketPath() const { return csi_endpoint.substr(std::string("unix://").size()); }
};

struct BridgeConfig {
  std::string kubelet_root = "/var/lib/kubelet";  // "": kubeletRoot none (controller-side bridge)
  std::string socket = "/run/flexcsi/bridge.sock";
  std::string state_database = "/var/lib/flexcsi/state.db";
  std::string metrics_address;          // empty: no metrics listener
  int reconcile_interval_seconds = 60;  // background retry of unfinished rollbacks
  int unavailable_retry_seconds = 10;   // how long a down CSI driver is waited for per call
  // Node registration of the drivers (node_registrar.h), as kubelet's CSI plugin does it: the
  // Node's name (else $NODE_NAME) and a kubeconfig (else in-cluster configuration in a pod).
  std::string node_name;
  std::string kubeconfig;
  bool register_drivers = true;
  // Every call taken as the admin's, as before 0.2.0: no cluster reads tell a PV's call from a
  // pod author's inline volume. Only for nodes where nobody but the admin creates pods, or a
  // bridge without cluster access (docs/security.md).
  bool trust_pod_authors = false;
  std::vector<DriverConfig> drivers;

  // nullptr when `flex_driver` is not configured.
  const DriverConfig* FindDriver(const std::string& flex_driver) const;

  static StatusOr<BridgeConfig> FromJson(const nlohmann::json& j);
  static StatusOr<BridgeConfig> LoadFile(const std::string& path);
};

}  // namespace flexcsi
