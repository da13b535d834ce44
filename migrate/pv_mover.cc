#include "migrate/pv_mover.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "migrate/pv_move_run.h"

namespace flexcsi::migrate {

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kMoved:
      return "moved";
    case Outcome::kRolledBack:
      return "rolled-back";
    case Outcome::kWouldMove:
      return "would-move";
    case Outcome::kRefused:
      return "refused";
    case Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

const std::vector<std::string>& ApplySteps() {
  static const std::vector<std::string> kSteps = {
      "checked",      "scaling-down", "retaining",        "releasing",          "deleting-old",
      "creating-new", "binding",      "restoring-policy", "restoring-replicas", "done"};
  return kSteps;
}

const std::vector<std::string>& RollbackSteps() {
  static const std::vector<std::string> kSteps = {
      "rb-scaling-down",     "rb-retaining",          "rb-releasing",
      "rb-deleting-new",     "rb-creating-original",  "rb-binding",
      "rb-restoring-policy", "rb-restoring-replicas", "rolled-back"};
  return kSteps;
}

std::vector<std::string> ApplyStepsFor(bool writes_secret) {
  std::vector<std::string> steps = ApplySteps();
  if (writes_secret) steps.insert(steps.begin() + 1, "writing-secret");
  return steps;
}

std::vector<std::string> RollbackStepsFor(bool writes_secret) {
  std::vector<std::string> steps = RollbackSteps();
  if (writes_secret) {
    steps.insert(std::find(steps.begin(), steps.end(), "rb-binding") + 1, "rb-deleting-secret");
  }
  return steps;
}

void MaybeCrashForTest(const std::string& step, bool after_action) {
  const char* env = std::getenv("FLEXCSI_MIGRATE_CRASH_AFTER");
  if (env == nullptr) return;
  if (std::string(env) == (after_action ? step + "+" : step)) ::kill(::getpid(), SIGKILL);
}

void MaybeHoldForTest() {
  static std::atomic<bool> held{false};  // the first of any worker thread holds
  const char* dir = std::getenv("FLEXCSI_MIGRATE_HOLD_DIR");
  if (dir == nullptr || held.exchange(true)) return;
  const std::string base(dir);
  std::ofstream(base + "/held").put('\n');
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::access((base + "/go").c_str(), F_OK) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status PvMover::Run::RunSteps(const std::vector<std::string>& steps,
                              const std::function<Status(const std::string&)>& take) {
  size_t start = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == rec_.step) start = i;
  }
  for (size_t i = start; i < steps.size(); ++i) {
    if (rec_.step != steps[i]) {
      FLEXCSI_RETURN_IF_ERROR(Announce(steps[i]));
    } else {
      // Announced already: by this run just before (checked, rollback's first step) or by the
      // run that died in it.
      if (resumed_) Progress(steps[i] + " (resumed)");
      result_.step = steps[i];
    }
    Status s = take(steps[i]);
    if (!s.ok()) return s.WithContext(steps[i]);
    MaybeCrashForTest(steps[i], true);
  }
  return Status::Ok();
}

PvMover::PvMover(kube::KubeClient* client, MigrationJournal* journal,
                 const translator::Translator* translator, MoveOptions options,
                 const WatchedObjects* watched)
    : client_(client),
      journal_(journal),
      translator_(translator),
      options_(std::move(options)),
      watched_(watched) {}

MoveResult PvMover::Apply(const std::string& pv_name, const WorkloadGroupRecord* group) {
  return Run(this, pv_name).Apply(group);
}
MoveResult PvMover::Rollback(const std::string& pv_name, const WorkloadGroupRecord* group) {
  return Run(this, pv_name).Rollback(group);
}

}  // namespace flexcsi::migrate
