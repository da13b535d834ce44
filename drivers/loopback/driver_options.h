// What the command line decides about one csi-loopback instance; read-only once serving.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flexcsi {
namespace loopback {

constexpr char kDefaultDriverName[] = "loopback.csi.flexcsi.io";
// The topology segment every volume and the node carry: volumes live on one machine.
constexpr char kTopologyNodeKey[] = "topology.loopback.csi.flexcsi.io/node";

// Keys of ControllerPublishVolumeResponse.publish_context, read back by NodeStage/NodePublish.
constexpr char kPublishContextBackingFile[] = "backingFile";
constexpr char kPublishContextDeviceHint[] = "deviceHint";
constexpr char kPublishContextReadonly[] = "readonly";

struct DriverOptions {
  std::string driver_name = kDefaultDriverName;
  std::string vendor_version;
  std::string node_id;
  // Further node ids the controller accepts in ControllerPublishVolume besides node_id; lets one
  // instance stand in for a small cluster in tests. Volumes are still only usable on node_id.
  std::vector<std::string> extra_node_ids;
  std::string state_dir;
  bool stage_unstage = true;  // false: --no-stage-unstage
  // --stage-without-mount (REQUIRES stage_unstage): NodeStage attaches, formats and records but
  // mounts nothing at the staging path; NodePublish mounts the device itself at each target.
  // The shape of csi-driver-host-path and of many network-filesystem drivers.
  bool stage_without_mount = false;
  // false: --no-volume-mount-group. VOLUME_MOUNT_GROUP is not advertised and a request that
  // carries volume_mount_group anyway is INVALID_ARGUMENT (the CO must not send it).
  bool volume_mount_group = true;
  bool controller_attach = true;  // false: --no-attach (no PUBLISH_UNPUBLISH_VOLUME)
  bool expand = true;             // false: --no-expand
  int64_t max_volumes_per_node = 64;
  // --shared-store DIR: imitates network block storage. Backing files and the volume records
  // every node must see (existence, size, controller publications) live in DIR, which all
  // nodes' csi-loopback processes share; node-side records stay in state_dir. Multi-node access
  // modes are offered, no node-local topology is reported, any node id may be published to.
  std::string shared_store;
  bool shared() const { return !shared_store.empty(); }
};

}  // namespace loopback
}  // namespace flexcsi
