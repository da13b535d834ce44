#include "migrate/storage_class_selection.h"

#include <algorithm>

#include "migrate/cluster_objects.h"
#include "migrate/storage_class_plan.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

void AddOnce(std::vector<std::string>* names, const std::string& name) {
  if (std::find(names->begin(), names->end(), name) == names->end()) names->push_back(name);
}

StatusOr<std::vector<json>> Items(kube::KubeClient& client, const kube::ResourcePath& path) {
  auto list = client.List(path);
  if (!list.ok()) {
    if (kube::IsNotFound(list.status())) return std::vector<json>();  // not served
    return list.status().WithContext("list " + path.resource);
  }
  std::vector<json> out;
  for (auto& item : (*list)["items"]) out.push_back(std::move(item));
  return out;
}

}  // namespace

StatusOr<StorageClassSelection> SelectStorageClasses(MigrationJournal* journal,
                                                     kube::KubeClient& client,
                                                     const translator::Translator& translator,
                                                     const StorageClassSelectionRequest& request) {
  StorageClassSelection out;
  const bool wants_all = request.all && request.namespace_.empty();
  if (!wants_all && request.names.empty()) return out;
  ClusterObjects objects;
  if (!request.rollback) {
    // Only apply plans classes; the PVs tell which provisioner names flexcsi-controller used.
    auto pvs = Items(client, kube::ResourcePath::Core("persistentvolumes"));
    if (!pvs.ok()) return pvs.status();
    objects.pvs = std::move(*pvs);
    out.flex_provisioners = FlexVolumeProvisioners(objects.pvs);
  }
  if (!wants_all) {
    for (const auto& n : request.names) AddOnce(&out.names, n);
    return out;
  }
  if (journal != nullptr) {
    auto records = journal->ListStorageClasses();
    if (!records.ok()) return records.status();
    for (const auto& r : *records) {
      const bool unfinished = r.state == RecordState::kInProgress;
      const bool rollback_wants = request.rollback && r.state != RecordState::kRolledBack;
      if ((unfinished && r.direction == (request.rollback ? "rollback" : "apply")) ||
          rollback_wants) {
        AddOnce(&out.names, r.name);
      }
    }
  }
  if (!request.rollback) {
    auto classes =
        Items(client, kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses"));
    if (!classes.ok()) return classes.status();
    objects.storageclasses = std::move(*classes);
    for (const auto& plan : PlanStorageClasses(objects, translator)) AddOnce(&out.names, plan.name);
  }
  for (const auto& n : request.names) AddOnce(&out.names, n);
  return out;
}

}  // namespace flexcsi::migrate
