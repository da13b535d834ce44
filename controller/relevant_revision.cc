#include "controller/relevant_revision.h"

#include <cstdio>
#include <functional>

#include "common/json_access.h"
#include "controller/provision_plan.h"

namespace flexcsi::controller {

std::string RelevantRevision(const std::string& kind, const nlohmann::json& object) {
  const auto& meta = JField(object, "metadata");
  nlohmann::json relevant = {{"uid", JStr(meta, "uid")},
                             {"spec", JField(object, "spec")},
                             {"deleting", !JField(meta, "deletionTimestamp").is_null()}};
  if (kind == "claim") {
    const auto& annotations = JField(meta, "annotations");
    for (const char* key : {kAnnSelectedNode, kAnnAlphaSelectedNode, kAnnStorageProvisioner,
                            kAnnBetaStorageProvisioner}) {
      relevant[key] = JStr(annotations, key);
    }
  } else if (kind == "pv") {
    relevant["phase"] = JStr(JField(object, "status"), "phase");
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016zx", std::hash<std::string>{}(relevant.dump()));
  return hex;
}

}  // namespace flexcsi::controller
