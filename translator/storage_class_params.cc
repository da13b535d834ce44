#include "translator/storage_class_params.h"

#include "translator/go_strings.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {

const char kCsiFsTypeParameter[] = "csi.storage.k8s.io/fstype";

bool TakeZoneParameter(const std::string& lower_key, const std::string& value,
                       const std::string& csi_zone_key, std::optional<Json>* generated) {
  if (lower_key == "zone") {
    *generated = GenerateTopologySelector(csi_zone_key, {value});
    return true;
  }
  if (lower_key == "zones") {
    // Not trimmed: upstream keeps " b" from "a, b".
    *generated = GenerateTopologySelector(csi_zone_key, GoSplit(value, ","));
    return true;
  }
  return false;
}

void SetStorageClassParameters(Json& sc, const std::map<std::string, std::string>& params) {
  if (params.empty()) {
    sc.erase("parameters");
  } else {
    sc["parameters"] = params;
  }
}

}  // namespace translator
}  // namespace flexcsi
