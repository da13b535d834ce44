#include "flexexec/call_table.h"

namespace flexcsi {
namespace {

const std::vector<FlexCallSpec>& ForwardedCalls() {
  static const std::vector<FlexCallSpec> calls = {
      {"attach", {"<json options>", "<node name>"}},
      {"isattached", {"<json options>", "<node name>"}},
      {"detach", {"<pv or volume name>", "<node name>"}},
      {"waitforattach", {"<device path>", "<json options>"}},
      {"mountdevice", {"<device mount path>", "<device path>", "<json options>"}},
      {"unmountdevice", {"<device mount path>"}},
      {"mount", {"<pod volume dir>", "<json options>"}},
      {"unmount", {"<pod volume dir>"}},
      {"expandvolume",
       {"<json options>", "<device mount path>", "<new size bytes>", "<old size bytes>"}},
      {"expandfs",
       {"<json options>", "<device path>", "<device mount path or pod volume dir>",
        "<new size bytes>", "<old size bytes>"}},
  };
  return calls;
}

}  // namespace

const FlexCallSpec* FindForwardedCall(const std::string& call) {
  for (const FlexCallSpec& spec : ForwardedCalls()) {
    if (call == spec.name) return &spec;
  }
  return nullptr;
}

Status CheckCallArgs(const FlexCallSpec& spec, const std::vector<std::string>& args) {
  if (args.size() == spec.args.size()) return Status::Ok();
  std::string usage = std::string("<driver> ") + spec.name;
  for (const char* a : spec.args) usage += std::string(" ") + a;
  return InvalidArgument(std::string(spec.name) + " expects " + std::to_string(spec.args.size()) +
                         (spec.args.size() == 1 ? " argument" : " arguments") + ", got " +
                         std::to_string(args.size()) + "; usage: " + usage);
}

}  // namespace flexcsi
