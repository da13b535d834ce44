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

FlexexecPlan Reply(nlohmann::json reply) {
  FlexexecPlan plan;
  plan.local_reply = std::move(reply);
  return plan;
}

}  // namespace

FlexexecPlan PlanFlexexecRun(const std::vector<std::string>& argv,
                             const FlexexecConfigLoader& load_config) {
  if (argv.size() < 2) {
    return Reply(
        FlexFailure("no FlexVolume call given; usage: <driver> init|attach|mount|... [args]"));
  }
  const std::string& call = argv[1];
  const FlexCallSpec* spec = FindForwardedCall(call);
  // Answered without reading anything: kubelet ignores the result and caches "Not supported",
  // which saves an exec per volume operation.
  if (call == "getvolumename") return Reply(FlexNotSupported());
  if (call != "init" && spec == nullptr) return Reply(FlexNotSupported());

  const std::string directory = ExecutableDirectory(argv[0]);
  StatusOr<FlexexecConfig> config = load_config(directory);
  if (!config.ok()) return Reply(FlexFailure(config.status().message()));
  if (call == "init") return Reply(Init(*config));

  StatusOr<std::string> driver = DriverNameFromDirectory(directory);
  if (!driver.ok()) return Reply(FlexFailure(driver.status().message()));
  std::vector<std::string> args(argv.begin() + 2, argv.end());
  Status valid = CheckCallArgs(*spec, args);
  if (!valid.ok()) return Reply(FlexFailure(valid.message()));
  // Nothing over flexcsi's limits is sent on (the bridge checks again).
  Status bounded = CheckFlexCallLimits(call, args);
  if (!bounded.ok()) return Reply(FlexFailure(bounded.message()));

  FlexexecPlan plan;
  plan.wait = config->TimeoutFor(call);
  plan.bridge_socket = config->bridge_socket;
  plan.request.driver = *driver;
  plan.request.call = call;
  plan.request.args = std::move(args);
  plan.request.timeout_ms = BridgeBudget(plan.wait).count();
  return plan;
}

nlohmann::json RunFlexexec(const std::vector<std::string>& argv) {
  try {
    FlexexecPlan plan = PlanFlexexecRun(argv, LoadFlexexecConfig);
    if (!plan.local_reply.is_null()) return plan.local_reply;
    StatusOr<nlohmann::json> reply =
        CallBridge(plan.bridge_socket, plan.request, kConnectTimeout, plan.wait);
    if (!reply.ok()) return FlexFailure(reply.status().message());
    return *reply;
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
