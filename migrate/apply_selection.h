// Which PVs `apply` moves, and which of them move together: the journal first (workload groups
// still in flight, then every unfinished PV, so a resume picks up everything a killed run left),
// then the plan (with --all, every PV it lists: those that can move, or are in use with
// --scale-down; the others are reported as refused with the plan's reason).
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

struct ApplySelection {
  std::vector<MoveUnit> units;
  std::vector<MoveResult> refused;  // by the plan, nothing written
};

struct ApplySelectionRequest {
  bool all = false;
  std::vector<std::string> pvs;  // when not all
  std::string namespace_;        // limits --all to claims from it
  bool scale_down = false;       // --all includes PVs in use (the mover checks their owners)
  // --scale-down (and not a dry run): PVs held by the same workloads form workload groups. A
  // named PV forms a group only with other named PVs; a group in flight in the journal is taken
  // whole when any of its PVs is named.
  bool group_by_workload = false;
};

// `journal` is null for a dry run.
StatusOr<ApplySelection> SelectForApply(MigrationJournal* journal, kube::KubeClient& client,
                                        const translator::Translator& translator,
                                        const ApplySelectionRequest& request);

}  // namespace flexcsi::migrate
