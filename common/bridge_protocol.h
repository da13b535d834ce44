// The wire contract between flexexec (the FlexVolume executable kubelet runs) and flexcsi-bridge.
//
// Transport: a Unix stream socket (default /run/flexcsi/bridge.sock, mode 0600, root only).
// One request and one reply per connection. Each message is one frame:
//   4-byte big-endian length N (1 <= N <= kMaxFrameBytes), then N bytes of UTF-8 JSON.
//
// Request:  {"version":1, "driver":"vendor/name", "call":"mount",
//            "args":["<podVolumeDir>","<options json>"], "timeoutMs":120000}
//   `args` are argv[2..] exactly as kubelet passed them; `timeoutMs` is how long flexexec will
//   wait, so the bridge must finish (including any rollback) a little before it.
//   Both ends check the arguments against flex_call_limits.h before acting on them.
//   Calls whose name starts with "bridge." are administrative (health, state) and never come
//   from kubelet.
// Reply:    {"version":1, "reply":{"status":"Success", ...FlexVolume reply keys...}}
//   `reply` is printed by flexexec as the FlexVolume reply, unchanged.
//
// This header depends only on nlohmann_json so that flexexec stays free of gRPC and Boost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

inline constexpr int kBridgeProtocolVersion = 1;
// Holds the largest request flex_call_limits.h allows (1.5 MiB of options, escaped twice over).
inline constexpr uint32_t kMaxFrameBytes = 4u << 20;
inline constexpr const char* kDefaultBridgeSocket = "/run/flexcsi/bridge.sock";

struct BridgeRequest {
  std::string driver;             // FlexVolume driver name, "vendor/name"
  std::string call;               // "mount", "unmount", ..., or "bridge.health"
  std::vector<std::string> args;  // argv[2..]
  int64_t timeout_ms = 0;

  nlohmann::json ToJson() const;
  static StatusOr<BridgeRequest> FromJson(const nlohmann::json& j);
};

// A request frame's payload, as the bridge reads it: JSON text, then FromJson. Never throws.
StatusOr<BridgeRequest> ParseBridgeRequest(const std::string& payload);

// Encodes a frame: 4-byte big-endian length then the bytes.
std::string EncodeFrame(const std::string& payload);

// Reads the length prefix of a frame; fails on zero or oversized lengths.
StatusOr<uint32_t> DecodeFrameLength(const unsigned char header[4]);

// Wraps a FlexVolume reply object into the bridge reply envelope, and back.
nlohmann::json MakeBridgeReply(const nlohmann::json& flex_reply);
// The frame the bridge answers with: MakeBridgeReply(flex_reply) as JSON text. Never throws.
std::string EncodeBridgeReplyFrame(const nlohmann::json& flex_reply);
StatusOr<nlohmann::json> FlexReplyFromBridgeReply(const nlohmann::json& envelope);

// FlexVolume reply helpers: {"status":"Success"}, {"status":"Failure","message":...}.
nlohmann::json FlexSuccess();
nlohmann::json FlexFailure(const std::string& message);
nlohmann::json FlexNotSupported();

}  // namespace flexcsi
