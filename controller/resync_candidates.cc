#include "controller/resync_candidates.h"

namespace flexcsi::controller {

void ResyncCandidates::Update(const std::string& key, bool candidate) {
  std::lock_guard<std::mutex> lock(mu_);
  if (candidate) {
    keys_.insert(key);
  } else {
    keys_.erase(key);
  }
}

std::vector<std::string> ResyncCandidates::Keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {keys_.begin(), keys_.end()};
}

}  // namespace flexcsi::controller
