#include "bridge/kubelet_paths.h"

#include <openssl/evp.h>

#include <climits>
#include <cstdlib>
#include <vector>

namespace flexcsi {
namespace {

// Splits on "/" and drops empty and "." components; reports whether a ".." was seen.
std::vector<std::string> Components(const std::string& path, bool* has_dotdot) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part == "..") *has_dotdot = true;
    if (!part.empty() && part != ".") parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += "/" + parts[i];
  return out.empty() ? "/" : out;
}

bool IsStrictlyBelow(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1;
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
         path[root.size()] == '/';
}

// realpath() of the longest existing prefix of `path`, with the rest appended unchanged.
std::string ResolveExistingPrefix(const std::vector<std::string>& parts) {
  for (size_t n = parts.size(); n > 0; --n) {
    char resolved[PATH_MAX];
    if (realpath(Join(parts, n).c_str(), resolved) != nullptr) {
      std::string out = resolved;
      for (size_t i = n; i < parts.size(); ++i) out += (out == "/" ? "" : "/") + parts[i];
      return out;
    }
  }
  return Join(parts, parts.size());
}

}  // namespace

StatusOr<std::string> CheckUnderKubeletRoot(const std::string& path,
                                            const std::string& kubelet_root) {
  if (kubelet_root.empty()) {
    return FailedPrecondition(
        "this bridge has kubeletRoot: none (it serves kube-controller-manager); kubelet's calls "
        "belong to the node bridge");
  }
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("path \"" + path + "\" is not absolute");
  }
  bool dotdot = false;
  auto parts = Components(path, &dotdot);
  if (dotdot) return InvalidArgument("path \"" + path + "\" contains \"..\"");
  bool root_dotdot = false;
  auto root_parts = Components(kubelet_root, &root_dotdot);
  const std::string normal = Join(parts, parts.size());
  const std::string root = Join(root_parts, root_parts.size());
  if (!IsStrictlyBelow(normal, root)) {
    return InvalidArgument("path \"" + path + "\" is outside the kubelet root " + root +
                           "; flexcsi only mounts below it (set kubeletRoot in the bridge "
                           "config if kubelet runs with another --root-dir)");
  }
  const std::string real = ResolveExistingPrefix(parts);
  const std::string real_root = ResolveExistingPrefix(root_parts);
  if (!IsStrictlyBelow(real, real_root)) {
    return InvalidArgument("path \"" + path + "\" resolves to " + real +
                           ", outside the kubelet root " + real_root);
  }
  return normal;
}

std::string DeviceMountPathFor(const std::string& kubelet_root, const std::string& flex_driver,
                               const std::string& volume_name) {
  return kubelet_root + "/plugins/kubernetes.io/flexvolume/" + flex_driver + "/mounts/" +
         volume_name;
}

std::string BridgeStagingPathFor(const std::string& kubelet_root, const std::string& csi_driver,
                                 const std::string& volume_id) {
  return kubelet_root + "/plugins/flexcsi/" + csi_driver + "/" + Sha256Hex(volume_id) +
         "/globalmount";
}

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace flexcsi
