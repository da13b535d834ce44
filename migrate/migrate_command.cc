#include "migrate/migrate_command.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "common/subcommand_args.h"
#include "common/yaml_json.h"
#include "kube/kube_client.h"
#include "kube/kube_config.h"
#include "migrate/apply_selection.h"
#include "migrate/cluster_objects.h"
#include "migrate/cluster_support.h"
#include "migrate/journal.h"
#include "migrate/leftovers.h"
#include "migrate/parallel_mover.h"
#include "migrate/planner.h"
#include "migrate/progress_board.h"
#include "migrate/pv_mover.h"
#include "migrate/report.h"
#include "migrate/request_stats.h"
#include "migrate/rollback_selection.h"
#include "migrate/storage_class_mover.h"
#include "migrate/storage_class_selection.h"
#include "migrate/watched_objects.h"
#include "translator/flexvolume_rules.h"
#include "translator/translator.h"

namespace flexcsi::migrate {
namespace {

constexpr const char* kUsage =
    "usage: flexcsi migrate COMMAND [flags]   (also: kubectl flexcsi migrate ...)\n"
    "\n"
    "commands:\n"
    "  plan      list every in-tree and FlexVolume PV and StorageClass, what it becomes, and\n"
    "            whether it can move; --leftovers: what still ties the cluster to them\n"
    "  apply     move PVs and StorageClasses to their CSI twins (--pv NAME... |\n"
    "            --storage-class NAME... | --all), journaled and resumable\n"
    "  rollback  restore the original PVs, bindings, replicas and StorageClasses\n"
    "  status    show the journal\n"
    "\n"
    "Exit status: 0 all movable/moved (--leftovers: none left), 3 some refused (--leftovers:\n"
    "some left), 1 failed, 2 usage error.\n";

struct CommonFlags {
  kube::ConfigFlags kube;
  std::string rules;
  std::string output = "table";
  std::string journal;
  kube::RateLimit rate_limit{kDefaultQps, kDefaultBurst};
};

void AddKubeFlags(CLI::App& app, CommonFlags& f) {
  app.add_option("--kubeconfig", f.kube.kubeconfig,
                 "kubeconfig file (else $KUBECONFIG, ~/.kube/config)");
  app.add_option("--context", f.kube.context, "kubeconfig context");
  app.add_option("-n,--namespace", f.kube.namespace_,
                 "only PVs claimed from this namespace (default: all)");
  app.add_option("--qps", f.rate_limit.qps,
                 "API requests per second, client-side, as client-go's QPS: 0 means client-go's "
                 "5, negative no limit (default " + std::to_string(kDefaultQps) + ")");
  app.add_option("--burst", f.rate_limit.burst,
                 "API requests allowed at once above --qps, as client-go's Burst: 0 means "
                 "client-go's 10 (default " + std::to_string(kDefaultBurst) + ")")
      ->check(CLI::NonNegativeNumber);
}

StatusOr<translator::Translator> MakeTranslator(const std::string& rules_file) {
  if (rules_file.empty()) return translator::Translator();
  auto rules = translator::LoadFlexVolumeRulesFile(rules_file);
  if (!rules.ok()) return rules.status();
  // migrate writes the Secret a rule derives (pv_move_secret.cc), so the CSI PV names it.
  return translator::Translator(std::move(*rules), translator::DerivedSecrets::kNameWrittenSecret);
}

StatusOr<std::unique_ptr<kube::KubeClient>> MakeClient(const CommonFlags& flags) {
  // The namespace flag filters claims; the client itself always works cluster-wide.
  kube::ConfigFlags f = flags.kube;
  f.namespace_.clear();
  auto config = kube::LoadClientConfig(f);
  if (!config.ok()) return config.status();
  config->rate_limit = flags.rate_limit;
  return kube::KubeClient::Create(std::move(*config));
}

// A live progress line only on a terminal; plain lines otherwise (see progress_board.h).
bool ProgressLive(std::ostream& err) { return &err == &std::cerr && ::isatty(STDERR_FILENO); }

int Error(std::ostream& err, const std::string& what, const Status& s) {
  err << "flexcsi migrate " << what << ": " << s.message() << "\n";
  return kExitFailed;
}

int ExitFor(const std::vector<MoveResult>& results) {
  bool refused = false;
  for (const auto& r : results) {
    if (r.outcome == Outcome::kFailed) return kExitFailed;
    if (r.outcome == Outcome::kRefused) refused = true;
  }
  return refused ? kExitRefused : kExitOk;
}

int RunPlan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app(
      "Show what every in-tree and FlexVolume PV becomes under CSI, and whether it can "
      "move now.",
      "flexcsi migrate plan");
  CommonFlags f;
  AddKubeFlags(app, f);
  app.add_option("--rules", f.rules, "FlexVolume rules file (as for flexcsi translate)");
  app.add_option("-o,--output", f.output, "table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  bool leftovers = false;
  app.add_flag("--leftovers", leftovers,
               "list what still ties the cluster to FlexVolume or in-tree plugins, with what to "
               "do; exit 3 while anything is left or could not be checked (without --rules: "
               "StorageClasses no flexcsi-controller configuration in the cluster accounts for)");
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;

  auto translator = MakeTranslator(f.rules);
  if (!translator.ok()) return Error(err, "plan", translator.status());
  auto client = MakeClient(f);
  if (!client.ok()) return Error(err, "plan", client.status());
  auto objects = ListClusterObjects(**client, f.kube.namespace_);
  if (!objects.ok()) return Error(err, "plan", objects.status());
  const Plan plan = BuildPlan(*objects, *translator, PlanOptions{f.kube.namespace_});
  if (leftovers) {
    // Nodes are cluster-wide: a namespace-limited check leaves them out.
    if (Status s = ListLeftoverObjects(**client, &*objects); !s.ok()) return Error(err, "plan", s);
    if (!f.kube.namespace_.empty()) objects->nodes.clear();
    // Without --rules, which classes flexcsi-controller serves can only come from the cluster.
    LeftoverContext context;
    context.rules_given = !f.rules.empty();
    context.served = ReadServedProvisioners(**client, *objects);
    const auto found = FindLeftovers(*objects, plan, *translator, context);
    if (f.output == "json") {
      out << LeftoversToJson(found).dump(2) << "\n";
    } else if (f.output == "yaml") {
      out << JsonToYaml(LeftoversToJson(found));
    } else {
      PrintLeftoversTable(found, out);
    }
    return found.empty() ? kExitOk : kExitRefused;
  }
  if (auto server = kube::GetServerVersion(**client); server.ok()) {
    if (Status mountable = CheckCsiPvsMountable(*server); !mountable.ok()) {
      err << "flexcsi migrate plan: note: apply will refuse: " << mountable.message() << "\n";
    }
  }
  if (f.output == "json") {
    out << PlanToJson(plan).dump(2) << "\n";
  } else if (f.output == "yaml") {
    out << JsonToYaml(PlanToJson(plan));
  } else {
    PrintPlanTable(plan, out);
  }
  for (const auto& v : plan.volumes) {
    if (v.verdict != Verdict::kCanMove) return kExitRefused;
  }
  for (const auto& c : plan.storage_classes) {
    if (!c.refusal.empty()) return kExitRefused;
  }
  return kExitOk;
}

// How long apply and rollback wait for their watches to open before the first PV; kinds not
// watched by then are listed per PV until they are.
constexpr std::chrono::seconds kWatchStartTimeout{60};

bool Confirm(const std::string& question, bool yes, std::istream& in, std::ostream& err) {
  if (yes) return true;
  if (&in != &std::cin || !::isatty(STDIN_FILENO)) {
    err << "flexcsi migrate: " << question << " Not a terminal: add --yes to confirm.\n";
    return false;
  }
  err << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(in, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

int RunApplyOrRollback(bool rollback, const std::vector<std::string>& args, std::istream& in,
                       std::ostream& out, std::ostream& err) {
  const std::string name = rollback ? "rollback" : "apply";
  CLI::App app(rollback ? "Restore the original PVs, bindings and replicas of journaled migrations."
                        : "Move PVs to their CSI twins: journaled, resumable, reversible.",
               "flexcsi migrate " + name);
  CommonFlags f;
  AddKubeFlags(app, f);
  std::vector<std::string> pvs;
  bool all = false, scale_down = false, dry_run = false, yes = false;
  double timeout_seconds = 300;
  int parallel = kDefaultParallel;
  std::vector<std::string> classes;
  app.add_option("--pv", pvs, "PV name (repeatable)");
  app.add_option("--storage-class", classes, "StorageClass name (repeatable)");
  app.add_flag("--all", all,
               rollback ? "every PV and StorageClass in the journal"
                        : "every PV and StorageClass the plan lists, and unfinished ones "
                          "(with -n: the namespace's PVs, no StorageClass)");
  app.add_option("--journal", f.journal, "journal directory (default " + DefaultJournalDir() + ")");
  app.add_flag("--yes,-y", yes, "do not ask for confirmation");
  app.add_option("--timeout", timeout_seconds,
                 "seconds to wait for each cluster change (pods gone, detach, binding)")
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", f.output, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--parallel", parallel,
                 "PVs (and workload groups) moved at once (default " +
                     std::to_string(kDefaultParallel) + ")")
      ->check(CLI::Range(1, 64));
  app.add_flag("--scale-down", scale_down,
               "scale owning Deployments/StatefulSets/ReplicaSets of pods using the claim to 0 "
               "and restore them after (without it, a claim in use is refused)");
  if (!rollback) {
    app.add_option("--rules", f.rules, "FlexVolume rules file (as for flexcsi translate)");
    app.add_flag("--dry-run", dry_run, "send every write with dryRun=All; journal nothing");
  }
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;
  if (all == !(pvs.empty() && classes.empty())) {
    err << "flexcsi migrate " << name
        << ": give either --pv NAME... and/or --storage-class NAME..., or --all\n";
    return kExitUsage;
  }
  if (f.journal.empty()) f.journal = DefaultJournalDir();

  auto translator = MakeTranslator(f.rules);
  if (!translator.ok()) return Error(err, name, translator.status());
  auto client = MakeClient(f);
  if (!client.ok()) return Error(err, name, client.status());
  if (!rollback) {
    // Before the journal or any write, dry runs included (dryRun=All came after 1.10).
    auto server = kube::GetServerVersion(**client);
    if (!server.ok()) return Error(err, name, server.status());
    if (Status mountable = CheckCsiPvsMountable(*server); !mountable.ok()) {
      err << "flexcsi migrate apply: refused: " << mountable.message() << "\n";
      return kExitRefused;
    }
  }

  std::unique_ptr<MigrationJournal> journal;
  if (!dry_run) {
    auto opened = MigrationJournal::Open(f.journal);
    if (!opened.ok()) return Error(err, name, opened.status());
    journal = std::move(*opened);
  }

  // Which PVs, in a fixed order, and which of them move together.
  std::vector<std::string> names;
  std::vector<MoveResult> results;
  std::vector<MoveUnit> units;
  StorageClassSelectionRequest class_request;
  class_request.rollback = rollback;
  class_request.all = all;
  class_request.names = classes;
  class_request.namespace_ = f.kube.namespace_;
  auto class_selection = SelectStorageClasses(journal.get(), **client, *translator, class_request);
  if (!class_selection.ok()) return Error(err, name, class_selection.status());
  const bool pvs_selected = all || !pvs.empty();  // else only --storage-class was given
  if (pvs_selected && rollback) {
    RollbackSelectionRequest request;
    request.all = all;
    request.pvs = pvs;
    request.scale_down = scale_down;
    auto selection = SelectForRollback(*journal, **client, *translator, request);
    if (!selection.ok()) return Error(err, name, selection.status());
    units = std::move(selection->units);
    results = std::move(selection->refused);
  } else if (pvs_selected) {
    ApplySelectionRequest request;
    request.all = all;
    request.pvs = pvs;
    request.namespace_ = f.kube.namespace_;
    request.scale_down = scale_down;
    request.group_by_workload = scale_down && !dry_run;
    auto selection = SelectForApply(journal.get(), **client, *translator, request);
    if (!selection.ok()) return Error(err, name, selection.status());
    units = std::move(selection->units);
    results = std::move(selection->refused);
  }
  for (const auto& u : units) {
    for (const auto& pv : u.pvs) names.push_back(pv);
  }

  const auto& class_names = class_selection->names;
  if (!dry_run && !(names.empty() && class_names.empty())) {
    std::string what;
    if (!names.empty()) what = std::to_string(names.size()) + " PV" + (names.size() == 1 ? "" : "s");
    if (!class_names.empty()) {
      what += (what.empty() ? "" : " and ") + std::to_string(class_names.size()) +
              " StorageClass" + (class_names.size() == 1 ? "" : "es");
    }
    const std::string question = (rollback ? "Roll back " : "Move ") + what + "?";
    if (!Confirm(question, yes, in, err)) return kExitUsage;
  }

  std::vector<MoveResult> moved;
  const auto started = std::chrono::steady_clock::now();
  {
    // The board's live line ends (with the final tally) before the report is printed.
    ProgressBoard board(err, ProgressLive(err), names.size(), rollback ? "rolled back" : "moved");
    MoveOptions options;
    options.scale_down = scale_down;
    options.dry_run = dry_run;
    options.wait_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
    options.progress = [&board](const std::string& pv, const std::string& what) {
      board.Step(pv, what);
    };
    // What every PV's steps read, watched once for the run instead of listed per PV (a dry run
    // waits for nothing and reads each PV once).
    std::unique_ptr<WatchedObjects> watched;
    if (!dry_run && !names.empty()) {
      watched = std::make_unique<WatchedObjects>(client->get(), f.kube.namespace_);
      watched->Start(kWatchStartTimeout);
      const std::string summary = watched->Summary();
      if (summary.find(';') != std::string::npos) board.Note(summary);
    }
    PvMover mover(client->get(), journal.get(), &*translator, options, watched.get());
    ParallelMover runner(client->get(), journal.get(), &mover, parallel,
                         [&board](const std::string& line) { board.Note(line); });
    runner.on_result = [&board](const MoveResult& r) { board.Finished(r); };
    moved = rollback ? runner.Rollback(units) : runner.Apply(units);
  }
  for (auto& r : moved) results.push_back(std::move(r));
  // StorageClasses after the PVs, one at a time (each is a delete and a create).
  StorageClassMover class_mover(client->get(), journal.get(), &*translator,
                                class_selection->flex_provisioners, dry_run);
  for (const auto& c : class_names) {
    results.push_back(rollback ? class_mover.Rollback(c) : class_mover.Apply(c));
    if (!rollback || results.back().outcome != Outcome::kRolledBack) continue;
    // What rollback does not take back, said where the operator is looking.
    auto meanwhile = CsiPvsProvisionedMeanwhile(**client, *journal, c);
    if (!meanwhile.ok() || meanwhile->empty()) continue;
    std::string names;
    for (const auto& pv : *meanwhile) names += (names.empty() ? "" : ", ") + pv;
    err << "flexcsi migrate rollback: note: " << meanwhile->size() << " CSI PV"
        << (meanwhile->size() == 1 ? " of StorageClass " + c + " was"
                                   : "s of StorageClass " + c + " were")
        << " provisioned by external-provisioner, not moved by apply (" << names
        << "): rollback leaves them CSI, and once external-provisioner is stopped nobody deletes "
           "their volumes (flexcsi-controller deletes FlexVolume PVs only); see "
           "docs/migration.md, \"Going back\"\n";
  }
  PrintRequestStats((*client)->Stats(), std::chrono::steady_clock::now() - started, err);
  if (f.output == "json") {
    out << ResultsToJson(dry_run ? "apply --dry-run" : name, results).dump(2) << "\n";
  } else {
    PrintResultsTable(results, out);
  }
  return ExitFor(results);
}

int RunStatus(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app("Show the migration journal: where each PV's migration stands.",
               "flexcsi migrate status");
  CommonFlags f;
  AddKubeFlags(app, f);  // accepted like everywhere, unused: the journal is local
  app.add_option("--journal", f.journal, "journal directory (default " + DefaultJournalDir() + ")");
  app.add_option("-o,--output", f.output, "table or json")->check(CLI::IsMember({"table", "json"}));
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;
  if (f.journal.empty()) f.journal = DefaultJournalDir();
  auto journal = MigrationJournal::OpenForReading(f.journal);
  std::vector<MigrationRecord> records;
  std::vector<WorkloadGroupRecord> groups;
  std::vector<StorageClassRecord> classes;
  if (journal.ok()) {
    auto listed = (*journal)->List();
    if (!listed.ok()) return Error(err, "status", listed.status());
    records = std::move(*listed);
    auto listed_groups = (*journal)->ListGroups();
    if (!listed_groups.ok()) return Error(err, "status", listed_groups.status());
    groups = std::move(*listed_groups);
    auto listed_classes = (*journal)->ListStorageClasses();
    if (!listed_classes.ok()) return Error(err, "status", listed_classes.status());
    classes = std::move(*listed_classes);
  } else if (journal.status().code() != Code::kNotFound) {
    return Error(err, "status", journal.status());
  }
  if (f.output == "json") {
    nlohmann::json j = JournalToJson(records, groups);
    j["storageClasses"] = StorageClassJournalToJson(classes);
    out << j.dump(2) << "\n";
  } else if (records.empty() && classes.empty()) {
    out << "No migrations in " << f.journal << ".\n";
  } else {
    if (!records.empty()) PrintJournalTable(records, groups, out);
    if (!classes.empty()) {
      if (!records.empty()) out << "\n";
      PrintStorageClassJournalTable(classes, out);
    }
  }
  return kExitOk;
}

}  // namespace

int RunMigrateCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                      std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  const std::string& sub = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "plan") return RunPlan(rest, out, err);
  if (sub == "apply") return RunApplyOrRollback(false, rest, in, out, err);
  if (sub == "rollback") return RunApplyOrRollback(true, rest, in, out, err);
  if (sub == "status") return RunStatus(rest, out, err);
  if (sub == "help" || sub == "--help" || sub == "-h") {
    out << kUsage;
    return kExitOk;
  }
  err << "flexcsi migrate: unknown command \"" << sub << "\"\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace flexcsi::migrate
