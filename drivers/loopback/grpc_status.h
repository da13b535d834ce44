// The one crossing from flexcsi::Status to the wire. Codes are numerically identical.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace flexcsi {
namespace loopback {

inline grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

}  // namespace loopback
}  // namespace flexcsi
