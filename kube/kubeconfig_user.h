// The user half of a kubeconfig: a users[] stanza's credentials (token or tokenFile, client
// certificate and key, basic auth, an exec plugin) into a ClientConfig, with clientcmd's
// validation and messages.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/kube_config.h"
#include "kube/kubeconfig_fields.h"

namespace flexcsi::kube::kubeconfig {

// Fills the credentials of `config` from the user stanza named `name`.
Status ApplyUser(const std::string& name, const Stanza& stanza, ClientConfig* config);

}  // namespace flexcsi::kube::kubeconfig
