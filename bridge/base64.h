// Standard (RFC 4648 §4) and URL-safe (§5) base64. kubelet sends secrets in standard base64 with
// padding; the publish-context token inside a device path uses the URL-safe alphabet without
// padding so that it stays a single path-friendly word.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

std::string Base64Encode(const std::string& bytes);
std::string Base64UrlEncode(const std::string& bytes);  // no padding
// Accepts either alphabet, with or without padding; rejects anything else.
StatusOr<std::string> Base64Decode(const std::string& text);

}  // namespace flexcsi
