// ParallelMover: `apply` and `rollback` of many PVs, N at a time, and whole workloads under one
// scale-down, in either direction.
//
// The PVs to move are split into units. A PV whose claim no pod holds is a unit of its own. PVs
// whose claims are held by pods of scalable workloads (with --scale-down) are grouped: two PVs
// share a unit when one workload holds both claims, transitively, so a StatefulSet's
// volumeClaimTemplates claims, a Deployment with two claims, or two Deployments sharing a claim
// move together. A group's workloads are scaled to 0 once, every member PV moves (apply) or goes
// back (rollback), and the replicas are restored once, when no member is left half-way
// (WorkloadGroupRecord in journal.h has the steps; apply_selection.h and rollback_selection.h
// say which PVs form the units).
//
// Units run on `parallel` worker threads; a group's members are PVs like any other, so a big
// group spreads over the workers too. Nothing is kept in memory that a resume would need: the
// journal is the single source of truth (each PV's row, each group's row), written before every
// step, so after a kill -9 `apply` (or `rollback`) again picks every unfinished PV and group up
// where the journal says. Every thread shares the one KubeClient (which backs off on 429 and
// Retry-After, so API Priority and Fairness is honoured) and the one MigrationJournal (which
// serialises writes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kube/kube_client.h"
#include "migrate/journal.h"
#include "migrate/planner.h"
#include "migrate/pv_mover.h"

namespace flexcsi::migrate {

// Defaults of `flexcsi migrate apply`: --parallel, --qps and --burst (docs/migration.md,
// "Defaults and the load on the API server", has the figures behind them).
constexpr int kDefaultParallel = 32;
constexpr int kDefaultQps = 100;
constexpr int kDefaultBurst = 200;

struct MoveUnit {
  std::vector<ScaledWorkload> workloads;  // empty: a PV on its own; replicas unused here
  std::vector<std::string> pvs;
};

// "StatefulSet shop/web, Deployment shop/api": the workloads' kinds and names, sorted. The id of
// the group's journal row, the same for the same workloads in every run.
std::string WorkloadGroupId(const std::vector<ScaledWorkload>& workloads);
ScaledWorkload ToScaledWorkload(const WorkloadRef& w);

// Splits `volumes` into units as described above. Only owners that scale to zero group PVs
// (a PV whose pods cannot be scaled is refused before anything is written anyway). Units come in
// the order of their first PV; a unit's PVs in the order given.
std::vector<MoveUnit> GroupByWorkload(const std::vector<const VolumePlan*>& volumes);

class ParallelMover {
 public:
  // `mover` is shared by every worker (PvMover keeps no state between calls). `note` receives
  // the groups' own lines ("StatefulSet shop/web: scaled from 3 to 0"); may be empty.
  ParallelMover(kube::KubeClient* client, MigrationJournal* journal, PvMover* mover, int parallel,
                std::function<void(const std::string& line)> note);

  // Called as each PV finishes, from the worker that moved it.
  std::function<void(const MoveResult&)> on_result;

  // Results in the order of the units' PVs. Units with workloads run as workload groups; units
  // of the same workloads (same WorkloadGroupId) as one group, in the place of the first.
  std::vector<MoveResult> Apply(const std::vector<MoveUnit>& units) { return Run(units, false); }
  std::vector<MoveResult> Rollback(const std::vector<MoveUnit>& units) { return Run(units, true); }

 private:
  struct GroupRun;
  std::vector<MoveResult> Run(const std::vector<MoveUnit>& units, bool rollback);
  MoveResult MoveOne(const std::string& pv, const WorkloadGroupRecord* group);
  StatusOr<bool> MembersSettled(const GroupRun* group);
  void StartGroup(GroupRun* group);
  void FinishGroup(GroupRun* group);
  Status OpenGroup(GroupRun* group);
  std::vector<MoveResult> RunAll(size_t count, const std::function<void(size_t)>& start);
  void Post(std::function<void()> task);
  void Note(const std::string& line) {
    if (note_) note_(line);
  }

  kube::KubeClient* client_;
  MigrationJournal* journal_;
  PvMover* mover_;
  int parallel_;
  std::function<void(const std::string&)> note_;
  class Workers;
  Workers* workers_ = nullptr;  // while RunAll runs
  std::vector<MoveResult>* results_ = nullptr;
  bool rollback_ = false;  // while Run runs: the direction of every unit
};

}  // namespace flexcsi::migrate
