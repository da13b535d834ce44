// FlexOptions: the JSON options argument kubelet passes to a FlexVolume call (flexvolume.md §4),
// parsed once into the fields the bridge acts on. The `kubernetes.io/*` keys are kubelet's; all
// other keys are the user's `flexVolume.options`, which the mapping rule turns into a CSI volume.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"

namespace flexcsi {

struct FlexOptions {
  std::map<std::string, std::string> all;  // every key exactly as received, secrets included
  std::string fs_type;                     // kubernetes.io/fsType, may be empty
  bool readonly = false;                   // kubernetes.io/readwrite == "ro"
  std::string volume_name;                 // kubernetes.io/pvOrVolumeName
  // Present only on mount:
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string service_account;
  std::optional<int64_t> fs_group;  // kubernetes.io/mounterArgs.FsGroup (kubernetes.io/fsGroup <1.15)
  // kubernetes.io/secret/<key>, base64-decoded to the raw bytes CSI expects. Never logged.
  std::map<std::string, std::string> secrets;

  // INVALID_ARGUMENT for text that is not a JSON object of strings, a missing
  // kubernetes.io/pvOrVolumeName, a bad readwrite value, an unparsable fsGroup, or a secret that
  // is not base64 (the message names the key, never the value).
  static StatusOr<FlexOptions> Parse(const std::string& json_text);

  // The options minus kubelet's secret keys: safe to log or to hand to the mapping rule, which
  // must not freeze secrets into volume attributes.
  std::map<std::string, std::string> WithoutSecrets() const;
};

// `text` with every secret value in it replaced by "<redacted>": for a driver's error message
// about a request that carried secrets, before the bridge logs it or hands it to kubelet, since
// drivers have been known to echo their request. Values shorter than 4 bytes are left alone
// (they would redact ordinary words and say little about the secret).
std::string RedactSecretValues(std::string text, const std::map<std::string, std::string>& secrets);

}  // namespace flexcsi
