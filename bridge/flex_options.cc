#include "bridge/flex_options.h"

#include <cerrno>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/base64.h"

namespace flexcsi {
namespace {

constexpr char kSecretPrefix[] = "kubernetes.io/secret/";

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

bool IsSecretKey(const std::string& key) { return key.rfind(kSecretPrefix, 0) == 0; }

}  // namespace

StatusOr<FlexOptions> FlexOptions::Parse(const std::string& json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgument("the options argument is not valid JSON");
  }
  if (!j.is_object()) return InvalidArgument("the options argument is not a JSON object");
  FlexOptions o;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) {
      return InvalidArgument("option \"" + it.key() + "\" is not a string (kubelet sends only "
                             "strings)");
    }
    o.all[it.key()] = it.value().get<std::string>();
  }
  o.volume_name = Get(o.all, "kubernetes.io/pvOrVolumeName");
  if (o.volume_name.empty()) {
    return InvalidArgument("option kubernetes.io/pvOrVolumeName is missing or empty");
  }
  o.fs_type = Get(o.all, "kubernetes.io/fsType");
  const std::string rw = Get(o.all, "kubernetes.io/readwrite");
  if (rw != "" && rw != "rw" && rw != "ro") {
    return InvalidArgument("option kubernetes.io/readwrite must be \"rw\" or \"ro\", not \"" + rw +
                           "\"");
  }
  o.readonly = rw == "ro";
  o.pod_name = Get(o.all, "kubernetes.io/pod.name");
  o.pod_namespace = Get(o.all, "kubernetes.io/pod.namespace");
  o.pod_uid = Get(o.all, "kubernetes.io/pod.uid");
  o.service_account = Get(o.all, "kubernetes.io/serviceAccount.name");

  std::string fs_group = Get(o.all, "kubernetes.io/mounterArgs.FsGroup");
  if (fs_group.empty()) fs_group = Get(o.all, "kubernetes.io/fsGroup");
  if (!fs_group.empty()) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(fs_group.c_str(), &end, 10);
    if (errno != 0 || end == fs_group.c_str() || *end != '\0' || v < 0) {
      return InvalidArgument("fsGroup option \"" + fs_group + "\" is not a non-negative integer");
    }
    o.fs_group = v;
  }

  for (const auto& [key, value] : o.all) {
    if (!IsSecretKey(key)) continue;
    const std::string name = key.substr(sizeof(kSecretPrefix) - 1);
    auto decoded = Base64Decode(value);
    if (!decoded.ok()) {
      return InvalidArgument("secret key \"" + name + "\" is not valid base64");
    }
    o.secrets[name] = *decoded;
  }
  return o;
}

std::map<std::string, std::string> FlexOptions::WithoutSecrets() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : all) {
    if (!IsSecretKey(key)) out[key] = value;
  }
  return out;
}

std::string RedactSecretValues(std::string text,
                               const std::map<std::string, std::string>& secrets) {
  static const std::string kRedacted = "<redacted>";
  for (const auto& [name, value] : secrets) {
    if (value.size() < 4) continue;
    for (size_t at = text.find(value); at != std::string::npos;
         at = text.find(value, at + kRedacted.size())) {
      text.replace(at, value.size(), kRedacted);
    }
  }
  return text;
}

}  // namespace flexcsi
