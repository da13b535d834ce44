// Standard base64 (RFC 4648 with padding), as Go's encoding/json reads and writes []byte fields
// such as certificate-authority-data and ExecCredential's clientCertificateData.
#pragma once

#include <optional>
#include <string>

namespace flexcsi::kube {

std::string Base64Encode(const std::string& bytes);

// Line breaks (\r, \n) are ignored, as Go's decoder does; anything else that is not base64,
// or missing padding, gives nullopt.
std::optional<std::string> Base64Decode(const std::string& text);

}  // namespace flexcsi::kube
