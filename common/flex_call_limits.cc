#include "common/flex_call_limits.h"

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace {

enum class ArgKind { kOptions, kName, kPath, kDevice, kSize };

// argv[2..] of each call that carries arguments (flexvolume.md §2.1).
const std::vector<ArgKind>* ArgKindsOf(const std::string& call) {
  using K = ArgKind;
  static const auto* table = new std::map<std::string, std::vector<ArgKind>>{
      {"attach", {K::kOptions, K::kName}},
      {"isattached", {K::kOptions, K::kName}},
      {"detach", {K::kName, K::kName}},
      {"waitforattach", {K::kDevice, K::kOptions}},
      {"mountdevice", {K::kPath, K::kDevice, K::kOptions}},
      {"unmountdevice", {K::kPath}},
      {"mount", {K::kPath, K::kOptions}},
      {"unmount", {K::kPath}},
      {"expandvolume", {K::kOptions, K::kPath, K::kSize, K::kSize}},
      {"expandfs", {K::kOptions, K::kDevice, K::kPath, K::kSize, K::kSize}},
  };
  auto it = table->find(call);
  return it == table->end() ? nullptr : &it->second;
}

constexpr char kSecretPrefix[] = "kubernetes.io/secret/";

Status TooLong(const std::string& what, size_t size, size_t limit) {
  return InvalidArgument(what + " is " + std::to_string(size) + " bytes; the limit is " +
                         std::to_string(limit) + " bytes");
}

// At most the first 64 bytes of a name too long to show, cut before a character rather than
// inside one, so that the message stays UTF-8.
std::string CutName(const std::string& name) {
  size_t n = 64;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return name.substr(0, n) + "...";
}

// The name of an option for a message: quoted, and cut short when it is itself too long.
std::string OptionName(const std::string& key) {
  if (key.size() <= 64) return "option \"" + key + "\"";
  return "option \"" + CutName(key) + "\"";
}

Status CheckOptions(const std::string& json_text) {
  if (json_text.size() > kMaxOptionsJsonBytes) {
    return TooLong("the options argument", json_text.size(), kMaxOptionsJsonBytes);
  }
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Ok();  // the parser's message is better
  size_t secret_bytes = 0;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (!it.value().is_string()) continue;  // the parser refuses it
    const std::string& value = it.value().get_ref<const std::string&>();
    if (key.rfind(kSecretPrefix, 0) == 0) {
      // Secret keys are Kubernetes Secret data keys; the value is never shown.
      if (key.size() - (sizeof(kSecretPrefix) - 1) > kMaxNameBytes) {
        return TooLong("the name of secret " + OptionName(key),
                       key.size() - (sizeof(kSecretPrefix) - 1), kMaxNameBytes);
      }
      secret_bytes += value.size() / 4 * 3;  // decoded size of base64, near enough
      if (secret_bytes > kMaxSecretBytes) {
        return InvalidArgument("the secrets (kubernetes.io/secret/*) are " +
                               std::to_string(secret_bytes) +
                               " bytes or more decoded; the limit is " +
                               std::to_string(kMaxSecretBytes) + " bytes, a Kubernetes Secret's");
      }
      continue;
    }
    if (key.size() > kMaxCsiStringBytes) {
      return TooLong("the name of " + OptionName(key), key.size(), kMaxCsiStringBytes);
    }
    const size_t limit = key == "kubernetes.io/pvOrVolumeName" ? kMaxNameBytes : kMaxCsiStringBytes;
    if (value.size() > limit) return TooLong(OptionName(key), value.size(), limit);
  }
  return Status::Ok();
}

}  // namespace

Status CheckFlexCallLimits(const std::string& call, const std::vector<std::string>& args) {
  const std::vector<ArgKind>* kinds = ArgKindsOf(call);
  if (kinds == nullptr) return Status::Ok();
  for (size_t i = 0; i < args.size() && i < kinds->size(); ++i) {
    const std::string& a = args[i];
    const std::string which = call + " argument " + std::to_string(i + 1);
    switch ((*kinds)[i]) {
      case ArgKind::kOptions:
        FLEXCSI_RETURN_IF_ERROR(CheckOptions(a));
        break;
      case ArgKind::kName:
        if (a.size() > kMaxNameBytes) return TooLong(which + " (a name)", a.size(), kMaxNameBytes);
        break;
      case ArgKind::kPath:
        if (a.size() > kMaxPathBytes) return TooLong(which + " (a path)", a.size(), kMaxPathBytes);
        break;
      case ArgKind::kDevice:
        if (a.size() > kMaxDeviceBytes) {
          return TooLong(which + " (the device)", a.size(), kMaxDeviceBytes);
        }
        break;
      case ArgKind::kSize:
        if (a.size() > kMaxSizeArgBytes) {
          return TooLong(which + " (a size)", a.size(), kMaxSizeArgBytes);
        }
        break;
    }
  }
  return Status::Ok();
}

Status CheckCsiVolumeLimits(const std::string& volume_id,
                            const std::map<std::string, std::string>& volume_attributes) {
  if (volume_id.empty()) return InvalidArgument("the volume ID is empty");
  if (volume_id.size() > kMaxCsiStringBytes) {
    return TooLong("the volume ID", volume_id.size(), kMaxCsiStringBytes);
  }
  for (const auto& [key, value] : volume_attributes) {
    if (key.size() > kMaxCsiStringBytes) {
      return TooLong("the name of volume attribute \"" + CutName(key) + "\"", key.size(),
                     kMaxCsiStringBytes);
    }
    if (value.size() > kMaxCsiStringBytes) {
      return TooLong("volume attribute \"" + key + "\"", value.size(), kMaxCsiStringBytes);
    }
  }
  return Status::Ok();
}

}  // namespace flexcsi
