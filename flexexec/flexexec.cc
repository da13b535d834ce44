#include "flexexec/flexexec.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "common/bridge_client.h"
#include "common/bridge_protocol.h"
#include "common/flex_call_limits.h"
#include "flexexec/call_table.h"
#include "flexexec/config.h"
#include "flexexec/driver_name.h"

namespace flexcsi {
namespace {

using std::chrono::milliseconds;

// A dead daemon must turn into a Failure within a second or two; one second also covers a
// bridge restart (the client keeps retrying a missing or refusing socket meanwhile).
constexpr milliseconds kConnectTimeout(1000);

// The bridge is told to finish this much before flexexec stops waiting, so that its answer
// (often a rollback explanation) still reaches kubelet: 1/20 of the wait, 0.2 s to 5 s.
milliseconds BridgeBudget(milliseconds wait) {
  milliseconds margin = std::clamp(wait / 20, milliseconds(200), milliseconds(5000));
  return wait > margin * 2 ? wait - margin : wait / 2;
}

nlohmann::json Init(const FlexexecConfig& config) {
  nlohmann::json reply = FlexSuccess();
  reply["capabilities"] = config.capabilities;
  return reply;
}

nlohmann::json Forward(const std::string& driver, const FlexexecConfig& config,
                       const std::string& call, std::vector<std::string> args) {
  const milliseconds wait = config.TimeoutFor(call);
  BridgeRequest req;
  req.driver = driver;
  req.call = call;
  req.args = std::move(args);
  req.timeout_ms = BridgeBudget(wait).count();
  StatusOr<nlohmann::json> reply = CallBridge(config.bridge_socket, req, kConnectTimeout, wait);
  if (!reply.ok()) return FlexFailure(reply.status().message());
  return *reply;
}

nlohmann::json Run(const std::vector<std::string>& argv) {
  if (argv.size() < 2) {
    return FlexFailure("no FlexVolume call given; usage: <driver> init|attach|mount|... [args]");
  }
  const std::string& call = argv[1];
  const FlexCallSpec* spec = FindForwardedCall(call);
  // Answered without reading anything: kubelet ignores the result and caches "Not supported",
  // which saves an exec per volume operation.
  if (call == "getvolumename") return FlexNotSupported();
  if (call != "init" && spec == nullptr) return FlexNotSupported();

  const std::string directory = ExecutableDirectory(argv[0]);
  StatusOr<FlexexecConfig> config = LoadFlexexecConfig(directory);
  if (!config.ok()) return FlexFailure(config.status().message());
  if (call == "init") return Init(*config);

  StatusOr<std::string> driver = DriverNameFromDirectory(directory);
  if (!driver.ok()) return FlexFailure(driver.status().message());
  std::vector<std::string> args(argv.begin() + 2, argv.end());
  Status valid = CheckCallArgs(*spec, args);
  if (!valid.ok()) return FlexFailure(valid.message());
  // Nothing over flexcsi's limits is sent on (the bridge checks again).
  Status bounded = CheckFlexCallLimits(call, args);
  if (!bounded.ok()) return FlexFailure(bounded.message());
  return Forward(*driver, *config, call, std::move(args));
}

}  // namespace

nlohmann::json RunFlexexec(const std::vector<std::string>& argv) {
  try {
    return Run(argv);
  } catch (const std::exception& e) {
    return FlexFailure(std::string("flexexec internal error: ") + e.what());
  } catch (...) {
    return FlexFailure("flexexec internal error");
  }
}

std::string FormatReply(const nlohmann::json& reply) {
  return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int ExitCodeForReply(const nlohmann::json& reply) {
  auto status = reply.find("status");
  if (status != reply.end() && status->is_string() &&
      (*status == "Success" || *status == "Not supported")) {
    return 0;
  }
  return 1;
}

}  // namespace flexcsi
