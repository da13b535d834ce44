// Reading kubeconfig stanzas as clientcmd does: the stanza and the file it came from, and
// typed reads of its fields whose errors name the file and the entry. Shared by the two halves
// of loading, the cluster's (kube_config.cc) and the user's credentials (kubeconfig_user.cc).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi::kube::kubeconfig {

// One named stanza (cluster, user or context) and the file that defined it: relative paths in it
// are relative to that file's directory, and errors name it.
struct Stanza {
  nlohmann::json value;  // the object under "cluster" / "user" / "context"; never null
  std::string origin;
};

std::string Quoted(const std::string& s);

// Resolves a file reference of a stanza against its kubeconfig's directory (ResolveLocalPaths).
std::string ResolveAgainst(const std::string& origin, const std::string& path);

// Typed reads of one field of a stanza; `where` is "<file>: users[alice].user". An absent or
// null field reads as empty (false).
StatusOr<std::string> StringField(const nlohmann::json& object, const char* key,
                                  const std::string& where);
StatusOr<bool> BoolField(const nlohmann::json& object, const char* key, const std::string& where);
// A *-data field: base64 of PEM bytes.
StatusOr<std::string> DataField(const nlohmann::json& object, const char* key,
                                const std::string& where);

}  // namespace flexcsi::kube::kubeconfig
