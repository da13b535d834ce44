#include "bridge/call_dispatcher.h"

#include <algorithm>
#include <exception>
#include <map>

#include <spdlog/spdlog.h>

#include "bridge/flex_calls.h"
#include "bridge/node_registrar.h"
#include "common/flex_call_limits.h"
#include "common/version.h"

namespace flexcsi {
namespace {

using Handler = nlohmann::json (*)(BridgeContext&, const FlexCall&);

struct CallSpec {
  size_t argc;        // argv entries after the call name
  const char* usage;  // for the error message
  Handler handler;
};

const std::map<std::string, CallSpec>& CallTable() {
  static const auto* table = new std::map<std::string, CallSpec>{
      {"attach", {2, "attach <json options> <node name>", HandleAttach}},
      {"isattached", {2, "isattached <json options> <node name>", HandleIsAttached}},
      {"detach", {2, "detach <volume name> <node name>", HandleDetach}},
      {"waitforattach", {2, "waitforattach <device> <json options>", HandleWaitForAttach}},
      {"mountdevice",
       {3, "mountdevice <device mount path> <device> <json options>", HandleMountDevice}},
      {"unmountdevice", {1, "unmountdevice <device mount path>", HandleUnmountDevice}},
      {"mount", {2, "mount <pod volume dir> <json options>", HandleMount}},
      {"unmount", {1, "unmount <pod volume dir>", HandleUnmount}},
      {"expandvolume",
       {4, "expandvolume <json options> <device mount path> <new size> <old size>",
        HandleExpandVolume}},
      {"expandfs",
       {5, "expandfs <json options> <device path> <path> <new size> <old size>", HandleExpandFs}},
  };
  return *table;
}

// Used when flexexec sends no budget (administrative tools); kubelet's own CSI timeout.
constexpr std::chrono::milliseconds kDefaultBudget = std::chrono::minutes(2);

nlohmann::json CapabilityNames(const NodeCapabilities& caps) {
  nlohmann::json names = nlohmann::json::array();
  for (auto c : caps) names.push_back(csi::v1::NodeServiceCapability::RPC::Type_Name(c));
  return names;
}

nlohmann::json CapabilityNames(const ControllerCapabilities& caps) {
  nlohmann::json names = nlohmann::json::array();
  for (auto c : caps) names.push_back(csi::v1::ControllerServiceCapability::RPC::Type_Name(c));
  return names;
}

}  // namespace

nlohmann::json CallDispatcher::Dispatch(const BridgeRequest& request) {
  try {
    if (request.call == "bridge.health") return Health();
    if (request.call == "bridge.state") return State();
    nlohmann::json reply = DispatchFlexCall(request);
    ctx_.metrics.RecordFlexCall(request.call, reply.value("status", "Failure"));
    return reply;
  } catch (const std::exception& e) {
    spdlog::error("call {} for {} threw: {}", request.call, request.driver, e.what());
    ctx_.metrics.RecordFlexCall(request.call, "Failure");
    return FlexFailure(std::string("internal error in flexcsi-bridge: ") + e.what());
  }
}

nlohmann::json CallDispatcher::DispatchFlexCall(const BridgeRequest& request) {
  if (request.call == "init") {
    return FlexFailure("init is answered by flexexec from flexcsi.json, not by the bridge");
  }
  if (request.call == "getvolumename") return FlexNotSupported();
  auto spec = CallTable().find(request.call);
  if (spec == CallTable().end()) return FlexNotSupported();
  const DriverConfig* driver = ctx_.config.FindDriver(request.driver);
  if (driver == nullptr) {
    return FlexFailure("FlexVolume driver \"" + request.driver +
                       "\" is not configured in flexcsi-bridge; add it to the drivers list of "
                       "the bridge configuration");
  }
  if (request.args.size() != spec->second.argc) {
    return FlexFailure("wrong number of arguments for " + request.call + ": expected " +
                       spec->second.usage + ", got " + std::to_string(request.args.size()));
  }
  // flexexec checked the same limits; the bridge does not rely on that.
  if (Status bounded = CheckFlexCallLimits(request.call, request.args); !bounded.ok()) {
    return FlexFailure(bounded.message());
  }
  const auto budget =
      request.timeout_ms > 0 ? std::chrono::milliseconds(request.timeout_ms) : kDefaultBudget;
  FlexCall call{*driver, request.call, request.args, Deadline::In(budget)};
  return spec->second.handler(ctx_, call);
}

nlohmann::json CallDispatcher::Health() {
  nlohmann::json drivers = nlohmann::json::array();
  bool all_ready = true;
  for (const auto& d : ctx_.config.drivers) {
    const Deadline deadline = Deadline::In(std::chrono::seconds(5));
    CsiClient& client = ctx_.ClientFor(d);
    nlohmann::json entry = {
        {"flexDriver", d.flex_driver}, {"csiDriver", d.CsiDriver()}, {"endpoint", d.csi_endpoint}};
    Status probe = client.Probe(deadline);
    entry["ready"] = probe.ok();
    entry["message"] = probe.ok() ? "ready" : probe.ToString();
    all_ready = all_ready && probe.ok();
    if (probe.ok()) {
      if (auto caps = client.NodeGetCapabilities(deadline); caps.ok()) {
        entry["nodeCapabilities"] = CapabilityNames(*caps);
      }
      if (auto caps = client.ControllerGetCapabilities(deadline); caps.ok()) {
        entry["controllerCapabilities"] = CapabilityNames(*caps);
      }
    }
    if (probes_ != nullptr) {
      // The answer /healthz gives, and how old it is.
      const auto now = DriverProbeCache::Clock::now();
      for (const auto& r : probes_->Snapshot()) {
        if (r.flex_driver != d.flex_driver) continue;
        nlohmann::json last = {{"ready", probes_->Fresh(r, now)}, {"message", r.message}};
        if (r.probed) {
          last["ageSeconds"] =
              std::chrono::duration_cast<std::chrono::seconds>(now - r.answered_at).count();
        }
        if (r.probing) {
          last["probingSeconds"] =
              std::chrono::duration_cast<std::chrono::seconds>(now - r.probing_since).count();
        }
        entry["lastProbe"] = last;
      }
    }
    if (ctx_.registrar != nullptr) {
      const nlohmann::json registrations = ctx_.registrar->Snapshot();
      if (registrations.contains(d.csi_endpoint)) {
        entry["registration"] = registrations[d.csi_endpoint];
      }
    }
    drivers.push_back(entry);
  }
  nlohmann::json reply = FlexSuccess();
  // Added in 0.2.0; a caller that finds no "build" talks to an older bridge (doctor says so).
  reply["build"] = {{"version", FlexcsiVersion()}, {"commit", FlexcsiGitCommit()}};
  if (ctx_.kubelet_root != nullptr && !ctx_.config.kubelet_root.empty()) {
    const Status root = ctx_.kubelet_root->Check();
    reply["kubeletRoot"] = {
        {"path", ctx_.config.kubelet_root},
        {"ok", root.ok()},
        {"message", root.ok() ? "pods/ and plugins/ are there" : root.message()}};
    all_ready = all_ready && root.ok();
  }
  reply["ready"] = all_ready;
  reply["drivers"] = drivers;
  if (auto counts = ctx_.store.CountRecords(); counts.ok()) {
    reply["records"] = {{"attachments", counts->attachments},
                        {"stagings", counts->stagings},
                        {"publications", counts->publications}};
    reply["pendingRollbacks"] = counts->unsettled;
  } else {
    reply["records"] = {{"error", counts.status().ToString()}};
  }
  // Records whose undo keeps failing, for `flexcsi doctor` (repair_backoff.h).
  reply["failingRepairs"] = nlohmann::json::array();
  const auto now = RepairBackoff::Clock::now();
  for (const auto& r : ctx_.repairs.Failing()) {
    const auto wait = std::chrono::duration_cast<std::chrono::seconds>(r.next_attempt - now);
    reply["failingRepairs"].push_back({{"kind", r.kind},
                                       {"record", r.key},
                                       {"attempts", r.attempts},
                                       {"lastError", r.last_error},
                                       {"nextAttemptSeconds", std::max<int64_t>(0, wait.count())}});
  }

  return reply;
}

HealthAnswer CallDispatcher::Ready() const {
  HealthAnswer answer;
  if (ctx_.kubelet_root != nullptr && !ctx_.kubelet_root->Check().ok()) {
    answer.healthy = false;
    answer.detail += "kubelet root " + ctx_.config.kubelet_root + ": not kubelet's\n";
  }
  if (probes_ == nullptr) {
    if (!ctx_.config.drivers.empty()) {
      answer.healthy = false;
      answer.detail += "drivers not probed yet\n";
    }
    return answer;
  }
  answer.healthy = answer.healthy && probes_->AllReady();
  answer.detail += probes_->Describe();
  return answer;
}

void CallDispatcher::StartDriverProbes(DriverProbeCache::Options options) {
  if (probes_ != nullptr) return;
  CsiClients& clients = ctx_.clients;
  probes_ = std::make_unique<DriverProbeCache>(
      ctx_.config.drivers,
      [&clients](const DriverConfig& d, const Deadline& deadline) {
        return clients.For(d.csi_endpoint).Probe(deadline);
      },
      options);
  probes_->Start();
}

void CallDispatcher::StopDriverProbes() {
  if (probes_ != nullptr) probes_->Stop();
}

nlohmann::json CallDispatcher::State() {
  auto attachments = ctx_.store.ListAttachments();
  auto stagings = ctx_.store.ListStagings();
  auto publications = ctx_.store.ListPublications();
  for (const Status& s : {attachments.status(), stagings.status(), publications.status()}) {
    if (!s.ok()) return FlexFailure(s.ToString());
  }
  nlohmann::json reply = FlexSuccess();
  reply["attachments"] = nlohmann::json::array();
  reply["stagings"] = nlohmann::json::array();
  reply["publications"] = nlohmann::json::array();
  for (const auto& r : *attachments) reply["attachments"].push_back(StateStore::ToJson(r));
  for (const auto& r : *stagings) reply["stagings"].push_back(StateStore::ToJson(r));
  for (const auto& r : *publications) reply["publications"].push_back(StateStore::ToJson(r));
  return reply;
}

}  // namespace flexcsi
