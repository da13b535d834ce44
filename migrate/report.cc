#include "migrate/report.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "common/text_table.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

// "1 PV", "2 PVs", "0 PVs".
std::string PvCount(size_t n) { return std::to_string(n) + (n == 1 ? " PV" : " PVs"); }

json WorkloadJson(const WorkloadRef& w) {
  return {{"kind", w.kind}, {"namespace", w.namespace_}, {"name", w.name},
          {"scalable", w.scalable()}};
}

std::string Time(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  TextTable table(header);
  for (const auto& row : rows) table.AddRow(row);
  table.Print(out);
}

json PlanToJson(const Plan& plan) {
  json volumes = json::array();
  size_t movable = 0;
  std::map<std::string, size_t> by_verdict;
  for (const auto& v : plan.volumes) {
    json pods = json::array();
    for (const auto& p : v.pods) {
      json pod = {{"namespace", p.namespace_}, {"name", p.name}, {"phase", p.phase},
                  {"node", p.node}};
      if (!p.owner.kind.empty()) pod["owner"] = WorkloadJson(p.owner);
      pods.push_back(pod);
    }
    json workloads = json::array();
    for (const auto& w : v.workloads) workloads.push_back(WorkloadJson(w));
    json entry = {{"pv", v.pv_name},
                  {"source", v.source},
                  {"plugin", v.plugin},
                  {"csiDriver", v.csi_driver},
                  {"reclaimPolicy", v.reclaim_policy},
                  {"phase", v.pv_phase},
                  {"pods", pods},
                  {"workloads", workloads},
                  {"canMove", v.verdict == Verdict::kCanMove},
                  {"verdict", VerdictName(v.verdict)},
                  {"reason", v.reason}};
    if (!v.claim_name.empty()) {
      entry["claim"] = {{"namespace", v.claim_namespace},
                        {"name", v.claim_name},
                        {"phase", v.claim_phase}};
    }
    if (!v.target_pv.is_null()) entry["targetPV"] = v.target_pv;
    if (v.written_secret) {
      entry["writesSecret"] = {{"namespace", v.written_secret->namespace_},
                               {"name", v.written_secret->name},
                               {"keys", v.written_secret->keys},
                               {"fromSecret", v.written_secret->from_secret}};
    }
    if (v.verdict == Verdict::kCanMove) ++movable;
    ++by_verdict[VerdictName(v.verdict)];
    volumes.push_back(std::move(entry));
  }
  json inline_volumes = json::array();
  for (const auto& w : plan.inline_volumes) {
    inline_volumes.push_back({{"kind", w.kind},
                              {"namespace", w.namespace_},
                              {"name", w.name},
                              {"volume", w.volume},
                              {"source", w.source},
                              {"csiDriver", w.csi_driver},
                              {"note", w.note}});
  }
  json workloads = json::array();
  for (const auto& w : plan.workloads) {
    workloads.push_back({{"kind", w.workload.kind},
                         {"namespace", w.workload.namespace_},
                         {"name", w.workload.name},
                         {"pvs", w.pvs},
                         {"scaleDown", w.refusal.empty()},
                         {"refusal", w.refusal}});
  }
  json classes = json::array();
  for (const auto& c : plan.storage_classes) {
    json entry = {{"name", c.name},           {"kind", c.kind},
                  {"provisioner", c.provisioner}, {"csiDriver", c.csi_driver},
                  {"default", c.is_default},  {"canMove", c.refusal.empty()},
                  {"reason", c.refusal}};
    if (!c.twin.is_null()) entry["twin"] = c.twin;
    classes.push_back(std::move(entry));
  }
  return {{"apiVersion", "flexcsi.io/v1alpha1"},
          {"kind", "MigrationPlan"},
          {"volumes", volumes},
          {"workloads", workloads},
          {"inlineVolumes", inline_volumes},
          {"storageClasses", classes},
          {"summary",
           {{"volumes", plan.volumes.size()},
            {"canMove", movable},
            {"cannotMove", plan.volumes.size() - movable},
            {"byVerdict", by_verdict},
            {"inlineVolumes", plan.inline_volumes.size()},
            {"storageClasses", plan.storage_classes.size()}}}};
}

namespace {

// The Secrets apply writes (names and keys only: no value is read by plan).
void PrintWrittenSecrets(const Plan& plan, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : plan.volumes) {
    if (!v.written_secret || v.verdict == Verdict::kUntranslatable) continue;
    const WrittenSecretPlan& w = *v.written_secret;
    std::string keys;
    for (const auto& k : w.keys) keys += (keys.empty() ? "" : ",") + k;
    rows.push_back({v.pv_name, w.namespace_ + "/" + w.name, OrDash(keys), OrDash(w.from_secret)});
  }
  if (rows.empty()) return;
  out << "\nSecrets apply writes before it creates the CSI PV (the rule derives these keys; a CSI "
         "PV can only name a Secret; rollback deletes them):\n";
  PrintTable({"PV", "SECRET", "KEYS", "FROM SECRET"}, rows, out);
}

}  // namespace

void PrintPlanTable(const Plan& plan, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  size_t movable = 0;
  for (const auto& v : plan.volumes) {
    std::string users;
    for (const auto& p : v.pods) {
      if (!users.empty()) users += ",";
      users += p.name;
      if (!p.owner.kind.empty()) users += "(" + p.owner.ToString() + ")";
    }
    if (v.verdict == Verdict::kCanMove) ++movable;
    rows.push_back({v.pv_name, v.source, OrDash(v.ClaimKey()), OrDash(v.csi_driver),
                    v.verdict == Verdict::kCanMove ? "yes" : VerdictName(v.verdict), OrDash(users),
                    v.verdict != Verdict::kInUse         ? v.reason
                    : InUseRefusal(v.pods, true).empty() ? "stop them, or apply --scale-down"
                                                         : InUseRefusal(v.pods, true)});
  }
  PrintTable({"PV", "SOURCE", "CLAIM", "CSI DRIVER", "CAN MOVE", "USED BY", "REASON"}, rows, out);
  out << "\n" << PvCount(plan.volumes.size()) << ": " << movable << " can move now, "
      << plan.volumes.size() - movable << " cannot.\n";
  PrintWrittenSecrets(plan, out);
  if (!plan.workloads.empty()) {
    out << "\nWorkloads holding these claims (apply --scale-down scales each to 0 once, moves "
           "all its PVs, then restores its replicas):\n";
    std::vector<std::vector<std::string>> workload_rows;
    for (const auto& w : plan.workloads) {
      std::string pvs;
      for (const auto& pv : w.pvs) pvs += (pvs.empty() ? "" : ",") + pv;
      workload_rows.push_back({w.workload.kind, w.workload.namespace_ + "/" + w.workload.name, pvs,
                               w.refusal.empty() ? "yes" : "no: " + w.refusal});
    }
    PrintTable({"KIND", "NAME", "PVS", "SCALE DOWN"}, workload_rows, out);
  }
  if (!plan.inline_volumes.empty()) {
    out << "\nInline in-tree/FlexVolume volumes in pod templates (operator work: edit these "
           "workloads; migrate never does):\n";
    std::vector<std::vector<std::string>> inline_rows;
    for (const auto& w : plan.inline_volumes) {
      inline_rows.push_back({w.kind, w.namespace_ + "/" + w.name, w.volume, w.source,
                             OrDash(w.csi_driver), w.note});
    }
    PrintTable({"KIND", "NAME", "VOLUME", "SOURCE", "CSI DRIVER", "NOTE"}, inline_rows, out);
  }
  if (!plan.storage_classes.empty()) {
    out << "\nStorageClasses (apply --storage-class NAME replaces each by its CSI twin under the "
           "same name):\n";
    std::vector<std::vector<std::string>> class_rows;
    for (const auto& c : plan.storage_classes) {
      std::string params;
      if (c.twin.is_object() && c.twin.contains("parameters")) {
        for (const auto& [k, v] : c.twin["parameters"].items()) {
          params += (params.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
        }
      }
      class_rows.push_back({c.name + (c.is_default ? " (default)" : ""), c.kind, c.provisioner,
                            OrDash(c.csi_driver), c.refusal.empty() ? OrDash(params) : "-",
                            c.refusal.empty() ? "yes" : "no: " + c.refusal});
    }
    PrintTable({"STORAGECLASS", "KIND", "PROVISIONER", "TWIN PROVISIONER", "TWIN PARAMETERS",
                "CAN MOVE"},
               class_rows, out);
  }
}

json ResultsToJson(const std::string& command, const std::vector<MoveResult>& results) {
  json items = json::array();
  std::map<std::string, size_t> counts;
  for (const auto& r : results) {
    json item = {{"pv", r.pv_name},       {"claim", r.claim},     {"csiDriver", r.csi_driver},
                 {"result", OutcomeName(r.outcome)}, {"step", r.step}, {"message", r.message}};
    if (!r.actions.empty()) item["dryRunActions"] = r.actions;
    items.push_back(std::move(item));
    ++counts[OutcomeName(r.outcome)];
  }
  return {{"apiVersion", "flexcsi.io/v1alpha1"},
          {"kind", "MigrationReport"},
          {"command", command},
          {"results", items},
          {"summary", counts}};
}

void PrintResultsTable(const std::vector<MoveResult>& results, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, size_t> counts;
  for (const auto& r : results) {
    rows.push_back({r.pv_name, OrDash(r.claim), OrDash(r.csi_driver), OutcomeName(r.outcome),
                    OrDash(r.step), r.message});
    ++counts[OutcomeName(r.outcome)];
  }
  PrintTable({"PV", "CLAIM", "CSI DRIVER", "RESULT", "STEP", "MESSAGE"}, rows, out);
  std::string summary;
  for (const auto& [k, n] : counts) summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  // StorageClasses share the report under "storageclass/<name>" (storage_class_mover.h).
  const size_t classes = std::count_if(results.begin(), results.end(), [](const MoveResult& r) {
    return r.pv_name.rfind("storageclass/", 0) == 0;
  });
  out << "\n" << PvCount(results.size() - classes);
  if (classes > 0) {
    out << ", " << classes << (classes == 1 ? " StorageClass" : " StorageClasses");
  }
  out << ": " << (summary.empty() ? "nothing to do" : summary) << ".\n";
  for (const auto& r : results) {
    for (const auto& a : r.actions) out << "  " << r.pv_name << ": would " << a << "\n";
  }
}

json JournalToJson(const std::vector<MigrationRecord>& records,
                   const std::vector<WorkloadGroupRecord>& groups) {
  json items = json::array();
  for (const auto& r : records) {
    json workloads = json::array();
    for (const auto& w : r.workloads) workloads.push_back(ToJson(w));
    items.push_back({{"pv", r.pv_name},
                     {"claim", r.ClaimKey()},
                     {"direction", r.direction},
                     {"step", r.step},
                     {"state", RecordStateName(r.state)},
                     {"originalReclaimPolicy", r.original_reclaim_policy},
                     {"csiDriver", r.target_pv.is_object() && r.target_pv.contains("spec")
                                       ? r.target_pv["spec"].value("csi", json::object())
                                             .value("driver", "")
                                       : ""},
                     {"workloads", workloads},
                     {"workloadGroup", r.workload_group},
                     {"lastError", r.last_error},
                     {"updated", Time(r.updated_at)}});
  }
  json group_items = json::array();
  for (const auto& g : groups) {
    json workloads = json::array();
    for (const auto& w : g.workloads) workloads.push_back(ToJson(w));
    group_items.push_back({{"id", g.id},
                           {"direction", g.direction},
                           {"step", g.step},
                           {"workloads", workloads},
                           {"members", g.members},
                           {"updated", Time(g.updated_at)}});
  }
  return {{"apiVersion", "flexcsi.io/v1alpha1"},
          {"kind", "MigrationJournal"},
          {"items", items},
          {"workloadGroups", group_items}};
}

void PrintJournalTable(const std::vector<MigrationRecord>& records,
                       const std::vector<WorkloadGroupRecord>& groups, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : records) {
    std::string replicas;
    for (const auto& w : r.workloads) {
      if (!replicas.empty()) replicas += ",";
      replicas += w.kind + "/" + w.name + "=" + std::to_string(w.replicas);
    }
    rows.push_back({r.pv_name, OrDash(r.ClaimKey()), r.direction, r.step,
                    RecordStateName(r.state), OrDash(replicas), Time(r.updated_at),
                    r.last_error});
  }
  PrintTable({"PV", "CLAIM", "DIRECTION", "STEP", "STATE", "REPLICAS", "UPDATED", "ERROR"}, rows,
             out);
  if (groups.empty()) return;
  out << "\nWorkload groups (scaled down once, restored once all their PVs are settled):\n";
  std::vector<std::vector<std::string>> group_rows;
  for (const auto& g : groups) {
    std::string replicas;
    for (const auto& w : g.workloads) {
      replicas +=
          (replicas.empty() ? "" : ",") + w.kind + "/" + w.name + "=" + std::to_string(w.replicas);
    }
    group_rows.push_back({g.id, g.direction, g.step, std::to_string(g.members.size()),
                          OrDash(replicas), Time(g.updated_at)});
  }
  PrintTable({"GROUP", "DIRECTION", "STEP", "PVS", "REPLICAS", "UPDATED"}, group_rows, out);
}

json StorageClassJournalToJson(const std::vector<StorageClassRecord>& records) {
  json items = json::array();
  for (const auto& r : records) {
    items.push_back({{"name", r.name},
                     {"direction", r.direction},
                     {"step", r.step},
                     {"state", RecordStateName(r.state)},
                     {"original", r.original},
                     {"twin", r.twin},
                     {"lastError", r.last_error},
                     {"updated", Time(r.updated_at)}});
  }
  return items;
}

void PrintStorageClassJournalTable(const std::vector<StorageClassRecord>& records,
                                   std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : records) {
    rows.push_back({r.name, r.original.value("provisioner", ""), r.twin.value("provisioner", ""),
                    r.direction, r.step, RecordStateName(r.state), Time(r.updated_at),
                    r.last_error});
  }
  PrintTable({"STORAGECLASS", "ORIGINAL", "TWIN", "DIRECTION", "STEP", "STATE", "UPDATED",
              "ERROR"},
             rows, out);
}

}  // namespace flexcsi::migrate
