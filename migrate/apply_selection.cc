#include "migrate/apply_selection.h"

#include <map>
#include <set>

#include "migrate/cluster_objects.h"
#include "migrate/planner.h"

namespace flexcsi::migrate {

StatusOr<ApplySelection> SelectForApply(MigrationJournal* journal, kube::KubeClient& client,
                                        const translator::Translator& translator,
                                        const ApplySelectionRequest& request) {
  ApplySelection sel;
  std::set<std::string> taken;
  const std::set<std::string> named(request.pvs.begin(), request.pvs.end());
  auto wanted = [&](const std::string& pv) { return request.all || named.count(pv) > 0; };

  if (journal != nullptr) {
    auto groups = journal->ListGroups();
    if (!groups.ok()) return groups.status();
    auto records = journal->List();
    if (!records.ok()) return records.status();
    std::set<std::string> rolled_back;
    for (const auto& r : *records) {
      if (r.state == RecordState::kRolledBack) rolled_back.insert(r.pv_name);
    }
    for (const auto& g : *groups) {
      if (g.step == "group-done") continue;
      bool selected = false;
      for (const auto& pv : g.members) selected = selected || wanted(pv);
      if (!selected) continue;
      // Every member, moved ones too: they answer "already moved" at once, and the group's
      // replicas are restored after its last member (which may be one that is done already).
      MoveUnit unit{g.workloads, {}};
      // A member rolled back since is not moved again unless named (or --all plans it).
      for (const auto& pv : g.members) {
        if (rolled_back.count(pv) && !named.count(pv)) continue;
        if (taken.insert(pv).second) unit.pvs.push_back(pv);
      }
      if (!unit.pvs.empty()) sel.units.push_back(std::move(unit));
    }
    for (const auto& r : *records) {
      if (r.state != RecordState::kInProgress || r.direction != "apply" || !wanted(r.pv_name)) {
        continue;
      }
      if (taken.insert(r.pv_name).second) sel.units.push_back(MoveUnit{{}, {r.pv_name}});
    }
  }

  std::vector<VolumePlan> planned;
  if (request.all || request.group_by_workload) {
    auto objects = ListClusterObjects(client, request.namespace_);
    if (!objects.ok()) return objects.status();
    planned = BuildPlan(*objects, translator, PlanOptions{request.namespace_}).volumes;
  }
  std::map<std::string, const VolumePlan*> plan_of;
  for (const auto& v : planned) plan_of[v.pv_name] = &v;

  std::vector<const VolumePlan*> candidates;
  std::vector<std::string> alone;  // named PVs the plan does not list (the mover says why)
  auto refuse = [&](const VolumePlan& v, const std::string& why) {
    MoveResult r;
    r.pv_name = v.pv_name;
    r.claim = v.ClaimKey();
    r.csi_driver = v.csi_driver;
    r.outcome = Outcome::kRefused;
    r.message = why;
    sel.refused.push_back(r);
  };
  // A PV some of whose pods cannot be scaled is refused here, before its group is formed: its
  // workloads are not scaled down (and up again) for a PV that will not move.
  auto unscalable = [&](const VolumePlan& v) {
    return v.verdict == Verdict::kInUse && request.scale_down ? InUseRefusal(v.pods, true)
                                                              : std::string();
  };
  if (request.all) {
    for (const auto& v : planned) {
      if (taken.count(v.pv_name)) continue;
      taken.insert(v.pv_name);
      const std::string refusal = unscalable(v);
      if (!refusal.empty()) {
        refuse(v, refusal);
      } else if (v.verdict == Verdict::kCanMove ||
                 (v.verdict == Verdict::kInUse && request.scale_down)) {
        candidates.push_back(&v);
      } else {
        refuse(v, std::string(VerdictName(v.verdict)) + ": " + v.reason);
      }
    }
  } else {
    for (const auto& pv : request.pvs) {
      if (!taken.insert(pv).second) continue;
      auto it = plan_of.find(pv);
      if (!request.group_by_workload) {
        sel.units.push_back(MoveUnit{{}, {pv}});  // in the order named
      } else if (it != plan_of.end() && !unscalable(*it->second).empty()) {
        refuse(*it->second, unscalable(*it->second));
      } else if (it != plan_of.end()) {
        candidates.push_back(it->second);
      } else {
        alone.push_back(pv);
      }
    }
  }
  if (request.group_by_workload) {
    for (auto& unit : GroupByWorkload(candidates)) sel.units.push_back(std::move(unit));
  } else {
    for (const auto* v : candidates) sel.units.push_back(MoveUnit{{}, {v->pv_name}});
  }
  for (const auto& pv : alone) sel.units.push_back(MoveUnit{{}, {pv}});
  return sel;
}

}  // namespace flexcsi::migrate
