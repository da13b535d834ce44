// CSI Identity service: who we are, what we offer, whether we are ready.
#pragma once

#include "csi.grpc.pb.h"
#include "drivers/loopback/driver_options.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {

class IdentityServer final : public csi::v1::Identity::Service {
 public:
  // `state` may be null while it is still loading; Probe then answers not ready.
  IdentityServer(const DriverOptions& options, const VolumeState* state)
      : options_(options), state_(state) {}

  grpc::Status GetPluginInfo(grpc::ServerContext* context,
                             const csi::v1::GetPluginInfoRequest* request,
                             csi::v1::GetPluginInfoResponse* response) override;
  grpc::Status GetPluginCapabilities(grpc::ServerContext* context,
                                     const csi::v1::GetPluginCapabilitiesRequest* request,
                                     csi::v1::GetPluginCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext* context, const csi::v1::ProbeRequest* request,
                     csi::v1::ProbeResponse* response) override;

 private:
  const DriverOptions& options_;
  const VolumeState* state_;
};

}  // namespace loopback
}  // namespace flexcsi
