// Whether the configured kubeletRoot is kubelet's root dir. Every kubelet release (1.x to today)
// creates pods/ and plugins/ in its --root-dir each time it starts (setupDataDirs), so a
// directory without them is not kubelet's, or kubelet has not started on this node yet. A bridge
// on the wrong root would mount where kubelet never looks; this makes it say so instead.
#pragma once

#include <mutex>
#include <string>

#include "common/status.h"

namespace flexcsi {

// OK when `kubelet_root` holds the directories pods/ and plugins/; otherwise
// FAILED_PRECONDITION naming what is missing and the setting to fix.
Status CheckKubeletRootIsKubelets(const std::string& kubelet_root);

// The same check, repeated on demand (readiness, bridge.health): a bridge started before kubelet
// on a brand-new node becomes ready once kubelet has made its dirs. Logs each change once (an
// error when the root is wrong, info when it is right again), never on every probe.
// Thread-safe. An empty root (kubeletRoot: none) always passes: nothing is mounted there.
class KubeletRootWatch {
 public:
  explicit KubeletRootWatch(std::string kubelet_root) : root_(std::move(kubelet_root)) {}

  Status Check();

 private:
  const std::string root_;
  std::mutex mu_;
  bool checked_ = false;  // guarded by mu_
  bool was_ok_ = false;   // guarded by mu_
};

}  // namespace flexcsi
