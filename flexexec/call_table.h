// The FlexVolume calls flexexec forwards and the exact argv kubelet passes to each
// (flexvolume.md section 2.1). Checking the count here turns a version mismatch or a
// hand-typed test call into a message that names the expected argv, instead of a confusing
// error from deep inside the bridge.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

struct FlexCallSpec {
  const char* name;               // argv[1]
  std::vector<const char*> args;  // names of argv[2..], for messages
};

// The spec of a call that is forwarded to the bridge, or nullptr for init, getvolumename
// (answered locally) and unknown calls.
const FlexCallSpec* FindForwardedCall(const std::string& call);

// OK when `args` (argv[2..]) has exactly as many elements as `spec` names, otherwise an
// INVALID_ARGUMENT naming the expected argv: "mount expects 2 arguments, got 1; usage:
// <driver> mount <podVolumeDir> <json options>".
Status CheckCallArgs(const FlexCallSpec& spec, const std::vector<std::string>& args);

}  // namespace flexcsi
