#include "migrate/workload_scaler.h"

namespace flexcsi::migrate {

using kube::ResourcePath;
using nlohmann::json;

ResourcePath ScaleOf(const ScaledWorkload& w) {
  ResourcePath p = w.group_version == "v1"
                       ? ResourcePath::Core(w.resource, w.namespace_)
                       : ResourcePath::Group(w.group_version, w.resource, w.namespace_);
  return p.Named(w.name).Sub("scale");
}

StatusOr<int64_t> ReadReplicas(kube::KubeClient& client, const ScaledWorkload& w) {
  auto scale = client.Get(ScaleOf(w));
  if (!scale.ok()) return scale.status().WithContext("read scale of " + w.kind + "/" + w.name);
  return scale->value("spec", json::object()).value("replicas", int64_t{0});
}

Status ScaleWorkloadTo(kube::KubeClient& client, const ScaledWorkload& w, int64_t replicas,
                       bool only_from_zero, std::string* note) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto scale = client.Get(ScaleOf(w));
    if (!scale.ok()) {
      if (kube::IsNotFound(scale.status()) && note != nullptr) {
        *note = w.kind + "/" + w.name + " no longer exists";
        return Status::Ok();
      }
      return scale.status().WithContext("read scale of " + w.kind + "/" + w.name);
    }
    const int64_t current = scale->value("spec", json::object()).value("replicas", int64_t{0});
    if (current == replicas) return Status::Ok();
    if (only_from_zero && current != 0) {
      if (note != nullptr) {
        *note = w.kind + "/" + w.name + " left at " + std::to_string(current) +
                " replicas (changed by someone else; recorded " + std::to_string(replicas) + ")";
      }
      return Status::Ok();
    }
    json s = *scale;
    s["spec"]["replicas"] = replicas;
    auto updated = client.Update(ScaleOf(w), s);
    if (updated.ok()) return Status::Ok();
    if (!kube::IsConflict(updated.status())) {
      return updated.status().WithContext("scale " + w.kind + "/" + w.name);
    }
  }
  return Aborted("scale of " + w.kind + "/" + w.name + " kept changing under us");
}

}  // namespace flexcsi::migrate
