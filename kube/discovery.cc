#include "kube/discovery.h"

#include <cctype>

namespace flexcsi::kube {
namespace {

// "10", "10+", "10-gke.1": the leading digits; -1 when there are none.
int LeadingNumber(const std::string& text) {
  int value = -1;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    value = (value < 0 ? 0 : value * 10) + (c - '0');
    if (value > 100000) return -1;
  }
  return value;
}

}  // namespace

StatusOr<ServerVersion> ParseServerVersion(const nlohmann::json& answer) {
  if (!answer.is_object()) return Status(Code::kDataLoss, "/version: the answer is not an object");
  auto text = [&](const char* key) {
    auto it = answer.find(key);
    return it != answer.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  ServerVersion v;
  v.git_version = text("gitVersion");
  v.major = LeadingNumber(text("major"));
  v.minor = LeadingNumber(text("minor"));
  if (v.major < 0 || v.minor < 0) {
    return Status(Code::kDataLoss, "/version: no numeric major and minor in " + answer.dump());
  }
  return v;
}

StatusOr<ServerVersion> GetServerVersion(KubeClient& client) {
  auto answer = client.GetNonResource("/version");
  if (!answer.ok()) return answer.status();
  return ParseServerVersion(*answer);
}

StatusOr<bool> ServesResource(KubeClient& client, const std::string& group_version,
                              const std::string& resource) {
  const std::string path =
      (group_version.find('/') == std::string::npos ? "/api/" : "/apis/") + group_version;
  auto list = client.GetNonResource(path);
  if (!list.ok()) {
    if (IsNotFound(list.status())) return false;  // the group version itself is not served
    return list.status();
  }
  auto resources = list->find("resources");
  if (resources == list->end() || !resources->is_array()) return false;
  for (const auto& r : *resources) {
    if (r.is_object() && r.value("name", "") == resource) return true;
  }
  return false;
}

}  // namespace flexcsi::kube
