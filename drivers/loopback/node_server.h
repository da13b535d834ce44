// CSI Node service: loop devices, filesystems and mounts for volumes on this machine.
//
// NodeStage attaches the volume's backing file to a loop device, makes a filesystem when the
// device is blank and mounts it at the staging path; NodePublish bind-mounts the staging path
// (or the device node, for block) onto each target. With --stage-without-mount, NodeStage
// mounts nothing and NodePublish mounts the device at each target. With --no-stage-unstage,
// NodePublish does the attach/format/mount itself and the last NodeUnpublish detaches.
//
// Each target is a publication of its own (read-only flag, capability, volume_mount_group):
// one volume serves read-only and writable pods, with different fsGroups, at the same time.
//
// Every handler re-derives what is true from the kernel (mount table, losetup) rather than
// trusting the state file alone, so repeats and restarts converge instead of failing.
#pragma once

#include "common/volume_locks.h"
#include "csi.grpc.pb.h"
#include "drivers/loopback/driver_options.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {

class NodeServer final : public csi::v1::Node::Service {
 public:
  // None of the pointers is owned; all outlive the server. `catalog` holds the volume records
  // and backing files: the shared store with --shared-store, else `state` itself. `state` holds
  // what only this node knows (staging, devices, node publications).
  NodeServer(const DriverOptions& options, VolumeState* catalog, VolumeState* state,
             VolumeLocks* locks)
      : options_(options), catalog_(catalog), state_(state), locks_(locks) {}

  grpc::Status NodeStageVolume(grpc::ServerContext*, const csi::v1::NodeStageVolumeRequest*,
                               csi::v1::NodeStageVolumeResponse*) override;
  grpc::Status NodeUnstageVolume(grpc::ServerContext*, const csi::v1::NodeUnstageVolumeRequest*,
                                 csi::v1::NodeUnstageVolumeResponse*) override;
  grpc::Status NodePublishVolume(grpc::ServerContext*, const csi::v1::NodePublishVolumeRequest*,
                                 csi::v1::NodePublishVolumeResponse*) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*, const csi::v1::NodeUnpublishVolumeRequest*,
                                   csi::v1::NodeUnpublishVolumeResponse*) override;
  grpc::Status NodeGetVolumeStats(grpc::ServerContext*, const csi::v1::NodeGetVolumeStatsRequest*,
                                  csi::v1::NodeGetVolumeStatsResponse*) override;
  grpc::Status NodeExpandVolume(grpc::ServerContext*, const csi::v1::NodeExpandVolumeRequest*,
                                csi::v1::NodeExpandVolumeResponse*) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const csi::v1::NodeGetCapabilitiesRequest*,
                                   csi::v1::NodeGetCapabilitiesResponse*) override;
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse*) override;

 private:
  Status DoStage(const csi::v1::NodeStageVolumeRequest& request);
  Status DoUnstage(const csi::v1::NodeUnstageVolumeRequest& request);
  Status DoPublish(const csi::v1::NodePublishVolumeRequest& request);
  Status DoUnpublish(const csi::v1::NodeUnpublishVolumeRequest& request);
  Status DoStats(const csi::v1::NodeGetVolumeStatsRequest& request,
                 csi::v1::NodeGetVolumeStatsResponse* response);
  Status DoExpand(const csi::v1::NodeExpandVolumeRequest& request,
                  csi::v1::NodeExpandVolumeResponse* response);

  // Attaches the volume's loop device and, for a filesystem volume, makes sure the device holds
  // a filesystem of the wanted type. Sets *fs_type to the filesystem found or made and
  // *formatted to whether this call made it.
  StatusOr<std::string> AttachAndFormat(const VolumeRecord& volume,
                                        const csi::v1::VolumeCapability& capability,
                                        std::string* fs_type, bool* formatted);
  // Detaches what this node attached of `volume` (backed by `file`): with a shared store only
  // the attachment it recorded, when it recorded one (loop devices are the whole kernel's, and a
  // node imitated on this machine must never detach the device another node attached since,
  // even one the kernel gave the same number); else every device of the file.
  Status DetachNodeAttachment(const VolumeRecord& volume, const std::string& file);
  // Mounts a filesystem device at `path` (creating the directory) honouring the capability's
  // mount flags, read-only-ness and volume_mount_group. `superblock_readonly` mounts the
  // filesystem itself read-only; a `readonly` mount of a writable filesystem is read-only as a
  // mount point only. An existing filesystem smaller than its device (restored or cloned into a
  // larger volume) is grown first.
  Status MountDevice(const std::string& device, const std::string& fs_type, bool formatted,
                     const std::string& path, const csi::v1::VolumeCapability& capability,
                     bool readonly, bool superblock_readonly);
  // INVALID_ARGUMENT for a volume_mount_group that is not a gid, or that is set although the
  // node does not offer VOLUME_MOUNT_GROUP.
  Status CheckMountGroupOffered(const csi::v1::VolumeCapability& capability) const;
  // The two ways NodePublish makes a target: a bind of the staging mount (or, for block, of the
  // device node), or, without a staging mount (--no-stage-unstage, --stage-without-mount), a
  // mount of the device itself. Both may update `volume`'s device; neither records the target.
  Status PublishFromStagingPath(const csi::v1::NodePublishVolumeRequest& request, bool readonly,
                                VolumeRecord* volume);
  Status PublishFromDevice(const csi::v1::NodePublishVolumeRequest& request, bool readonly,
                           VolumeRecord* volume);

  // The volume as the catalog knows it, with this node's own fields (staging path, device, node
  // publications) from the node's state; nullopt when the catalog does not know it.
  std::optional<VolumeRecord> LoadVolume(const std::string& volume_id) const;

  const DriverOptions& options_;
  VolumeState* catalog_;
  VolumeState* state_;
  VolumeLocks* locks_;
};

}  // namespace loopback
}  // namespace flexcsi
