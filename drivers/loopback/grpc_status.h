// The one crossing from flexcsi::Status to the wire, and the log line of each answer. Codes are
// numerically identical.
#pragma once

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <string>

#include "common/status.h"

namespace flexcsi {
namespace loopback {

inline grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

// Logs one RPC's outcome and answers it. `subject` is an id, a name or a path, never a
// request's contents: requests may carry secrets.
inline grpc::Status FinishRpc(const char* rpc, const std::string& subject, const Status& status) {
  if (status.ok()) {
    spdlog::info("{} {}: OK", rpc, subject);
  } else {
    spdlog::warn("{} {}: {}", rpc, subject, status.ToString());
  }
  return ToGrpcStatus(status);
}

}  // namespace loopback
}  // namespace flexcsi
