// The FlexVolume options object exactly as kubelet serialises it: a Go map[string]string through
// encoding/json (flexvolume.md section 4). Byte-for-byte fidelity matters because the bridge
// parses what real kubelets send, including the \u003c-style escapes a C++ encoder never makes.
#pragma once

#include <map>
#include <string>

namespace flexcsi {
namespace kubelet {

// A Go string literal as encoding/json writes it (HTML-safe escaping on, which is the default):
// `"`, `\` escaped; \n \r \t; other control characters, <, >, &, U+2028, U+2029 as \u00XX /
// \u2028; invalid UTF-8 bytes as \ufffd; everything else raw UTF-8.
std::string GoJsonString(const std::string& s);

// A map[string]string: compact, keys in bytewise order (std::map<std::string> already sorts
// bytewise), values as GoJsonString.
std::string GoJsonObject(const std::map<std::string, std::string>& m);

// Standard base64 with padding, as kubelet encodes Secret data for the options.
std::string Base64Encode(const std::string& bytes);

}  // namespace kubelet
}  // namespace flexcsi
