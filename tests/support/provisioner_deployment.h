// For migrate/ tests: deploy/kubernetes/provisioner's Deployment as the API server returns it.
#pragma once

#include <nlohmann/json.hpp>

namespace flexcsi::migrate {

// The container and volumes of deploy/kubernetes/provisioner/deployment.yaml, as kustomize
// renders them (the ConfigMap name carries the generator's hash), with `replicas` pods.
inline nlohmann::json ProvisionerDeployment(int replicas) {
  using nlohmann::json;
  return {
      {"metadata", {{"namespace", "flexcsi"}, {"name", "flexcsi-provisioner"}}},
      {"spec",
       {{"replicas", replicas},
        {"template",
         {{"spec",
           {{"containers",
             {{{"name", "controller"},
               {"command",
                {"flexcsi-controller", "--in-cluster", "--bridge-config=/etc/flexcsi/bridge.yaml",
                 "--leader-election"}},
               {"volumeMounts",
                {{{"name", "config"}, {"mountPath", "/etc/flexcsi"}, {"readOnly", true}},
                 {{"name", "csi-socket"}, {"mountPath", "/csi"}}}}},
              {{"name", "csi-controller"}, {"command", {"csi-loopback"}}}}},
            {"volumes",
             {{{"name", "config"}, {"configMap", {{"name", "flexcsi-provisioner-config-7h2k9"}}}},
              {{"name", "csi-socket"}, {"emptyDir", json::object()}}}}}}}}}}};
}

}  // namespace flexcsi::migrate
