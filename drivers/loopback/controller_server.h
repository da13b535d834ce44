// CSI Controller service: volumes and snapshots as sparse files under the state dir, and the
// record of which node each volume is published to. Never touches loop devices or mounts except
// to refresh an attached block device after expansion.
#pragma once

#include "csi.grpc.pb.h"
#include "drivers/loopback/driver_options.h"
#include "common/volume_locks.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {

class ControllerServer final : public csi::v1::Controller::Service {
 public:
  // None of the pointers is owned; all outlive the server.
  ControllerServer(const DriverOptions& options, VolumeState* state, VolumeLocks* locks)
      : options_(options), state_(state), locks_(locks) {}

  grpc::Status CreateVolume(grpc::ServerContext*, const csi::v1::CreateVolumeRequest*,
                            csi::v1::CreateVolumeResponse*) override;
  grpc::Status DeleteVolume(grpc::ServerContext*, const csi::v1::DeleteVolumeRequest*,
                            csi::v1::DeleteVolumeResponse*) override;
  grpc::Status ControllerPublishVolume(grpc::ServerContext*,
                                       const csi::v1::ControllerPublishVolumeRequest*,
                                       csi::v1::ControllerPublishVolumeResponse*) override;
  grpc::Status ControllerUnpublishVolume(grpc::ServerContext*,
                                         const csi::v1::ControllerUnpublishVolumeRequest*,
                                         csi::v1::ControllerUnpublishVolumeResponse*) override;
  grpc::Status ValidateVolumeCapabilities(grpc::ServerContext*,
                                          const csi::v1::ValidateVolumeCapabilitiesRequest*,
                                          csi::v1::ValidateVolumeCapabilitiesResponse*) override;
  grpc::Status ListVolumes(grpc::ServerContext*, const csi::v1::ListVolumesRequest*,
                           csi::v1::ListVolumesResponse*) override;
  grpc::Status GetCapacity(grpc::ServerContext*, const csi::v1::GetCapacityRequest*,
                           csi::v1::GetCapacityResponse*) override;
  grpc::Status ControllerGetCapabilities(grpc::ServerContext*,
                                         const csi::v1::ControllerGetCapabilitiesRequest*,
                                         csi::v1::ControllerGetCapabilitiesResponse*) override;
  grpc::Status CreateSnapshot(grpc::ServerContext*, const csi::v1::CreateSnapshotRequest*,
                              csi::v1::CreateSnapshotResponse*) override;
  grpc::Status DeleteSnapshot(grpc::ServerContext*, const csi::v1::DeleteSnapshotRequest*,
                              csi::v1::DeleteSnapshotResponse*) override;
  grpc::Status ListSnapshots(grpc::ServerContext*, const csi::v1::ListSnapshotsRequest*,
                             csi::v1::ListSnapshotsResponse*) override;
  grpc::Status ControllerExpandVolume(grpc::ServerContext*,
                                      const csi::v1::ControllerExpandVolumeRequest*,
                                      csi::v1::ControllerExpandVolumeResponse*) override;
  grpc::Status ControllerGetVolume(grpc::ServerContext*, const csi::v1::ControllerGetVolumeRequest*,
                                   csi::v1::ControllerGetVolumeResponse*) override;
  // ControllerModifyVolume and GetSnapshot keep the generated UNIMPLEMENTED answers.

 private:
  Status DoCreateVolume(const csi::v1::CreateVolumeRequest& request, csi::v1::Volume* volume);
  Status DoDeleteVolume(const csi::v1::DeleteVolumeRequest& request);
  Status DoControllerPublish(const csi::v1::ControllerPublishVolumeRequest& request,
                             csi::v1::ControllerPublishVolumeResponse* response);
  Status DoControllerUnpublish(const csi::v1::ControllerUnpublishVolumeRequest& request);
  Status DoValidate(const csi::v1::ValidateVolumeCapabilitiesRequest& request,
                    csi::v1::ValidateVolumeCapabilitiesResponse* response);
  Status DoListVolumes(const csi::v1::ListVolumesRequest& request,
                       csi::v1::ListVolumesResponse* response);
  Status DoGetCapacity(const csi::v1::GetCapacityRequest& request,
                       csi::v1::GetCapacityResponse* response);
  Status DoCreateSnapshot(const csi::v1::CreateSnapshotRequest& request,
                          csi::v1::Snapshot* snapshot);
  Status DoDeleteSnapshot(const csi::v1::DeleteSnapshotRequest& request);
  Status DoListSnapshots(const csi::v1::ListSnapshotsRequest& request,
                         csi::v1::ListSnapshotsResponse* response);
  Status DoExpand(const csi::v1::ControllerExpandVolumeRequest& request,
                  csi::v1::ControllerExpandVolumeResponse* response);
  Status DoGetVolume(const csi::v1::ControllerGetVolumeRequest& request,
                     csi::v1::ControllerGetVolumeResponse* response);

  bool IsKnownNode(const std::string& node_id) const;
  void FillVolume(const VolumeRecord& record, csi::v1::Volume* volume) const;
  // Abnormal when the backing file is gone or has the wrong size.
  csi::v1::VolumeCondition ConditionOf(const VolumeRecord& record) const;

  const DriverOptions& options_;
  VolumeState* state_;
  VolumeLocks* locks_;
};

}  // namespace loopback
}  // namespace flexcsi
