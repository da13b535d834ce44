#include "drivers/loopback/identity_server.h"

#include <unistd.h>

namespace flexcsi {
namespace loopback {

grpc::Status IdentityServer::GetPluginInfo(grpc::ServerContext*,
                                           const csi::v1::GetPluginInfoRequest*,
                                           csi::v1::GetPluginInfoResponse* response) {
  response->set_name(options_.driver_name);
  response->set_vendor_version(options_.vendor_version);
  return grpc::Status::OK;
}

grpc::Status IdentityServer::GetPluginCapabilities(
    grpc::ServerContext*, const csi::v1::GetPluginCapabilitiesRequest*,
    csi::v1::GetPluginCapabilitiesResponse* response) {
  using csi::v1::PluginCapability;
  response->add_capabilities()->mutable_service()->set_type(
      PluginCapability::Service::CONTROLLER_SERVICE);
  if (!options_.shared()) {  // a shared store has no topology: every node reaches it
    response->add_capabilities()->mutable_service()->set_type(
        PluginCapability::Service::VOLUME_ACCESSIBILITY_CONSTRAINTS);
  }
  if (options_.expand) {
    response->add_capabilities()->mutable_volume_expansion()->set_type(
        PluginCapability::VolumeExpansion::ONLINE);
  }
  return grpc::Status::OK;
}

grpc::Status IdentityServer::Probe(grpc::ServerContext*, const csi::v1::ProbeRequest*,
                                   csi::v1::ProbeResponse* response) {
  // Ready means every RPC could be served now: state loaded and its directory writable.
  bool ready = state_ != nullptr && ::access(state_->state_dir().c_str(), W_OK) == 0;
  response->mutable_ready()->set_value(ready);
  return grpc::Status::OK;
}

}  // namespace loopback
}  // namespace flexcsi
