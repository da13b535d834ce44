#include <utility>

#include "kube/kube_client.h"

namespace flexcsi::kube {
namespace {

// Percent-encodes one path segment. Object names are DNS-like in practice, but a name comes
// from user input (--pv NAME), and "a/b" or ".." must never address a different URL.
std::string EscapeSegment(const std::string& segment) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : segment) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '@';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (out == "." || out == "..") {
    // Dot segments would be removed by URL normalisation; encoded, the server sees the name.
    std::string dots;
    for (size_t i = 0; i < out.size(); ++i) dots += "%2E";
    return dots;
  }
  return out;
}

}  // namespace

ResourcePath ResourcePath::Core(std::string resource, std::string ns) {
  return Group("v1", std::move(resource), std::move(ns));
}

ResourcePath ResourcePath::Group(std::string group_version, std::string resource, std::string ns) {
  ResourcePath path;
  path.group_version = std::move(group_version);
  path.resource = std::move(resource);
  path.namespace_ = std::move(ns);
  return path;
}

ResourcePath ResourcePath::Named(std::string object_name) const {
  ResourcePath path = *this;
  path.name = std::move(object_name);
  return path;
}

ResourcePath ResourcePath::Sub(std::string subresource_name) const {
  ResourcePath path = *this;
  path.subresource = std::move(subresource_name);
  return path;
}

std::string ResourcePath::UrlPath() const {
  // The core group is the only one served under /api; its group_version has no '/'.
  std::string url = group_version.find('/') == std::string::npos ? "/api/" : "/apis/";
  url += group_version;
  if (!namespace_.empty()) url += "/namespaces/" + EscapeSegment(namespace_);
  url += "/" + EscapeSegment(resource);
  if (!name.empty()) url += "/" + EscapeSegment(name);
  if (!subresource.empty()) url += "/" + EscapeSegment(subresource);
  return url;
}

}  // namespace flexcsi::kube
