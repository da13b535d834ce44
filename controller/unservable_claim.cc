#include "controller/unservable_claim.h"

#include "common/json_access.h"
#include "controller/controller_context.h"
#include "controller/provision_plan.h"

namespace flexcsi::controller {
namespace {

bool WaitingForVolume(const nlohmann::json& claim) {
  if (BeingDeleted(claim)) return false;
  if (!JStr(JField(claim, "spec"), "volumeName").empty()) return false;
  const std::string phase = JStr(JField(claim, "status"), "phase");
  return phase.empty() || phase == "Pending";
}

// spec.dataSourceRef, else spec.dataSource, of a claim (or of its applied configuration).
const nlohmann::json& DataSourceOf(const nlohmann::json& claim) {
  const auto& spec = JField(claim, "spec");
  const auto& ref = JField(spec, "dataSourceRef");
  return ref.is_object() ? ref : JField(spec, "dataSource");
}

std::string Describe(const nlohmann::json& source) {
  return JStr(source, "kind") + " \"" + JStr(source, "name") + "\"";
}

}  // namespace

std::optional<std::string> WhyClaimCannotBeServed(const nlohmann::json& claim,
                                                  const nlohmann::json& storage_class,
                                                  const ClusterCapabilities& cluster) {
  if (!WaitingForVolume(claim)) return std::nullopt;
  const std::string k8s = "Kubernetes " + cluster.version.Describe();

  const auto& source = DataSourceOf(claim);
  if (source.is_object()) {
    if (JStr(source, "kind") == "VolumeSnapshot" && !cluster.snapshots) {
      return "dataSource " + Describe(source) +
             " needs snapshot.storage.k8s.io/v1, which this cluster (" + k8s +
             ") does not serve; restore with `flexcsi volume create --from-snapshot` and a static "
             "FlexVolume PV instead";
    }
  } else {
    const std::string applied_text = Annotation(claim, kAnnLastApplied);
    if (!applied_text.empty()) {
      // Unparseable text is "discarded", not an object: it names no data source.
      const auto applied = nlohmann::json::parse(applied_text, nullptr, false);
      const auto& asked = DataSourceOf(applied);
      if (asked.is_object()) {
        return "the claim was applied with spec.dataSource " + Describe(asked) +
               ", which the API server (" + k8s +
               ") dropped because it does not know the field; provisioning it would give an "
               "empty volume instead of the copy asked for, so it is not provisioned (copy the "
               "data with `flexcsi volume create --from-snapshot` and a static FlexVolume PV)";
      }
    }
  }

  if (JStr(storage_class, "volumeBindingMode") == "WaitForFirstConsumer" &&
      SelectedNode(claim).empty() && !cluster.ProvisionsDelayedBinding()) {
    return "volumeBindingMode WaitForFirstConsumer cannot be served on " + k8s +
           ": its scheduler binds such claims only to existing PVs and never asks a provisioner "
           "(it selects a node for provisioning from 1.11 on), so this claim would stay Pending; "
           "use a StorageClass with volumeBindingMode Immediate, whose volumes "
           "flexcsi-controller places by the nodes' registered topology labels";
  }
  return std::nullopt;
}

}  // namespace flexcsi::controller
