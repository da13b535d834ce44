// One run of the FlexVolume executable: argv in, exactly one reply object out.
// init and getvolumename are answered here; every other known call is checked and forwarded
// to flexcsi-bridge. main.cc only prints the result.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bridge_protocol.h"
#include "common/status.h"
#include "flexexec/config.h"

namespace flexcsi {

// Never throws; every problem becomes {"status":"Failure","message":...}.
nlohmann::json RunFlexexec(const std::vector<std::string>& argv);

// What a run decides from argv and flexcsi.json before it talks to the bridge: either the reply
// flexexec gives by itself (init, getvolumename, unknown calls, every call it refuses) or the
// request it forwards, where to, and how long it waits for the answer.
struct FlexexecPlan {
  nlohmann::json local_reply;  // null when `request` is to be forwarded
  BridgeRequest request;
  std::string bridge_socket;
  std::chrono::milliseconds wait{0};
};

// Reads flexcsi.json of a driver directory (LoadFlexexecConfig in the executable).
using FlexexecConfigLoader = std::function<StatusOr<FlexexecConfig>(const std::string& directory)>;

// RunFlexexec up to the bridge call. Reads nothing itself but what `load_config` reads (and
// /proc/self/exe for an argv[0] without a '/'), so the fuzz target drives it with any argv and
// any flexcsi.json text. May throw what the loader throws; RunFlexexec catches it.
FlexexecPlan PlanFlexexecRun(const std::vector<std::string>& argv,
                             const FlexexecConfigLoader& load_config);

// The reply as kubelet must see it: one compact JSON object and a newline. Invalid UTF-8 in
// messages is replaced, never thrown on.
std::string FormatReply(const nlohmann::json& reply);

// 0 for Success and Not supported, 1 otherwise (kubelet turns a Success with a non-zero exit
// into a failure, and only needs the JSON for the rest).
int ExitCodeForReply(const nlohmann::json& reply);

}  // namespace flexcsi
