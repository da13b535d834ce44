// The client side of the flexexec <-> flexcsi-bridge wire protocol (see bridge_protocol.h):
// connect to the bridge's Unix socket, send one request frame, read one reply frame.
//
// POSIX sockets and nlohmann_json only, so that flexexec (which kubelet execs for every volume
// operation) stays small and starts in about a millisecond. Every failure comes back as a
// Status whose message is written for the person reading a pod event: it says what is wrong
// and what to do, because kubelet shows it verbatim as "mount command failed, reason: ...".
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "common/bridge_protocol.h"
#include "common/status.h"

namespace flexcsi {

// Sends `req` to the bridge listening on `socket_path` and returns the FlexVolume reply object
// of the bridge's reply envelope (`{"status":...,...}`), exactly as flexexec must print it.
//
// `connect_timeout` bounds the time spent getting a connection. Within it, a socket that does
// not exist yet or refuses connections is retried every few tens of milliseconds, so a bridge
// that is restarting is waited for; a zero timeout makes a single attempt. `reply_timeout`
// bounds everything after the connection is made (sending the request, waiting for and reading
// the reply). Nothing is retried once the request has been sent.
//
// Errors (codes chosen so callers can tell them apart without parsing messages):
//   UNAVAILABLE        socket missing, connection refused, bridge closed without answering
//   PERMISSION_DENIED  the socket is not accessible to this user
//   DEADLINE_EXCEEDED  no connection within connect_timeout, or no reply within reply_timeout
//   INVALID_ARGUMENT   socket path too long for a Unix socket address, request too large
//   DATA_LOSS          the reply is not a valid frame / JSON / reply envelope
StatusOr<nlohmann::json> CallBridge(const std::string& socket_path, const BridgeRequest& req,
                                    std::chrono::milliseconds connect_timeout,
                                    std::chrono::milliseconds reply_timeout);

// Like CallBridge, but returns the whole reply envelope (`{"version":1,"reply":{...}}`) after
// checking only that it is a JSON object with the right protocol version. For the `bridge.*`
// administrative calls (health, state) whose replies carry extra data, and for tools that want
// to show the reply as the bridge sent it.
StatusOr<nlohmann::json> CallBridgeRaw(const std::string& socket_path, const BridgeRequest& req,
                                       std::chrono::milliseconds connect_timeout,
                                       std::chrono::milliseconds reply_timeout);

// "120 s", "1.5 s", "0.25 s": durations in messages, in the unit kubelet users think in.
std::string FormatSeconds(std::chrono::milliseconds d);

}  // namespace flexcsi
