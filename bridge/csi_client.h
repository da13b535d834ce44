// CsiClient: the only place in the bridge that speaks gRPC. One client per CSI endpoint; the
// channel reconnects by itself when the driver restarts.
//
// Retries: ABORTED (another operation is pending on the volume) is retried with exponential
// backoff until the deadline, as the CSI spec asks of a CO. UNAVAILABLE (driver down or
// restarting) is retried too, but only for `unavailable_budget`, so that a dead driver is
// reported within seconds instead of holding kubelet's call for minutes.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <grpcpp/grpcpp.h>

#include "bridge/deadline.h"
#include "common/status.h"
#include "csi.grpc.pb.h"

namespace flexcsi {

class Metrics;

using NodeCapabilities = std::set<csi::v1::NodeServiceCapability::RPC::Type>;
using ControllerCapabilities = std::set<csi::v1::ControllerServiceCapability::RPC::Type>;

// Converts a gRPC status into ours, naming the RPC: "NodeStageVolume: NOT_FOUND: ...".
Status FromGrpc(const std::string& method, const grpc::Status& status);

// kubelet's isFinalError: true when the RPC definitely did not leave work running in the driver.
bool IsFinalCsiError(const Status& status);

// ABORTED: the driver is still working on an operation for the same volume or name (CSI's
// "operation pending"; ceph-csi's CephFS clone answers `clone from snapshot is pending` until the
// copy is done). Not a failure: the same request, repeated later, finds that work. Invoke retries
// it within the call's deadline and, when the deadline comes first, returns this answer rather
// than DEADLINE_EXCEEDED, so that callers can tell "still pending" from "did not answer".
bool IsPendingCsiError(const Status& status);

class CsiClient {
 public:
  // `endpoint` is "unix:///path/csi.sock" (or a bare absolute path). `metrics` may be null.
  CsiClient(std::string endpoint, Metrics* metrics,
            std::chrono::milliseconds unavailable_budget = std::chrono::seconds(10));

  const std::string& endpoint() const { return endpoint_; }

  // A check that every attempt of a call that changes storage (CreateVolume, DeleteVolume,
  // ControllerPublishVolume, ControllerUnpublishVolume, ControllerExpandVolume, CreateSnapshot,
  // DeleteSnapshot) passes before it is sent: when it answers an error, nothing is sent and
  // that error is returned. flexcsi-controller fences these calls with its leader lock
  // (LeaderElector::CheckHeld). REQUIRES: set before the client is shared between threads.
  void SetWriteFence(std::function<Status()> fence);
  // Cancels the fenced calls now running, if `lock_lost` still answers true: they return
  // CANCELLED. For an instance that lost its lock: a successor repeats the same calls by name,
  // and a call cancelled before the driver began it is then made once, not twice. `lock_lost`
  // is asked under the lock that registers calls, so a call that passed the fence after the
  // caller last looked (the lock just taken) is never cancelled.
  void CancelFencedCallsIf(const std::function<bool()>& lock_lost);

  StatusOr<csi::v1::GetPluginInfoResponse> GetPluginInfo(const Deadline& deadline);
  StatusOr<csi::v1::GetPluginCapabilitiesResponse> GetPluginCapabilities(const Deadline& deadline);
  // OK when the driver is ready; FAILED_PRECONDITION when it says it is not (yet).
  Status Probe(const Deadline& deadline);
  StatusOr<csi::v1::NodeGetInfoResponse> NodeGetInfo(const Deadline& deadline);
  StatusOr<NodeCapabilities> NodeGetCapabilities(const Deadline& deadline);
  // An empty set when the driver has no controller service (UNIMPLEMENTED).
  StatusOr<ControllerCapabilities> ControllerGetCapabilities(const Deadline& deadline);

  Status NodeStageVolume(const csi::v1::NodeStageVolumeRequest& req, const Deadline& deadline);
  Status NodeUnstageVolume(const csi::v1::NodeUnstageVolumeRequest& req, const Deadline& deadline);
  Status NodePublishVolume(const csi::v1::NodePublishVolumeRequest& req, const Deadline& deadline);
  Status NodeUnpublishVolume(const csi::v1::NodeUnpublishVolumeRequest& req,
                             const Deadline& deadline);
  StatusOr<csi::v1::NodeExpandVolumeResponse> NodeExpandVolume(
      const csi::v1::NodeExpandVolumeRequest& req, const Deadline& deadline);

  // Provisioning, for operators' tools (`flexcsi volume`); the bridge itself never provisions.
  StatusOr<csi::v1::CreateVolumeResponse> CreateVolume(const csi::v1::CreateVolumeRequest& req,
                                                       const Deadline& deadline);
  Status DeleteVolume(const csi::v1::DeleteVolumeRequest& req, const Deadline& deadline);

  StatusOr<csi::v1::ControllerPublishVolumeResponse> ControllerPublishVolume(
      const csi::v1::ControllerPublishVolumeRequest& req, const Deadline& deadline);
  Status ControllerUnpublishVolume(const csi::v1::ControllerUnpublishVolumeRequest& req,
                                   const Deadline& deadline);
  StatusOr<csi::v1::ControllerGetVolumeResponse> ControllerGetVolume(
      const csi::v1::ControllerGetVolumeRequest& req, const Deadline& deadline);
  StatusOr<csi::v1::ListVolumesResponse> ListVolumes(const csi::v1::ListVolumesRequest& req,
                                                     const Deadline& deadline);
  StatusOr<csi::v1::ControllerExpandVolumeResponse> ControllerExpandVolume(
      const csi::v1::ControllerExpandVolumeRequest& req, const Deadline& deadline);
  // Snapshots, for flexcsi-controller and `flexcsi snapshot`; the bridge itself never snapshots.
  StatusOr<csi::v1::CreateSnapshotResponse> CreateSnapshot(const csi::v1::CreateSnapshotRequest& req,
                                                           const Deadline& deadline);
  Status DeleteSnapshot(const csi::v1::DeleteSnapshotRequest& req, const Deadline& deadline);
  StatusOr<csi::v1::ListSnapshotsResponse> ListSnapshots(const csi::v1::ListSnapshotsRequest& req,
                                                         const Deadline& deadline);

 private:
  enum class Effect { kReadsOnly, kChangesStorage };
  // Runs one unary RPC with the retry policy above and records its latency. kChangesStorage
  // calls pass the write fence first (every attempt) and can be cancelled by CancelFencedCallsIf.
  Status Invoke(const char* method, const Deadline& deadline,
                const std::function<grpc::Status(grpc::ClientContext*)>& rpc,
                Effect effect = Effect::kReadsOnly);

  std::string endpoint_;
  Metrics* metrics_;
  std::chrono::milliseconds unavailable_budget_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<csi::v1::Identity::Stub> identity_;
  std::unique_ptr<csi::v1::Controller::Stub> controller_;
  std::unique_ptr<csi::v1::Node::Stub> node_;
  std::function<Status()> write_fence_;  // empty: no fence
  std::mutex fenced_mu_;
  std::set<grpc::ClientContext*> fenced_calls_;  // running kChangesStorage attempts; fenced_mu_
};

}  // namespace flexcsi
