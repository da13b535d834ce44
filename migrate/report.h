// How `flexcsi migrate` shows plans, results and the journal: a table for people, JSON (and YAML
// for plans) for scripts. Pure formatting; no I/O beyond the given stream.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "migrate/journal.h"
#include "migrate/planner.h"
#include "migrate/pv_mover.h"

namespace flexcsi::migrate {

nlohmann::json PlanToJson(const Plan& plan);
void PrintPlanTable(const Plan& plan, std::ostream& out);

nlohmann::json ResultsToJson(const std::string& command, const std::vector<MoveResult>& results);
void PrintResultsTable(const std::vector<MoveResult>& results, std::ostream& out);

// The PVs' rows, then the workload groups (with the replicas each will be restored to).
nlohmann::json JournalToJson(const std::vector<MigrationRecord>& records,
                             const std::vector<WorkloadGroupRecord>& groups);
void PrintJournalTable(const std::vector<MigrationRecord>& records,
                       const std::vector<WorkloadGroupRecord>& groups, std::ostream& out);

// The StorageClass rows of the journal (`status`).
nlohmann::json StorageClassJournalToJson(const std::vector<StorageClassRecord>& records);
void PrintStorageClassJournalTable(const std::vector<StorageClassRecord>& records,
                                   std::ostream& out);

// Columns padded to their widest cell, two spaces apart, no trailing blanks.
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace flexcsi::migrate
