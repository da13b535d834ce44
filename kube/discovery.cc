#include "kube/discovery.h"

#include <cctype>

namespace flexcsi::kube {
namespace {

// Leading decimal digits of `text` from `pos` ("10+" -> 10); -1 when there are none.
int LeadingNumber(const std::string& text, size_t* pos) {
  size_t i = *pos;
  int value = 0;
  bool any = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && value < 100000) {
    value = value * 10 + (text[i] - '0');
    ++i;
    any = true;
  }
  *pos = i;
  return any ? value : -1;
}

}  // namespace

bool ServerVersion::AtLeast(int want_major, int want_minor) const {
  if (!known()) return true;
  return major != want_major ? major > want_major : minor >= want_minor;
}

std::string ServerVersion::Describe() const {
  if (!known()) return "an unknown version";
  return git_version.empty() ? "v" + std::to_string(major) + "." + std::to_string(minor)
                             : git_version;
}

StatusOr<ServerVersion> ParseServerVersion(const nlohmann::json& info) {
  ServerVersion v;
  if (!info.is_object()) return InvalidArgument("/version: the answer is not an object");
  v.git_version = info.value("gitVersion", "");
  const std::string& git = v.git_version;
  if (git.size() > 1 && git[0] == 'v') {
    size_t pos = 1;
    const int major = LeadingNumber(git, &pos);
    if (major > 0 && pos < git.size() && git[pos] == '.') {
      ++pos;
      const int minor = LeadingNumber(git, &pos);
      if (minor >= 0) {
        v.major = major;
        v.minor = minor;
        return v;
      }
    }
  }
  const std::string major_text = info.value("major", "");
  const std::string minor_text = info.value("minor", "");
  size_t p1 = 0, p2 = 0;
  const int major = LeadingNumber(major_text, &p1);
  const int minor = LeadingNumber(minor_text, &p2);
  if (major <= 0 || minor < 0) {
    return InvalidArgument("/version: neither gitVersion \"" + git + "\" nor major \"" +
                           major_text + "\" / minor \"" + minor_text + "\" is a version");
  }
  v.major = major;
  v.minor = minor;
  return v;
}

StatusOr<ServerVersion> GetServerVersion(KubeClient& client) {
  auto info = client.GetPath("/version");
  if (!info.ok()) return info.status().WithContext("GET /version");
  return ParseServerVersion(*info);
}

StatusOr<bool> ServesResource(KubeClient& client, const std::string& group_version,
                              const std::string& resource) {
  const std::string path =
      (group_version.find('/') == std::string::npos ? "/api/" : "/apis/") + group_version;
  auto list = client.GetPath(path);
  if (!list.ok()) {
    if (IsNotFound(list.status())) return false;
    return list.status().WithContext("GET " + path);
  }
  const auto it = list->find("resources");
  if (it == list->end() || !it->is_array()) return false;
  for (const auto& r : *it) {
    if (r.is_object() && r.value("name", "") == resource) return true;
  }
  return false;
}

StatusOr<std::string> CsiNodeGroupVersion(KubeClient& client) {
  for (const char* group_version : {"storage.k8s.io/v1", "storage.k8s.io/v1beta1"}) {
    auto served = ServesResource(client, group_version, "csinodes");
    if (!served.ok()) return served.status();
    if (*served) return std::string(group_version);
  }
  return std::string();
}

}  // namespace flexcsi::kube
