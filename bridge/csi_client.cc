#include "bridge/csi_client.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "bridge/metrics.h"

namespace flexcsi {
namespace {

std::string GrpcTarget(const std::string& endpoint) {
  if (endpoint.rfind("unix://", 0) == 0) return endpoint;
  if (!endpoint.empty() && endpoint[0] == '/') return "unix://" + endpoint;
  return endpoint;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  // A restarted driver must be found again within a second, not after gRPC's default
  // two-minute reconnect backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A driver's error travels in gRPC metadata (grpc-message), and drivers echo the volume ID
  // and paths in it. gRPC C++ refuses metadata over 8 KiB by default, which turned a long ID
  // into "RESOURCE_EXHAUSTED: received initial metadata size exceeds limit" instead of the
  // driver's answer; kubelet's Go gRPC accepts 16 MiB. 1 MiB keeps any real message.
  args.SetInt(GRPC_ARG_MAX_METADATA_SIZE, 1 << 20);
  // kubelet uses authority "localhost" for Unix sockets; some drivers check it.
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  return grpc::CreateCustomChannel(GrpcTarget(endpoint), grpc::InsecureChannelCredentials(), args);
}

}  // namespace

Status FromGrpc(const std::string& method, const grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  std::string message = status.error_message();
  if (message.empty()) message = "(no message)";
  return Status(static_cast<Code>(status.error_code()), method + ": " + message);
}

bool IsFinalCsiError(const Status& status) {
  switch (status.code()) {
    case Code::kCancelled:
    case Code::kDeadlineExceeded:
    case Code::kResourceExhausted:
    case Code::kAborted:
    case Code::kUnavailable:
      return false;
    default:
      return true;
  }
}

bool IsPendingCsiError(const Status& status) { return status.code() == Code::kAborted; }

CsiClient::CsiClient(std::string endpoint, Metrics* metrics,
                     std::chrono::milliseconds unavailable_budget)
    : endpoint_(std::move(endpoint)),
      metrics_(metrics),
      unavailable_budget_(unavailable_budget),
      channel_(MakeChannel(endpoint_)),
      identity_(csi::v1::Identity::NewStub(channel_)),
      controller_(csi::v1::Controller::NewStub(channel_)),
      node_(csi::v1::Node::NewStub(channel_)) {}

void CsiClient::SetWriteFence(std::function<Status()> fence) { write_fence_ = std::move(fence); }

void CsiClient::CancelFencedCallsIf(const std::function<bool()>& lock_lost) {
  std::lock_guard<std::mutex> lock(fenced_mu_);
  if (!lock_lost()) return;
  for (grpc::ClientContext* call : fenced_calls_) call->TryCancel();
}

Status CsiClient::Invoke(const char* method, const Deadline& deadline,
                         const std::function<grpc::Status(grpc::ClientContext*)>& rpc,
                         Effect effect) {
  const bool fenced = effect == Effect::kChangesStorage && write_fence_;
  const auto started = Deadline::Clock::now();
  const auto unavailable_until = started + unavailable_budget_;
  std::chrono::milliseconds backoff(100);
  std::optional<Status> pending;  // the driver's last ABORTED answer, if any
  for (;;) {
    if (deadline.expired()) {
      if (pending) return *pending;
      return DeadlineExceeded(std::string(method) + ": no time left before the call's deadline");
    }
    grpc::ClientContext context;
    context.set_deadline(deadline.ForGrpc());
    if (fenced) {
      // Checked and registered under one lock, so that CancelFencedCallsIf, which a closed
      // fence's owner calls after closing it, misses no attempt that passed the check.
      std::lock_guard<std::mutex> lock(fenced_mu_);
      if (Status closed = write_fence_(); !closed.ok()) return closed.WithContext(method);
      fenced_calls_.insert(&context);
    }
    const auto attempt_started = Deadline::Clock::now();
    grpc::Status result = rpc(&context);
    if (fenced) {
      std::lock_guard<std::mutex> lock(fenced_mu_);
      fenced_calls_.erase(&context);
    }
    const double seconds =
        std::chrono::duration<double>(Deadline::Clock::now() - attempt_started).count();
    Status status = FromGrpc(method, result);
    if (metrics_ != nullptr) metrics_->RecordCsiRpc(method, status.code(), seconds);
    // An attempt cut short by the deadline after the driver said "pending" is still pending.
    if (pending && status.code() == Code::kDeadlineExceeded) return *pending;
    if (IsPendingCsiError(status)) pending = status;

    const bool retry = IsPendingCsiError(status) || (status.code() == Code::kUnavailable &&
                                                     Deadline::Clock::now() < unavailable_until);
    if (!retry) {
      if (status.code() == Code::kUnavailable) {
        return Unavailable(status.message() + " (CSI driver at " + endpoint_ +
                           " unreachable; is it running?)");
      }
      return status;
    }
    auto pause = std::min(backoff, deadline.remaining());
    if (pause.count() <= 0) return status;
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

StatusOr<csi::v1::GetPluginInfoResponse> CsiClient::GetPluginInfo(const Deadline& deadline) {
  csi::v1::GetPluginInfoResponse resp;
  Status s = Invoke("GetPluginInfo", deadline, [&](grpc::ClientContext* c) {
    return identity_->GetPluginInfo(c, csi::v1::GetPluginInfoRequest(), &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

StatusOr<csi::v1::GetPluginCapabilitiesResponse> CsiClient::GetPluginCapabilities(
    const Deadline& deadline) {
  csi::v1::GetPluginCapabilitiesResponse resp;
  Status s = Invoke("GetPluginCapabilities", deadline, [&](grpc::ClientContext* c) {
    return identity_->GetPluginCapabilities(c, csi::v1::GetPluginCapabilitiesRequest(), &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

Status CsiClient::Probe(const Deadline& deadline) {
  csi::v1::ProbeResponse resp;
  FLEXCSI_RETURN_IF_ERROR(Invoke("Probe", deadline, [&](grpc::ClientContext* c) {
    return identity_->Probe(c, csi::v1::ProbeRequest(), &resp);
  }));
  // An unset `ready` means ready (CSI spec).
  if (resp.has_ready() && !resp.ready().value()) {
    return FailedPrecondition("Probe: CSI driver at " + endpoint_ + " reports not ready");
  }
  return Status::Ok();
}

StatusOr<csi::v1::NodeGetInfoResponse> CsiClient::NodeGetInfo(const Deadline& deadline) {
  csi::v1::NodeGetInfoResponse resp;
  Status s = Invoke("NodeGetInfo", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeGetInfo(c, csi::v1::NodeGetInfoRequest(), &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

StatusOr<NodeCapabilities> CsiClient::NodeGetCapabilities(const Deadline& deadline) {
  csi::v1::NodeGetCapabilitiesResponse resp;
  Status s = Invoke("NodeGetCapabilities", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeGetCapabilities(c, csi::v1::NodeGetCapabilitiesRequest(), &resp);
  });
  if (!s.ok()) return s;
  NodeCapabilities caps;
  for (const auto& cap : resp.capabilities()) {
    if (cap.has_rpc()) caps.insert(cap.rpc().type());
  }
  return caps;
}

StatusOr<ControllerCapabilities> CsiClient::ControllerGetCapabilities(const Deadline& deadline) {
  csi::v1::ControllerGetCapabilitiesResponse resp;
  Status s = Invoke("ControllerGetCapabilities", deadline, [&](grpc::ClientContext* c) {
    return controller_->ControllerGetCapabilities(
        c, csi::v1::ControllerGetCapabilitiesRequest(), &resp);
  });
  if (s.code() == Code::kUnimplemented) return ControllerCapabilities();
  if (!s.ok()) return s;
  ControllerCapabilities caps;
  for (const auto& cap : resp.capabilities()) {
    if (cap.has_rpc()) caps.insert(cap.rpc().type());
  }
  return caps;
}

Status CsiClient::NodeStageVolume(const csi::v1::NodeStageVolumeRequest& req,
                                  const Deadline& deadline) {
  csi::v1::NodeStageVolumeResponse resp;
  return Invoke("NodeStageVolume", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeStageVolume(c, req, &resp);
  });
}

Status CsiClient::NodeUnstageVolume(const csi::v1::NodeUnstageVolumeRequest& req,
                                    const Deadline& deadline) {
  csi::v1::NodeUnstageVolumeResponse resp;
  return Invoke("NodeUnstageVolume", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeUnstageVolume(c, req, &resp);
  });
}

Status CsiClient::NodePublishVolume(const csi::v1::NodePublishVolumeRequest& req,
                                    const Deadline& deadline) {
  csi::v1::NodePublishVolumeResponse resp;
  return Invoke("NodePublishVolume", deadline, [&](grpc::ClientContext* c) {
    return node_->NodePublishVolume(c, req, &resp);
  });
}

Status CsiClient::NodeUnpublishVolume(const csi::v1::NodeUnpublishVolumeRequest& req,
                                      const Deadline& deadline) {
  csi::v1::NodeUnpublishVolumeResponse resp;
  return Invoke("NodeUnpublishVolume", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeUnpublishVolume(c, req, &resp);
  });
}

StatusOr<csi::v1::NodeExpandVolumeResponse> CsiClient::NodeExpandVolume(
    const csi::v1::NodeExpandVolumeRequest& req, const Deadline& deadline) {
  csi::v1::NodeExpandVolumeResponse resp;
  Status s = Invoke("NodeExpandVolume", deadline, [&](grpc::ClientContext* c) {
    return node_->NodeExpandVolume(c, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

StatusOr<csi::v1::CreateVolumeResponse> CsiClient::CreateVolume(
    const csi::v1::CreateVolumeRequest& req, const Deadline& deadline) {
  csi::v1::CreateVolumeResponse resp;
  Status s = Invoke(
      "CreateVolume", deadline,
      [&](grpc::ClientContext* c) { return controller_->CreateVolume(c, req, &resp); },
      Effect::kChangesStorage);
  if (!s.ok()) return s;
  return resp;
}

Status CsiClient::DeleteVolume(const csi::v1::DeleteVolumeRequest& req, const Deadline& deadline) {
  csi::v1::DeleteVolumeResponse resp;
  return Invoke(
      "DeleteVolume", deadline,
      [&](grpc::ClientContext* c) { return controller_->DeleteVolume(c, req, &resp); },
      Effect::kChangesStorage);
}

StatusOr<csi::v1::ControllerPublishVolumeResponse> CsiClient::ControllerPublishVolume(
    const csi::v1::ControllerPublishVolumeRequest& req, const Deadline& deadline) {
  csi::v1::ControllerPublishVolumeResponse resp;
  Status s = Invoke(
      "ControllerPublishVolume", deadline,
      [&](grpc::ClientContext* c) { return controller_->ControllerPublishVolume(c, req, &resp); },
      Effect::kChangesStorage);
  if (!s.ok()) return s;
  return resp;
}

Status CsiClient::ControllerUnpublishVolume(const csi::v1::ControllerUnpublishVolumeRequest& req,
                                            const Deadline& deadline) {
  csi::v1::ControllerUnpublishVolumeResponse resp;
  return Invoke(
      "ControllerUnpublishVolume", deadline,
      [&](grpc::ClientContext* c) { return controller_->ControllerUnpublishVolume(c, req, &resp); },
      Effect::kChangesStorage);
}

StatusOr<csi::v1::ControllerGetVolumeResponse> CsiClient::ControllerGetVolume(
    const csi::v1::ControllerGetVolumeRequest& req, const Deadline& deadline) {
  csi::v1::ControllerGetVolumeResponse resp;
  Status s = Invoke("ControllerGetVolume", deadline, [&](grpc::ClientContext* c) {
    return controller_->ControllerGetVolume(c, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

StatusOr<csi::v1::ListVolumesResponse> CsiClient::ListVolumes(
    const csi::v1::ListVolumesRequest& req, const Deadline& deadline) {
  csi::v1::ListVolumesResponse resp;
  Status s = Invoke("ListVolumes", deadline, [&](grpc::ClientContext* c) {
    return controller_->ListVolumes(c, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

StatusOr<csi::v1::ControllerExpandVolumeResponse> CsiClient::ControllerExpandVolume(
    const csi::v1::ControllerExpandVolumeRequest& req, const Deadline& deadline) {
  csi::v1::ControllerExpandVolumeResponse resp;
  Status s = Invoke(
      "ControllerExpandVolume", deadline,
      [&](grpc::ClientContext* c) { return controller_->ControllerExpandVolume(c, req, &resp); },
      Effect::kChangesStorage);
  if (!s.ok()) return s;
  return resp;
}

StatusOr<csi::v1::CreateSnapshotResponse> CsiClient::CreateSnapshot(
    const csi::v1::CreateSnapshotRequest& req, const Deadline& deadline) {
  csi::v1::CreateSnapshotResponse resp;
  Status s = Invoke(
      "CreateSnapshot", deadline,
      [&](grpc::ClientContext* c) { return controller_->CreateSnapshot(c, req, &resp); },
      Effect::kChangesStorage);
  if (!s.ok()) return s;
  return resp;
}

Status CsiClient::DeleteSnapshot(const csi::v1::DeleteSnapshotRequest& req,
                                 const Deadline& deadline) {
  csi::v1::DeleteSnapshotResponse resp;
  return Invoke(
      "DeleteSnapshot", deadline,
      [&](grpc::ClientContext* c) { return controller_->DeleteSnapshot(c, req, &resp); },
      Effect::kChangesStorage);
}

StatusOr<csi::v1::ListSnapshotsResponse> CsiClient::ListSnapshots(
    const csi::v1::ListSnapshotsRequest& req, const Deadline& deadline) {
  csi::v1::ListSnapshotsResponse resp;
  Status s = Invoke("ListSnapshots", deadline, [&](grpc::ClientContext* c) {
    return controller_->ListSnapshots(c, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

}  // namespace flexcsi
