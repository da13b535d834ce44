// One run of the FlexVolume executable: argv in, exactly one reply object out.
// init and getvolumename are answered here; every other known call is checked and forwarded
// to flexcsi-bridge. main.cc only prints the result.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flexcsi {

// Never throws; every problem becomes {"status":"Failure","message":...}.
nlohmann::json RunFlexexec(const std::vector<std::string>& argv);

// The reply as kubelet must see it: one compact JSON object and a newline. Invalid UTF-8 in
// messages is replaced, never thrown on.
std::string FormatReply(const nlohmann::json& reply);

// 0 for Success and Not supported, 1 otherwise (kubelet turns a Success with a non-zero exit
// into a failure, and only needs the JSON for the rest).
int ExitCodeForReply(const nlohmann::json& reply);

}  // namespace flexcsi
