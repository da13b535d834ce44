// Doctor's checks of the running bridge, all from its bridge.health reply: the socket answers,
// its view of kubeletRoot, failing repairs, the wrapped CSI endpoints and driver registrations.
#include "cli/doctor_command.h"

#include <sys/stat.h>

#include "cli/doctor_rows.h"
#include "common/bridge_client.h"

namespace flexcsi {

DoctorCheck CheckBridgeSocket(const std::string& socket, nlohmann::json* health) {
  *health = nlohmann::json::object();
  const std::string name = "bridge socket";
  BridgeRequest request;
  request.call = "bridge.health";
  request.timeout_ms = 10000;
  auto envelope = CallBridgeRaw(socket, request, std::chrono::seconds(2), std::chrono::seconds(10));
  if (!envelope.ok()) {
    return Fail(name, socket + ": " + envelope.status().message(),
                "start the bridge: systemctl status flexcsi-bridge, or kubectl -n flexcsi get "
                "pods (bridge container of flexcsi-node)");
  }
  *health = envelope->value("reply", nlohmann::json::object());
  if (health->value("status", "") != "Success") {
    return Fail(name, "bridge.health answered " + health->dump(), "see the bridge's log");
  }
  std::string detail = socket + ": healthy";
  const int pending = health->value("pendingRollbacks", 0);
  if (pending > 0) {
    return Warn(name, detail + ", " + std::to_string(pending) + " rollback(s) pending",
                "the bridge retries rollbacks itself; see its log if the number stays up");
  }
  return Pass(name, detail);
}

std::optional<DoctorCheck> CheckKubeletRootAsTheBridgeSeesIt(const nlohmann::json& health) {
  const auto root = health.find("kubeletRoot");
  if (root == health.end() || !root->is_object()) return std::nullopt;
  const std::string name = "kubelet root";
  const std::string path = root->value("path", std::string("?"));
  if (root->value("ok", false)) return Pass(name, path + ": has kubelet's pods/ and plugins/");
  return Fail(name, root->value("message", std::string("?")),
              "set kubeletRoot to kubelet's --root-dir (ps -o args= -C kubelet | tr ' ' '\\n' | "
              "grep root-dir; default /var/lib/kubelet), then restart the bridge");
}

std::vector<DoctorCheck> CheckFailingRepairs(const nlohmann::json& health) {
  std::vector<DoctorCheck> checks;
  const auto failing = health.find("failingRepairs");
  if (failing == health.end() || !failing->is_array()) return checks;
  for (const auto& r : *failing) {
    if (!r.is_object()) continue;
    const int attempts = r.value("attempts", 0);
    checks.push_back(
        Warn("repair " + r.value("record", std::string("?")),
             "undo failed " + std::to_string(attempts) + (attempts == 1 ? " time" : " times") +
                 ", next attempt in " + std::to_string(r.value("nextAttemptSeconds", int64_t{0})) +
                 " s; last error: " + r.value("lastError", std::string("?")),
             "the bridge retries it with backoff (up to every 5 minutes); fix what the last error "
             "names (often the CSI driver: see its log), then watch the row go away"));
  }
  return checks;
}

std::vector<DoctorCheck> CheckCsiEndpoints(const BridgeConfig& config,
                                           const nlohmann::json& health) {
  std::map<std::string, nlohmann::json> by_driver;
  if (health.contains("drivers") && health["drivers"].is_array()) {
    for (const auto& d : health["drivers"]) by_driver[d.value("flexDriver", "")] = d;
  }
  std::vector<DoctorCheck> checks;
  for (const auto& driver : config.drivers) {
    const std::string name = "CSI endpoint " + driver.flex_driver;
    const auto it = by_driver.find(driver.flex_driver);
    if (it == by_driver.end()) {
      // No word from the bridge: say what can be seen from here.
      const std::string path = driver.CsiSocketPath();
      struct stat st {};
      const bool exists = !path.empty() && stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
      checks.push_back(Fail(name,
                            driver.csi_endpoint +
                                (exists ? " exists but was not probed" : " does not exist") +
                                " (the bridge did not report this driver)",
                            exists ? "fix the bridge socket check first"
                                   : "start the CSI driver's node plugin (sidecar of the bridge "
                                     "pod, or its own service) listening on " +
                                         driver.csi_endpoint));
      continue;
    }
    const nlohmann::json& d = it->second;
    std::vector<std::string> node_caps, controller_caps;
    for (const auto& c : d.value("nodeCapabilities", nlohmann::json::array())) {
      node_caps.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
    for (const auto& c : d.value("controllerCapabilities", nlohmann::json::array())) {
      controller_caps.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
    const std::string caps =
        "node: " + (node_caps.empty() ? "-" : Join(node_caps, ",")) +
        "; controller: " + (controller_caps.empty() ? "-" : Join(controller_caps, ","));
    const std::string csi = d.value("csiDriver", driver.CsiDriver());
    if (!d.value("ready", false)) {
      checks.push_back(Fail(name,
                            csi + " at " + d.value("endpoint", driver.csi_endpoint) +
                                " not ready: " + d.value("message", std::string("?")),
                            "check the CSI driver's logs; Probe must answer ready=true"));
      continue;
    }
    bool can_publish = false;
    for (const auto& c : controller_caps)
      can_publish |= c.find("PUBLISH_UNPUBLISH") != std::string::npos;
    if (driver.attach && !controller_caps.empty() && !can_publish) {
      checks.push_back(Warn(name, csi + " ready; " + caps,
                            "attach: true but the controller cannot publish; set attach: false "
                            "and reinstall the driver with --no-attach"));
      continue;
    }
    checks.push_back(Pass(name, csi + " ready; " + caps));
  }
  return checks;
}

std::vector<DoctorCheck> CheckDriverRegistrations(const nlohmann::json& health) {
  std::vector<DoctorCheck> checks;
  std::set<std::string> endpoints;  // flex drivers sharing a CSI driver share its registration
  if (!health.contains("drivers") || !health["drivers"].is_array()) return checks;
  for (const auto& d : health["drivers"]) {
    if (!d.contains("registration") || !endpoints.insert(d.value("endpoint", "")).second) continue;
    const nlohmann::json& r = d["registration"];
    const std::string csi = r.value("driver", d.value("csiDriver", std::string("?")));
    const std::string name = "registration " + csi;
    const std::string state = r.value("state", "");
    const std::string node = r.value("node", "");
    const std::string message = r.value("message", "");
    if (state == "registered") {
      checks.push_back(Pass(name, "on node " + node + " with node id " + r.value("nodeId", "")));
    } else if (state == "disabled") {
      checks.push_back(Pass(name, "off in the configuration (registerDrivers: false)"));
    } else if (state == "off") {
      checks.push_back(Warn(name, "not registered: " + message,
                            "give the bridge nodeName (or NODE_NAME) and cluster access (a "
                            "kubeconfig, or run it in a pod with its service account); without "
                            "it, PVs with topology do not schedule to this node"));
    } else if (state == "failed") {
      checks.push_back(Fail(name,
                            "not registered on node " + node + " after " +
                                std::to_string(r.value("attempts", 0)) + " attempt(s): " + message,
                            "check the bridge's RBAC (get/patch its Node; get/create/update "
                            "CSINode) and the reason above"));
    } else {
      checks.push_back(Warn(name, "not registered yet: " + message,
                            "wait for the CSI driver to answer NodeGetInfo"));
    }
  }
  return checks;
}

}  // namespace flexcsi
