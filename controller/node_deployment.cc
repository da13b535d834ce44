#include "controller/node_deployment.h"

#include <algorithm>

#include "common/json_access.h"
#include "controller/provision_plan.h"

namespace flexcsi::controller {
namespace {

bool ValuesContain(const nlohmann::json& values, const std::string& value) {
  if (!values.is_array()) return false;
  return std::any_of(values.begin(), values.end(),
                     [&](const nlohmann::json& v) { return v.is_string() && v == value; });
}

bool ExpressionHolds(const nlohmann::json& expr, const TopologySegment& labels) {
  const std::string key = JStr(expr, "key");
  const std::string op = JStr(expr, "operator");
  const auto it = labels.find(key);
  const bool has = it != labels.end();
  if (op == "In") return has && ValuesContain(JField(expr, "values"), it->second);
  if (op == "NotIn") return !has || !ValuesContain(JField(expr, "values"), it->second);
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  return false;  // Gt, Lt: not topology values
}

}  // namespace

ClaimOwner OwnerOfClaim(const nlohmann::json& claim, const std::string& node_name) {
  const std::string selected = SelectedNode(claim);
  if (selected.empty()) return ClaimOwner::kNobodyYet;
  return selected == node_name ? ClaimOwner::kThisNode : ClaimOwner::kOtherNode;
}

bool VolumeIsOnNode(const nlohmann::json& pv, const TopologySegment& node_topology) {
  if (node_topology.empty()) return false;
  const auto& terms =
      JField(JField(JField(JField(pv, "spec"), "nodeAffinity"), "required"), "nodeSelectorTerms");
  if (!terms.is_array()) return false;
  for (const auto& term : terms) {
    const auto& exprs = JField(term, "matchExpressions");
    // An empty term selects no node (Kubernetes' node selector semantics).
    if (!exprs.is_array() || exprs.empty()) continue;
    if (std::all_of(exprs.begin(), exprs.end(), [&](const nlohmann::json& e) {
          return ExpressionHolds(e, node_topology);
        })) {
      return true;
    }
  }
  return false;
}

bool ClassAllowsNode(const nlohmann::json& storage_class, const TopologySegment& node_topology) {
  const auto& terms = JField(storage_class, "allowedTopologies");
  if (!terms.is_array() || terms.empty()) return true;
  for (const auto& term : terms) {
    const auto& exprs = JField(term, "matchLabelExpressions");
    if (!exprs.is_array()) continue;
    if (std::all_of(exprs.begin(), exprs.end(), [&](const nlohmann::json& e) {
          const auto it = node_topology.find(JStr(e, "key"));
          return it != node_topology.end() && ValuesContain(JField(e, "values"), it->second);
        })) {
      return true;
    }
  }
  return false;
}

std::chrono::milliseconds OwnershipDelay(const NodeDeployment& config, int lost_races,
                                         double random01) {
  int64_t ceiling = config.base_delay.count();
  for (int i = 0; i < lost_races && ceiling < config.max_delay.count(); ++i) ceiling *= 2;
  ceiling = std::min<int64_t>(ceiling, config.max_delay.count());
  random01 = std::clamp(random01, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(ceiling) * random01));
}

}  // namespace flexcsi::controller
