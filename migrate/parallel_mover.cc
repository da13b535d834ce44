#include "migrate/parallel_mover.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "migrate/workload_scaler.h"

namespace flexcsi::migrate {

// A fixed set of threads running posted tasks; a task may post more. Drain() returns when no
// task is queued or running. Tasks never throw (PvMover and the group steps report by Status).
class ParallelMover::Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
      ++pending_;
    }
    wake_.notify_one();
  }
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  size_t pending_ = 0;  // queued + running
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One workload group in this run: its journal row and where its members' results go.
struct ParallelMover::GroupRun {
  const MoveUnit* unit = nullptr;
  size_t first_slot = 0;
  WorkloadGroupRecord record;
  std::atomic<size_t> remaining{0};
};

std::string WorkloadGroupId(const std::vector<ScaledWorkload>& workloads) {
  std::vector<std::string> names;
  for (const auto& w : workloads) names.push_back(w.kind + " " + w.namespace_ + "/" + w.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string id;
  for (const auto& n : names) id += (id.empty() ? "" : ", ") + n;
  return id;
}

ScaledWorkload ToScaledWorkload(const WorkloadRef& w) {
  return ScaledWorkload{w.group_version, w.resource, w.kind, w.namespace_, w.name, 0};
}

std::vector<MoveUnit> GroupByWorkload(const std::vector<const VolumePlan*>& volumes) {
  // Union-find over the volumes, joined through the workloads holding their claims.
  std::vector<size_t> parent(volumes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::map<WorkloadRef, size_t> first_holder;
  for (size_t i = 0; i < volumes.size(); ++i) {
    for (const auto& w : volumes[i]->workloads) {
      if (!w.scalable()) continue;
      auto [it, inserted] = first_holder.emplace(w, i);
      if (!inserted) parent[root(i)] = root(it->second);
    }
  }
  std::vector<MoveUnit> units;
  std::map<size_t, size_t> unit_of_root;
  std::vector<std::set<WorkloadRef>> workloads;
  for (size_t i = 0; i < volumes.size(); ++i) {
    auto [it, inserted] = unit_of_root.emplace(root(i), units.size());
    if (inserted) {
      units.emplace_back();
      workloads.emplace_back();
    }
    units[it->second].pvs.push_back(volumes[i]->pv_name);
    for (const auto& w : volumes[i]->workloads) {
      if (w.scalable()) workloads[it->second].insert(w);
    }
  }
  for (size_t u = 0; u < units.size(); ++u) {
    for (const auto& w : workloads[u]) units[u].workloads.push_back(ToScaledWorkload(w));
  }
  return units;
}

ParallelMover::ParallelMover(kube::KubeClient* client, MigrationJournal* journal, PvMover* mover,
                             int parallel, std::function<void(const std::string&)> note)
    : client_(client),
      journal_(journal),
      mover_(mover),
      parallel_(std::max(1, parallel)),
      note_(std::move(note)) {}

void ParallelMover::Post(std::function<void()> task) { workers_->Post(std::move(task)); }

std::vector<MoveResult> ParallelMover::RunAll(size_t count,
                                              const std::function<void(size_t)>& start) {
  std::vector<MoveResult> results(count);
  results_ = &results;
  {
    Workers workers(parallel_);
    workers_ = &workers;
    start(count);
    workers.Drain();
    workers_ = nullptr;
  }
  results_ = nullptr;
  return results;
}

MoveResult ParallelMover::MoveOne(const std::string& pv, const WorkloadGroupRecord* group) {
  return rollback_ ? mover_->Rollback(pv, group) : mover_->Apply(pv, group);
}

std::vector<MoveResult> ParallelMover::Run(const std::vector<MoveUnit>& given, bool rollback) {
  rollback_ = rollback;
  // One journal row per set of workloads, so one GroupRun: units of the same workloads (a group
  // in flight in the journal and PVs grouped afresh under the same owners) run as one.
  std::vector<MoveUnit> units;
  std::map<std::string, size_t> unit_of_group;
  for (const auto& u : given) {
    if (!u.workloads.empty()) {
      auto [it, inserted] = unit_of_group.emplace(WorkloadGroupId(u.workloads), units.size());
      if (!inserted) {
        auto& pvs = units[it->second].pvs;
        for (const auto& pv : u.pvs) {
          if (std::find(pvs.begin(), pvs.end(), pv) == pvs.end()) pvs.push_back(pv);
        }
        continue;
      }
    }
    units.push_back(u);
  }
  size_t total = 0;
  for (const auto& u : units) total += u.pvs.size();
  std::vector<std::unique_ptr<GroupRun>> groups;
  return RunAll(total, [&](size_t) {
    size_t slot = 0;
    for (const auto& unit : units) {
      if (unit.workloads.empty()) {
        for (const auto& pv : unit.pvs) {
          Post([this, slot, pv] {
            (*results_)[slot] = MoveOne(pv, nullptr);
            if (on_result) on_result((*results_)[slot]);
          });
          ++slot;
        }
        continue;
      }
      groups.push_back(std::make_unique<GroupRun>());
      GroupRun* g = groups.back().get();
      g->unit = &unit;
      g->first_slot = slot;
      slot += unit.pvs.size();
      Post([this, g] { StartGroup(g); });
    }
  });
}

// True when every PV of this run's unit has finished in this run's direction already: a group
// resumed at group-restoring-replicas then only restores (its workloads may be back up by now,
// and must not bounce to 0 again). Any other member (a PV new to the group, one that went the
// other way since) needs the workloads at 0 again.
StatusOr<bool> ParallelMover::MembersSettled(const GroupRun* g) {
  const RecordState finished = rollback_ ? RecordState::kRolledBack : RecordState::kMoved;
  for (const auto& pv : g->unit->pvs) {
    auto row = journal_->Get(pv);
    if (!row.ok()) return row.status();
    if (!*row || (*row)->state != finished) return false;
  }
  return true;
}

// The group's row: an unfinished one is resumed with the replicas it recorded (never read
// again: by now the workloads may be at 0 because of us), also when this run goes the other way
// (a rollback of a group apply left in flight); otherwise the replicas are read now and journaled
// before the first scale.
Status ParallelMover::OpenGroup(GroupRun* g) {
  const std::string id = WorkloadGroupId(g->unit->workloads);
  const std::string direction = rollback_ ? "rollback" : "apply";
  auto existing = journal_->GetGroup(id);
  if (!existing.ok()) return existing.status();
  if (*existing && (*existing)->step != "group-done") {
    g->record = std::move(**existing);
    for (const auto& pv : g->unit->pvs) {
      if (std::find(g->record.members.begin(), g->record.members.end(), pv) ==
          g->record.members.end()) {
        g->record.members.push_back(pv);
      }
    }
    Note(id + ": " +
         (g->record.direction == direction
              ? "resuming at " + g->record.step
              : direction + " of the group's unfinished " + g->record.direction + " (at " +
                    g->record.step + ")"));
  } else {
    g->record = WorkloadGroupRecord{
        id, "group-scaling-down", g->unit->workloads, g->unit->pvs, 0, direction};
    for (auto& w : g->record.workloads) {
      auto replicas = ReadReplicas(*client_, w);
      if (!replicas.ok()) return replicas.status();
      w.replicas = *replicas;
    }
  }
  if (g->record.step == "group-restoring-replicas" && g->record.direction == direction) {
    auto settled = MembersSettled(g);
    if (!settled.ok()) return settled.status();
    if (*settled) return Status::Ok();
  }
  g->record.direction = direction;
  g->record.step = "group-scaling-down";
  FLEXCSI_RETURN_IF_ERROR(journal_->PutGroup(g->record));
  MaybeCrashForTest("group-scaling-down", false);
  for (const auto& w : g->record.workloads) {
    Note(id + ": scaling " + w.kind + "/" + w.name + " from " + std::to_string(w.replicas) +
         " to 0");
    FLEXCSI_RETURN_IF_ERROR(ScaleWorkloadTo(*client_, w, 0, false, nullptr));
  }
  MaybeCrashForTest("group-scaling-down", true);
  g->record.step = "group-moving";
  FLEXCSI_RETURN_IF_ERROR(journal_->PutGroup(g->record));
  MaybeCrashForTest("group-moving", false);
  return Status::Ok();
}

void ParallelMover::StartGroup(GroupRun* g) {
  Status s = OpenGroup(g);
  if (!s.ok()) {
    for (size_t i = 0; i < g->unit->pvs.size(); ++i) {
      MoveResult& r = (*results_)[g->first_slot + i];
      r.pv_name = g->unit->pvs[i];
      r.outcome = Outcome::kFailed;
      r.message = "workload group " + WorkloadGroupId(g->unit->workloads) + ": " + s.message();
      if (on_result) on_result(r);
    }
    return;
  }
  g->remaining = g->unit->pvs.size();
  for (size_t i = 0; i < g->unit->pvs.size(); ++i) {
    Post([this, g, i] {
      const size_t slot = g->first_slot + i;
      (*results_)[slot] = MoveOne(g->unit->pvs[i], &g->record);
      if (on_result) on_result((*results_)[slot]);
      if (--g->remaining == 0) FinishGroup(g);
    });
  }
}

// After the last member of this run: the replicas come back only when no member of the group
// (this run's or an earlier one's, in either direction) is in progress in the journal; a PV that
// was refused has no row (apply) or a row that was not turned (rollback), and its claim is bound
// to the PV it was bound to, so pods may use it again.
void ParallelMover::FinishGroup(GroupRun* g) {
  WorkloadGroupRecord& rec = g->record;
  auto annotate = [&](const std::string& text, bool failed) {
    for (size_t i = 0; i < g->unit->pvs.size(); ++i) {
      MoveResult& r = (*results_)[g->first_slot + i];
      r.message += (r.message.empty() ? "" : "; ") + text;
      if (failed && r.outcome != Outcome::kRefused) r.outcome = Outcome::kFailed;
    }
  };
  for (const auto& pv : rec.members) {
    auto row = journal_->Get(pv);
    if (!row.ok()) return annotate(rec.id + ": " + row.status().message(), true);
    if (*row && (*row)->state == RecordState::kInProgress) {
      const std::string text = "replicas of " + rec.id + " left at 0 while PV " + pv +
                               " is at step " + (*row)->step + "; run " + (*row)->direction +
                               " again";
      Note(text);
      return annotate(text, false);
    }
  }
  rec.step = "group-restoring-replicas";
  Status s = journal_->PutGroup(rec);
  if (!s.ok()) return annotate(rec.id + ": " + s.message(), true);
  MaybeCrashForTest("group-restoring-replicas", false);
  for (const auto& w : rec.workloads) {
    std::string note;
    s = ScaleWorkloadTo(*client_, w, w.replicas, true, &note);
    if (!s.ok()) return annotate("restoring replicas of " + rec.id + ": " + s.message(), true);
    Note(rec.id + ": " +
         (note.empty()
              ? w.kind + "/" + w.name + " back to " + std::to_string(w.replicas) + " replicas"
              : note));
    if (!note.empty()) annotate(note, false);
  }
  MaybeCrashForTest("group-restoring-replicas", true);
  rec.step = "group-done";
  s = journal_->PutGroup(rec);
  if (!s.ok()) return annotate(rec.id + ": " + s.message(), true);
  MaybeCrashForTest("group-done", false);
}

}  // namespace flexcsi::migrate
