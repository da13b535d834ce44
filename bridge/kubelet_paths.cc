#include "bridge/kubelet_paths.h"

#include <openssl/evp.h>

#include <climits>
#include <cstdlib>
#include <optional>
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

// Splits `text` on `separator`; nullopt unless there are at least two parts and none is empty.
std::optional<std::vector<std::string>> SplitDriverName(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    if (out.back().empty()) return std::nullopt;
    if (end == text.size()) break;
    start = end + 1;
  }
  if (out.size() < 2) return std::nullopt;
  return out;
}

std::string JoinDriverName(const std::vector<std::string>& parts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) out += (i == begin ? "" : "/") + parts[i];
  return out;
}

// The shape of `rel` (the components below the kubelet root), without `path`; nullopt for none.
// Driver names are "vendor/name" with at least two non-empty parts and no "~", as the bridge
// config requires of flexDriver.
std::optional<KubeletPath> MatchKubeletShape(const std::vector<std::string>& rel) {
  KubeletPath out;
  if (rel.size() == 5 && rel[0] == "pods" && rel[2] == "volumes") {
    auto driver = SplitDriverName(rel[3], '~');
    if (!driver) return std::nullopt;
    out.kind = KubeletPathKind::kPodVolumeDir;
    out.pod_uid = rel[1];
    out.flex_driver = JoinDriverName(*driver, 0, driver->size());
    out.volume_name = rel[4];
    return out;
  }
  const size_t n = rel.size();
  if (n >= 7 && rel[0] == "plugins" && rel[1] == "kubernetes.io" && rel[2] == "flexvolume" &&
      rel[n - 2] == "mounts") {
    for (size_t i = 3; i < n - 2; ++i) {
      if (rel[i].find('~') != std::string::npos) return std::nullopt;
    }
    out.kind = KubeletPathKind::kDeviceMountPath;
    out.flex_driver = JoinDriverName(rel, 3, n - 2);
    out.volume_name = rel[n - 1];
    return out;
  }
  return std::nullopt;
}

const char* KubeletPathShapeName(KubeletPathKind kind) {
  return kind == KubeletPathKind::kPodVolumeDir ? "pod volume dir" : "device mount path";
}

Status NotAKubeletPath(const std::string& path, const std::string& root) {
  return InvalidArgument("path \"" + path +
                         "\" is not a path kubelet gives a FlexVolume driver; flexcsi accepts "
                         "only " +
                         root + "/pods/<podUID>/volumes/<vendor>~<driver>/<volumeName> and " +
                         root +
                         "/plugins/kubernetes.io/flexvolume/<vendor>/<driver>/mounts/<volumeName>");
}

}  // namespace

std::vector<std::string> RecordKeysOf(const KubeletPath& path) {
  if (path.given_path.empty() || path.given_path == path.path) return {path.path};
  return {path.path, path.given_path};
}

StatusOr<KubeletPath> ParseKubeletPath(const std::string& path, const std::string& kubelet_root) {
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
  auto given = MatchKubeletShape(
      std::vector<std::string>(parts.begin() + static_cast<long>(root_parts.size()), parts.end()));
  if (!given) return NotAKubeletPath(path, root);

  const std::string real = ResolveExistingPrefix(parts);
  const std::string real_root = ResolveExistingPrefix(root_parts);
  if (!IsStrictlyBelow(real, real_root)) {
    return InvalidArgument("path \"" + path + "\" resolves to " + real +
                           ", outside the kubelet root " + real_root);
  }
  bool unused = false;
  auto real_parts = Components(real, &unused);
  const size_t real_root_size = Components(real_root, &unused).size();
  auto resolved = MatchKubeletShape(std::vector<std::string>(
      real_parts.begin() + static_cast<long>(real_root_size), real_parts.end()));
  if (!resolved || resolved->kind != given->kind || resolved->pod_uid != given->pod_uid ||
      resolved->flex_driver != given->flex_driver ||
      resolved->volume_name != given->volume_name) {
    return InvalidArgument("path \"" + path + "\" resolves to " + real +
                           ", which is not the same " + KubeletPathShapeName(given->kind) +
                           " below the kubelet root " + real_root + " (a symlink leads elsewhere)");
  }
  resolved->path = real;
  resolved->given_path = normal;
  return *resolved;
}

StatusOr<std::string> CheckUnderKubeletRoot(const std::string& path,
                                            const std::string& kubelet_root) {
  auto parsed = ParseKubeletPath(path, kubelet_root);
  if (!parsed.ok()) return parsed.status();
  return parsed->path;
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
