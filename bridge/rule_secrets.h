// The secrets a FlexVolume call hands its CSI stage and publish requests. kubelet passes only
// the Secret a PV's secretRef names, and only when that Secret is typed with the FlexVolume
// driver's name; a mapping rule's `secrets` (translator RuleSecrets) name Secrets the bridge
// reads itself, with its own credentials: rook's `mountSecret`, or the Opaque Secrets CSI users
// write, which flexcsi-controller names in a PV's options.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/call_identity.h"
#include "bridge/flex_options.h"
#include "common/status.h"
#include "kube/kube_client.h"
#include "translator/flexvolume_rules.h"

namespace flexcsi {

// The bridge's reads of Secrets and PVs for the rules' `secrets`. Needs `get` on secrets (in
// the namespaces the rules name; docs/mapping-rules.md) and on persistentvolumes.
class SecretReader {
 public:
  // `client` null: no cluster access, for the reason `why_not`; every read then fails saying so.
  SecretReader(std::unique_ptr<kube::KubeClient> client, std::string why_not);

  // The Secret's data, base64-decoded. Errors name the Secret, never a value.
  StatusOr<std::map<std::string, std::string>> Read(const std::string& namespace_name,
                                                    const std::string& name);
  // The namespace of the claim bound to the PV: where a PV's Secret lives when nothing else
  // says (mountdevice carries no pod).
  StatusOr<std::string> ClaimNamespaceOf(const std::string& pv_name);

 private:
  Status NoAccess() const;
  std::mutex mu_;  // KubeClient calls are made one at a time
  std::unique_ptr<kube::KubeClient> client_;
  std::string why_not_;
};

// The namespace of the Secret volume.read_secret names, for this caller (below). `reader` is
// asked for a PV's claim only when the call is trusted and nothing else says.
StatusOr<std::string> RuleSecretNamespace(const translator::CsiVolume& volume,
                                          const FlexOptions& options,
                                          const CallIdentity& identity, SecretReader& reader);

// The call's secrets: the rule's defaults, then keys made from options, then the Secret the rule
// names (its one key under singleKeyAs, else every key), then what kubelet passed, each over
// the one before. `reader` may be null when no rule reads a Secret.
//
// Where the rule's Secret is read depends on who calls (call_identity.h): an inline volume's
// only ever in its pod's namespace, whatever the rule says, as kubelet looks up an inline CSI
// volume's Secret; a PV's where the rule says, else in its claim's namespace.
StatusOr<std::map<std::string, std::string>> CallSecrets(const translator::CsiVolume& volume,
                                                         const FlexOptions& options,
                                                         const CallIdentity& identity,
                                                         SecretReader* reader);

}  // namespace flexcsi
