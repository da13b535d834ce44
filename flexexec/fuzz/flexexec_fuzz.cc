// libFuzzer target for what kubelet hands flexexec: argv (the call, its paths, node names, the
// options JSON) and the flexcsi.json beside the executable. It drives PlanFlexexecRun, the whole
// run up to the bridge call, with the input's flexcsi.json in place of the file.
//
// Input: NUL-separated fields: flexcsi.json text, argv[0], argv[1], ... (the seed corpus in
// flexexec/fuzz/corpus holds real calls in that form).
//
// Any crash, sanitizer report or escaped exception is a bug, and so is a broken promise:
//   - a reply flexexec gives itself prints as one line of JSON with a string "status";
//   - a forwarded request names a forwarded call with kubelet's argument count, is within the
//     limits, fits one frame, and reads back on the bridge's side (ParseBridgeRequest) as sent.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/bridge_protocol.h"
#include "common/flex_call_limits.h"
#include "common/utf8.h"
#include "flexexec/call_table.h"
#include "flexexec/config.h"
#include "flexexec/flexexec.h"

namespace {

using flexcsi::FlexexecPlan;
using nlohmann::json;

[[noreturn]] void Fail(const std::string& what, const std::string& detail) {
  fprintf(stderr, "flexexec_fuzz: %s\n%s\n", what.c_str(), detail.c_str());
  abort();
}

std::vector<std::string> SplitFields(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t nul = text.find('\0', start);
    fields.push_back(
        text.substr(start, nul == std::string::npos ? std::string::npos : nul - start));
    if (nul == std::string::npos) return fields;
    start = nul + 1;
  }
}

void CheckLocalReply(const json& reply) {
  const std::string printed = flexcsi::FormatReply(reply);
  if (printed.empty() || printed.back() != '\n' || printed.find('\n') != printed.size() - 1) {
    Fail("the reply is not one line", printed);
  }
  const json back = json::parse(printed, nullptr, /*allow_exceptions=*/false);
  if (!back.is_object() || !back.contains("status") || !back["status"].is_string()) {
    Fail("the printed reply is not a JSON object with a status", printed);
  }
  const int code = flexcsi::ExitCodeForReply(back);
  const std::string status = back["status"];
  if ((code == 0) != (status == "Success" || status == "Not supported")) {
    Fail("exit code " + std::to_string(code) + " for status " + status, printed);
  }
}

void CheckForwarded(const FlexexecPlan& plan) {
  const flexcsi::BridgeRequest& r = plan.request;
  const flexcsi::FlexCallSpec* spec = flexcsi::FindForwardedCall(r.call);
  if (spec == nullptr) Fail("forwarded a call that is not forwarded", r.call);
  if (!flexcsi::CheckCallArgs(*spec, r.args).ok()) Fail("forwarded a wrong argument count", r.call);
  if (!flexcsi::CheckFlexCallLimits(r.call, r.args).ok()) Fail("forwarded over the limits", r.call);
  if (plan.wait.count() <= 0 || r.timeout_ms <= 0 || r.timeout_ms > plan.wait.count()) {
    Fail("bridge budget " + std::to_string(r.timeout_ms) + " ms for a wait of " +
             std::to_string(plan.wait.count()) + " ms",
         r.call);
  }
  if (plan.bridge_socket.empty() || plan.bridge_socket[0] != '/') {
    Fail("bridge socket is not absolute", plan.bridge_socket);
  }
  // As common/bridge_client.cc encodes it.
  const std::string payload = r.ToJson().dump(-1, ' ', false, json::error_handler_t::replace);
  if (payload.size() > flexcsi::kMaxFrameBytes) Fail("request does not fit a frame", r.call);
  auto back = flexcsi::ParseBridgeRequest(payload);
  if (!back.ok()) Fail("the bridge cannot read the request: " + back.status().ToString(), payload);
  bool utf8 = flexcsi::IsValidUtf8(r.driver);
  for (const std::string& a : r.args) utf8 = utf8 && flexcsi::IsValidUtf8(a);
  if (utf8 && (back->driver != r.driver || back->call != r.call || back->args != r.args ||
               back->timeout_ms != r.timeout_ms)) {
    Fail("the request reads back differently", payload);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> fields =
      SplitFields(std::string(reinterpret_cast<const char*>(data), size));
  const std::string& config_text = fields[0];
  const std::vector<std::string> argv(fields.begin() + 1, fields.end());
  const FlexexecPlan plan = flexcsi::PlanFlexexecRun(argv, [&](const std::string& directory) {
    return flexcsi::ParseFlexexecConfig(config_text,
                                        directory + "/" + flexcsi::kFlexexecConfigFile);
  });
  if (plan.local_reply.is_null()) {
    CheckForwarded(plan);
  } else {
    CheckLocalReply(plan.local_reply);
  }
  return 0;
}
