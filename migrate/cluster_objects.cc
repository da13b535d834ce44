#include "migrate/cluster_objects.h"

namespace flexcsi::migrate {

using nlohmann::json;

std::string Str(const json& object, const json::json_pointer& ptr) {
  if (!object.is_object() || !object.contains(ptr)) return "";
  const json& v = object.at(ptr);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string NameOf(const json& object) { return Str(object, "/metadata/name"_json_pointer); }
std::string NamespaceOf(const json& object) {
  return Str(object, "/metadata/namespace"_json_pointer);
}
std::string UidOf(const json& object) { return Str(object, "/metadata/uid"_json_pointer); }

json StripServerFields(const json& object) {
  json copy = object;
  if (!copy.is_object()) return copy;
  copy.erase("status");
  if (copy.contains("metadata") && copy["metadata"].is_object()) {
    json& md = copy["metadata"];
    for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "generation", "managedFields",
                              "selfLink"}) {
      md.erase(field);
    }
  }
  if (copy.contains("spec") && copy["spec"].is_object() && copy["spec"].contains("claimRef") &&
      copy["spec"]["claimRef"].is_object()) {
    copy["spec"]["claimRef"].erase("resourceVersion");
  }
  return copy;
}

namespace {

// Lists one collection into `out`. `optional` collections may be missing on the server.
// `served` (when given) says whether the server knew the collection: false after an optional
// one's 404.
Status ListInto(kube::KubeClient& client, const kube::ResourcePath& path, bool optional,
                std::vector<json>* out, bool* served = nullptr) {
  auto list = client.List(path);
  if (served != nullptr) *served = list.ok();
  if (!list.ok()) {
    if (optional && kube::IsNotFound(list.status())) return Status::Ok();
    return list.status().WithContext("list " + path.resource);
  }
  json& items = (*list)["items"];
  if (items.is_array()) {
    // Moved, not copied, and without server-side apply's bookkeeping, which nothing here reads
    // (StripServerFields drops it from anything written back): `plan` of 10,000 PVs peaked at
    // 382 MiB holding each list twice.
    out->reserve(out->size() + items.size());
    for (auto& item : items) {
      if (item.contains("metadata") && item["metadata"].is_object()) {
        item["metadata"].erase("managedFields");
      }
      out->push_back(std::move(item));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ClusterObjects> ListClusterObjects(kube::KubeClient& client, const std::string& ns) {
  using kube::ResourcePath;
  ClusterObjects o;
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Core("persistentvolumes"), false, &o.pvs));
  FLEXCSI_RETURN_IF_ERROR(
      ListInto(client, ResourcePath::Core("persistentvolumeclaims", ns), false, &o.pvcs));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Core("pods", ns), false, &o.pods));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("apps/v1", "replicasets", ns),
                                   false, &o.replicasets));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("apps/v1", "deployments", ns),
                                   false, &o.deployments));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("apps/v1", "statefulsets", ns),
                                   false, &o.statefulsets));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("apps/v1", "daemonsets", ns),
                                   false, &o.daemonsets));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Core("replicationcontrollers", ns), true,
                                   &o.replicationcontrollers));
  FLEXCSI_RETURN_IF_ERROR(
      ListInto(client, ResourcePath::Group("batch/v1", "jobs", ns), true, &o.jobs));
  FLEXCSI_RETURN_IF_ERROR(
      ListInto(client, ResourcePath::Group("batch/v1", "cronjobs", ns), true, &o.cronjobs));
  FLEXCSI_RETURN_IF_ERROR(ListDriverRegistrations(client, &o));
  FLEXCSI_RETURN_IF_ERROR(ListHorizontalPodAutoscalers(client, ns, &o.hpas));
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("storage.k8s.io/v1", "storageclasses"),
                                   true, &o.storageclasses));
  return o;
}

Status ListDriverRegistrations(kube::KubeClient& client, ClusterObjects* o) {
  using kube::ResourcePath;
  // CSIDriver is storage.k8s.io/v1 from 1.18, a built-in v1beta1 from 1.14 (1.14-1.17 serve
  // only that; the name, all the planner reads, is the same), none before.
  bool csidrivers_served = false;
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("storage.k8s.io/v1", "csidrivers"),
                                   true, &o->csidrivers, &csidrivers_served));
  if (!csidrivers_served) {
    FLEXCSI_RETURN_IF_ERROR(ListInto(
        client, ResourcePath::Group("storage.k8s.io/v1beta1", "csidrivers"), true, &o->csidrivers));
  }
  bool csinodes_served = false;
  FLEXCSI_RETURN_IF_ERROR(ListInto(client, ResourcePath::Group("storage.k8s.io/v1", "csinodes"),
                                   true, &o->csinodes, &csinodes_served));
  if (csinodes_served) return Status::Ok();
  // A cluster before 1.17: 1.14-1.16 serve CSINode as v1beta1 only, 1.13 not at all. kubelet
  // writes each registration into the Node's csi.volume.kubernetes.io/nodeid annotation on every
  // version from 1.12 on, as the bridge does.
  o->nodes.clear();
  return ListInto(client, ResourcePath::Core("nodes"), false, &o->nodes);
}

Status ListLeftoverObjects(kube::KubeClient& client, ClusterObjects* o) {
  using kube::ResourcePath;
  FLEXCSI_RETURN_IF_ERROR(ListInto(
      client, ResourcePath::Group("storage.k8s.io/v1", "volumeattachments"), true,
      &o->volumeattachments));
  o->nodes.clear();  // ListDriverRegistrations may have listed them already
  return ListInto(client, ResourcePath::Core("nodes"), false, &o->nodes);
}

Status ListHorizontalPodAutoscalers(kube::KubeClient& client, const std::string& ns,
                                    std::vector<json>* out) {
  using kube::ResourcePath;
  auto v2 = client.List(ResourcePath::Group("autoscaling/v2", "horizontalpodautoscalers", ns));
  if (v2.ok()) {
    for (auto& item : (*v2)["items"]) out->push_back(std::move(item));
    return Status::Ok();
  }
  if (!kube::IsNotFound(v2.status())) {
    return v2.status().WithContext("list horizontalpodautoscalers");
  }
  return ListInto(client, ResourcePath::Group("autoscaling/v1", "horizontalpodautoscalers", ns),
                  true, out);
}

}  // namespace flexcsi::migrate
