// libFuzzer target for the bridge configuration reader: the text of /etc/flexcsi/bridge.yaml
// (YAML or JSON) through what BridgeConfig::LoadFile does with it (ParseYamlDocument, then
// BridgeConfig::FromJson, which validates every driver and parses its mapping rule).
//
// Any crash, sanitizer report or escaped exception is a bug, and so is an accepted configuration
// that is not what the text says: numbers that were not kept exactly, a kubelet root that is
// not absolute, a driver that FindDriver does not find or whose CSI endpoint is not unix:///.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bridge/bridge_config.h"
#include "common/yaml_json.h"

namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& what, const json& doc) {
  fprintf(stderr, "bridge_config_fuzz: %s\n%s\n", what.c_str(),
          doc.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  abort();
}

// The configuration holds `value` for `key` exactly when the document gives an integer there.
void CheckInteger(const json& doc, const char* key, int value) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return;
  if (!it->is_number_integer()) Fail(std::string(key) + " accepted though not an integer", doc);
  const bool same = it->is_number_unsigned() ? it->get<uint64_t>() == static_cast<uint64_t>(value)
                                             : it->get<int64_t>() == value;
  if (!same || value < 0) Fail(std::string(key) + " became " + std::to_string(value), doc);
}

void CheckAccepted(const json& doc, const flexcsi::BridgeConfig& config) {
  const std::string& root = config.kubelet_root;
  if (root.size() < 2 || root[0] != '/' || root.back() == '/') Fail("kubelet root " + root, doc);
  CheckInteger(doc, "reconcileIntervalSeconds", config.reconcile_interval_seconds);
  CheckInteger(doc, "unavailableRetrySeconds", config.unavailable_retry_seconds);
  if (config.drivers.empty()) Fail("no drivers", doc);
  for (const flexcsi::DriverConfig& d : config.drivers) {
    if (config.FindDriver(d.flex_driver) != &d) Fail("FindDriver misses " + d.flex_driver, doc);
    if (d.csi_endpoint.rfind("unix:///", 0) != 0) Fail("endpoint " + d.csi_endpoint, doc);
    if (d.mapping.rules().size() != 1 || d.CsiDriver().empty()) Fail("rule", doc);
    if (d.provisioner.empty()) Fail("no provisioner", doc);
    (void)d.CsiSocketPath();
    (void)d.NodeIdFor("node-1");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = flexcsi::ParseYamlDocument(text);
  if (!doc.ok()) return 0;
  auto config = flexcsi::BridgeConfig::FromJson(*doc);
  if (config.ok()) CheckAccepted(*doc, *config);
  return 0;
}
