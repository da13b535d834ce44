// Standard (RFC 4648 §4) and URL-safe (§5) base64, the one implementation in flexcsi. kubelet
// sends secrets in standard base64 with padding; the publish-context token inside a device path
// uses the URL-safe alphabet without padding so that it stays a single path-friendly word;
// kubeconfig `*-data` fields and ExecCredentials hold []byte as Go's encoding/json writes it.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

std::string Base64Encode(const std::string& bytes);
std::string Base64UrlEncode(const std::string& bytes);  // no padding
// Accepts either alphabet, with or without padding; rejects anything else.
StatusOr<std::string> Base64Decode(const std::string& text);
// As Go's encoding/json reads a []byte field: standard alphabet, padding required, line breaks
// (\r, \n) ignored. kubectl refuses anything else in a kubeconfig, and so do we.
StatusOr<std::string> Base64DecodeStandard(const std::string& text);

}  // namespace flexcsi
