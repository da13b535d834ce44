// Which PVs `rollback` takes back, and which of them go together: the rollback counterpart of
// apply_selection.h, forming the same units for the same ParallelMover.
//   1. Workload groups in flight in the journal (an apply or a rollback killed mid-way, or one
//      that left replicas at 0 for a half-way member): the selected members, with the group's
//      journaled workloads and replicas, whether or not --scale-down is given (the workloads
//      are at 0 because of us, and only the group may bring them back).
//   2. Every other unfinished row on its own: its journaled replicas are its own to restore.
//   3. With --scale-down, the rows apply finished, grouped by the workloads whose pods hold
//      their claims now (planned afresh from the journaled original PVs, with apply's planner):
//      a StatefulSet's claims, a Deployment's two claims go back under one scale-down. A PV
//      whose pods cannot be scaled is refused here, before its group's workloads are touched.
// Without --scale-down, every PV outside (1) is a unit of its own (a claim in use is refused
// by the mover, naming its pods).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "kube/kube_client.h"
#include "migrate/journal.h"
#include "migrate/parallel_mover.h"
#include "migrate/pv_mover.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

struct RollbackSelection {
  std::vector<MoveUnit> units;
  std::vector<MoveResult> refused;  // nothing written
};

struct RollbackSelectionRequest {
  bool all = false;              // every PV in the journal not rolled back yet
  std::vector<std::string> pvs;  // when not all, in the order named
  bool scale_down = false;
};

StatusOr<RollbackSelection> SelectForRollback(MigrationJournal& journal, kube::KubeClient& client,
                                              const translator::Translator& translator,
                                              const RollbackSelectionRequest& request);

}  // namespace flexcsi::migrate
