#include "common/bridge_protocol.h"

namespace flexcsi {

nlohmann::json BridgeRequest::ToJson() const {
  return nlohmann::json{{"version", kBridgeProtocolVersion},
                        {"driver", driver},
                        {"call", call},
                        {"args", args},
                        {"timeoutMs", timeout_ms}};
}

StatusOr<BridgeRequest> BridgeRequest::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("bridge request is not a JSON object");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer()) {
    return InvalidArgument("bridge request has no protocol version");
  }
  if (version->get<int>() != kBridgeProtocolVersion) {
    return InvalidArgument("bridge protocol version " + std::to_string(version->get<int>()) +
                           " is not supported (this bridge speaks version " +
                           std::to_string(kBridgeProtocolVersion) +
                           "); install matching flexexec and flexcsi-bridge versions");
  }
  BridgeRequest r;
  auto call = j.find("call");
  if (call == j.end() || !call->is_string() || call->get<std::string>().empty()) {
    return InvalidArgument("bridge request has no call name");
  }
  r.call = call->get<std::string>();
  auto driver = j.find("driver");
  if (driver != j.end()) {
    if (!driver->is_string()) return InvalidArgument("bridge request driver is not a string");
    r.driver = driver->get<std::string>();
  }
  auto args = j.find("args");
  if (args != j.end()) {
    if (!args->is_array()) return InvalidArgument("bridge request args is not an array");
    for (const auto& a : *args) {
      if (!a.is_string()) return InvalidArgument("bridge request args must all be strings");
      r.args.push_back(a.get<std::string>());
    }
  }
  auto timeout = j.find("timeoutMs");
  if (timeout != j.end()) {
    if (!timeout->is_number_integer() || timeout->get<int64_t>() < 0) {
      return InvalidArgument("bridge request timeoutMs must be a non-negative integer");
    }
    r.timeout_ms = timeout->get<int64_t>();
  }
  return r;
}

StatusOr<BridgeRequest> ParseBridgeRequest(const std::string& payload) {
  auto json = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return InvalidArgument("request is not valid JSON");
  return BridgeRequest::FromJson(json);
}

std::string EncodeFrame(const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(4 + payload.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out += payload;
  return out;
}

StatusOr<uint32_t> DecodeFrameLength(const unsigned char header[4]) {
  const uint32_t n = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) |
                     (uint32_t{header[2]} << 8) | uint32_t{header[3]};
  if (n == 0) return InvalidArgument("empty frame");
  if (n > kMaxFrameBytes) {
    return InvalidArgument("frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                           std::to_string(kMaxFrameBytes));
  }
  return n;
}

nlohmann::json MakeBridgeReply(const nlohmann::json& flex_reply) {
  return nlohmann::json{{"version", kBridgeProtocolVersion}, {"reply", flex_reply}};
}

std::string EncodeBridgeReplyFrame(const nlohmann::json& flex_reply) {
  // Messages may quote what a caller sent or a driver said, cut or not UTF-8 at all: written
  // with U+FFFD in place of bad bytes, as flexexec prints replies, never thrown on.
  return EncodeFrame(
      MakeBridgeReply(flex_reply).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

StatusOr<nlohmann::json> FlexReplyFromBridgeReply(const nlohmann::json& envelope) {
  if (!envelope.is_object()) return InvalidArgument("bridge reply is not a JSON object");
  auto version = envelope.find("version");
  if (version == envelope.end() || !version->is_number_integer() ||
      version->get<int>() != kBridgeProtocolVersion) {
    return InvalidArgument("bridge reply has an unsupported protocol version");
  }
  auto reply = envelope.find("reply");
  if (reply == envelope.end() || !reply->is_object()) {
    return InvalidArgument("bridge reply carries no FlexVolume reply object");
  }
  auto status = reply->find("status");
  if (status == reply->end() || !status->is_string()) {
    return InvalidArgument("bridge reply has no status");
  }
  return *reply;
}

nlohmann::json FlexSuccess() { return nlohmann::json{{"status", "Success"}}; }

nlohmann::json FlexFailure(const std::string& message) {
  return nlohmann::json{{"status", "Failure"}, {"message", message}};
}

nlohmann::json FlexNotSupported() { return nlohmann::json{{"status", "Not supported"}}; }

}  // namespace flexcsi
