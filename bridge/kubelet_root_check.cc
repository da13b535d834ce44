#include "bridge/kubelet_root_check.h"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

namespace flexcsi {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Status CheckKubeletRootIsKubelets(const std::string& kubelet_root) {
  const std::string fix =
      "set kubeletRoot in the bridge configuration to kubelet's --root-dir (in deploy/: "
      "kubeletRoot of ConfigMap flexcsi-node-paths, docs/operations.md \"Nodes that keep "
      "kubelet elsewhere\"), or start kubelet first";
  if (!IsDirectory(kubelet_root)) {
    return FailedPrecondition("kubeletRoot " + kubelet_root + " is not a directory; " + fix);
  }
  std::string missing;
  for (const char* sub : {"pods", "plugins"}) {
    if (!IsDirectory(kubelet_root + "/" + sub)) {
      missing += (missing.empty() ? "" : " and ") + std::string(sub) + "/";
    }
  }
  if (!missing.empty()) {
    return FailedPrecondition("kubeletRoot " + kubelet_root +
                              " is not kubelet's root dir: it has no " + missing +
                              " (kubelet creates pods/ and plugins/ there whenever it "
                              "starts); " +
                              fix);
  }
  return Status::Ok();
}

Status KubeletRootWatch::Check() {
  if (root_.empty()) return Status::Ok();
  Status status = CheckKubeletRootIsKubelets(root_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!checked_ || was_ok_ != status.ok()) {
    if (status.ok()) {
      spdlog::info("kubelet root {}: pods/ and plugins/ are there", root_);
    } else {
      spdlog::error("not ready: {}", status.message());
    }
  }
  checked_ = true;
  was_ok_ = status.ok();
  return status;
}

}  // namespace flexcsi
