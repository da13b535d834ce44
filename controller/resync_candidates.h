// ResyncCandidates: the keys of one informer's objects that a resync must look at, kept by the
// informer's handlers as each object arrives. With 10,000 bound claims and their PVs idle,
// decoding every cached object at every resync (each 30 s) cost 7 CPU s in 10 minutes; the
// objects that may have work (a claim not yet Bound or asking for more, a PV Released or being
// deleted) are a handful.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace flexcsi::controller {

class ResyncCandidates {
 public:
  // `key` is the informer's cache key; `candidate` whether the object as it now is may have
  // work (false for a DELETED one).
  void Update(const std::string& key, bool candidate);
  std::vector<std::string> Keys() const;

 private:
  mutable std::mutex mu_;
  std::set<std::string> keys_;  // guarded by mu_
};

}  // namespace flexcsi::controller
