#include "bridge/publish_context_token.h"

#include <nlohmann/json.hpp>

#include "common/base64.h"

namespace flexcsi {
namespace {
constexpr char kPrefix[] = "flexcsi-pc1:";
}

std::string EncodePublishContextToken(const PublishContext& context) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : context) j[k] = v;
  return kPrefix + Base64UrlEncode(j.dump());
}

StatusOr<PublishContext> DecodePublishContextToken(const std::string& device) {
  if (device.empty()) return PublishContext();
  if (device.rfind(kPrefix, 0) != 0) {
    return InvalidArgument("device \"" + device +
                           "\" was not produced by flexcsi's attach; re-attach the volume");
  }
  auto json_text = Base64Decode(device.substr(sizeof(kPrefix) - 1));
  if (!json_text.ok()) return InvalidArgument("device token is corrupt: " + json_text.status().message());
  auto j = nlohmann::json::parse(*json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("device token does not hold a publish context object");
  }
  PublishContext context;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) return InvalidArgument("device token holds a non-string value");
    context[it.key()] = it.value().get<std::string>();
  }
  return context;
}

}  // namespace flexcsi
