#include "migrate/rollback_selection.h"

#include <map>
#include <set>

#include "migrate/cluster_objects.h"
#include "migrate/planner.h"

namespace flexcsi::migrate {

StatusOr<RollbackSelection> SelectForRollback(MigrationJournal& journal, kube::KubeClient& client,
                                              const translator::Translator& translator,
                                              const RollbackSelectionRequest& request) {
  RollbackSelection sel;
  auto records = journal.List();
  if (!records.ok()) return records.status();
  auto groups = journal.ListGroups();
  if (!groups.ok()) return groups.status();
  std::map<std::string, const MigrationRecord*> row_of;
  for (const auto& r : *records) row_of[r.pv_name] = &r;

  // The PVs to roll back, in order: the journal's (--all) or as named (a name without a row is
  // left to the mover, which refuses it).
  std::vector<std::string> wanted;
  if (request.all) {
    for (const auto& r : *records) {
      if (r.state != RecordState::kRolledBack) wanted.push_back(r.pv_name);
    }
  } else {
    std::set<std::string> seen;
    for (const auto& pv : request.pvs) {
      if (seen.insert(pv).second) wanted.push_back(pv);
    }
  }
  const std::set<std::string> wanted_set(wanted.begin(), wanted.end());

  std::set<std::string> taken;
  for (const auto& g : *groups) {
    if (g.step == "group-done") continue;
    MoveUnit unit{g.workloads, {}};
    for (const auto& pv : g.members) {
      if (wanted_set.count(pv) && taken.insert(pv).second) unit.pvs.push_back(pv);
    }
    if (!unit.pvs.empty()) sel.units.push_back(std::move(unit));
  }

  // Finished applies are grouped afresh (with --scale-down); everything else goes alone.
  std::vector<std::string> fresh;
  for (const auto& pv : wanted) {
    if (taken.count(pv)) continue;
    auto row = row_of.find(pv);
    if (request.scale_down && row != row_of.end() && row->second->state == RecordState::kMoved) {
      fresh.push_back(pv);
    } else {
      sel.units.push_back(MoveUnit{{}, {pv}});
    }
  }
  if (fresh.empty()) return sel;

  auto objects = ListClusterObjects(client, "");
  if (!objects.ok()) return objects.status();
  ClusterIndex index(*objects);
  std::vector<VolumePlan> planned;
  planned.reserve(fresh.size());
  for (const auto& pv : fresh) {
    // The journaled original names the claim; the pods holding it now are what counts.
    planned.push_back(PlanVolume(row_of[pv]->original_pv, index, translator));
  }
  std::vector<const VolumePlan*> candidates;
  for (const auto& v : planned) {
    const std::string refusal = InUseRefusal(v.pods, true);
    if (refusal.empty()) {
      candidates.push_back(&v);
      continue;
    }
    const MigrationRecord& r = *row_of[v.pv_name];
    MoveResult refused;
    refused.pv_name = v.pv_name;
    refused.claim = r.ClaimKey();
    refused.csi_driver = Str(r.target_pv, "/spec/csi/driver"_json_pointer);
    refused.outcome = Outcome::kRefused;
    refused.step = r.step;
    refused.message = refusal;
    sel.refused.push_back(std::move(refused));
  }
  for (auto& unit : GroupByWorkload(candidates)) sel.units.push_back(std::move(unit));
  return sel;
}

}  // namespace flexcsi::migrate
