#include "migrate/storage_class_mover.h"

#include <set>

#include "migrate/cluster_objects.h"
#include "migrate/storage_class_plan.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

kube::ResourcePath Classes() {
  return kube::ResourcePath::Group("storage.k8s.io/v1", "storageclasses");
}

// What tells the original from its twin: the immutable fields, and the marker annotation (a
// FlexVolume class's twin may differ from it in nothing else).
bool SameClass(const json& live, const json& want) {
  auto field = [](const json& o, const char* key) { return o.value(key, json()); };
  auto marker = [](const json& o) {
    return Str(o, json::json_pointer("/metadata/annotations/flexcsi.io~1migrated-from-provisioner"));
  };
  return field(live, "provisioner") == field(want, "provisioner") &&
         field(live, "parameters") == field(want, "parameters") && marker(live) == marker(want);
}

std::string Describe(const json& sc) {
  std::string s = "provisioner " + sc.value("provisioner", std::string("?"));
  if (sc.contains("parameters")) s += ", parameters " + sc["parameters"].dump();
  return s;
}

}  // namespace

std::string StorageClassResultName(const std::string& name) { return "storageclass/" + name; }

StorageClassMover::StorageClassMover(kube::KubeClient* client, MigrationJournal* journal,
                                     const translator::Translator* translator,
                                     std::map<std::string, std::string> flex_provisioners,
                                     bool dry_run)
    : client_(client),
      journal_(journal),
      translator_(translator),
      flex_provisioners_(std::move(flex_provisioners)),
      dry_run_(dry_run) {}

MoveResult StorageClassMover::Result(const std::string& name, Outcome outcome,
                                     const std::string& step, const std::string& message,
                                     const std::string& csi_driver) const {
  MoveResult r;
  r.pv_name = StorageClassResultName(name);
  r.outcome = outcome;
  r.step = step;
  r.message = message;
  r.csi_driver = csi_driver;
  return r;
}

MoveResult StorageClassMover::Apply(const std::string& name) {
  std::optional<StorageClassRecord> record;
  if (journal_ != nullptr) {
    auto got = journal_->GetStorageClass(name);
    if (!got.ok()) return Result(name, Outcome::kFailed, "", got.status().message());
    record = std::move(*got);
  }
  if (record && record->state == RecordState::kInProgress) {
    if (record->direction == "rollback") {
      return Result(name, Outcome::kRefused, record->step,
                    "a rollback of this StorageClass is unfinished: run rollback again first");
    }
    return Swap(std::move(*record), false);  // resume: the journal knows both objects
  }
  auto live = client_->Get(Classes().Named(name));
  if (!live.ok()) {
    if (kube::IsNotFound(live.status())) {
      return Result(name, Outcome::kRefused, "", "no StorageClass " + name);
    }
    return Result(name, Outcome::kFailed, "", live.status().message());
  }
  auto plan = PlanStorageClass(*live, *translator_, flex_provisioners_);
  if (!plan) {
    const std::string from = Str(
        *live, json::json_pointer("/metadata/annotations/flexcsi.io~1migrated-from-provisioner"));
    if (!from.empty()) {
      return Result(name, Outcome::kMoved, "", "already moved (from " + from + ")",
                    live->value("provisioner", ""));
    }
    return Result(name, Outcome::kRefused, "",
                  "provisioner " + live->value("provisioner", std::string()) +
                      " is neither an in-tree plugin nor served by flexcsi-controller for a "
                      "FlexVolume rule: nothing to move");
  }
  if (!plan->refusal.empty()) {
    return Result(name, Outcome::kRefused, "", plan->refusal, plan->csi_driver);
  }
  if (dry_run_) {
    kube::DeleteOptions options;
    options.dry_run = true;
    options.precondition_uid = UidOf(*live);
    auto deleted = client_->Delete(Classes().Named(name), options);
    if (!deleted.ok()) return Result(name, Outcome::kFailed, "", deleted.status().message());
    MoveResult r = Result(name, Outcome::kWouldMove, "", "", plan->csi_driver);
    r.actions = {"delete storageclass " + name + " (uid " + UidOf(*live) + ")",
                 "create storageclass " + name + ": " + Describe(plan->twin) +
                     " (not sent: the name is taken until the delete)"};
    return r;
  }
  StorageClassRecord fresh;
  fresh.name = name;
  fresh.original = StripServerFields(*live);
  fresh.twin = plan->twin;
  return Swap(std::move(fresh), false);
}

MoveResult StorageClassMover::Rollback(const std::string& name) {
  auto got = journal_->GetStorageClass(name);
  if (!got.ok()) return Result(name, Outcome::kFailed, "", got.status().message());
  if (!got->has_value()) {
    return Result(name, Outcome::kRefused, "", "StorageClass " + name + " is not in the journal");
  }
  StorageClassRecord record = std::move(**got);
  if (record.state == RecordState::kRolledBack) {
    return Result(name, Outcome::kRolledBack, record.step, "already rolled back");
  }
  return Swap(std::move(record), true);
}

MoveResult StorageClassMover::Swap(StorageClassRecord record, bool rollback) {
  const std::string prefix = rollback ? "rb-" : "";
  const json& from = rollback ? record.twin : record.original;
  const json& to = rollback ? record.original : record.twin;
  const std::string driver = record.twin.value("provisioner", "");
  const std::string name = record.name;
  record.direction = rollback ? "rollback" : "apply";
  record.state = RecordState::kInProgress;
  auto fail = [&](const std::string& step, const std::string& message) {
    record.last_error = message;
    // Best effort (the message is in the report too); a class nothing was announced for yet
    // gets no row, so a failed read leaves no unfinished swap behind.
    if (!record.step.empty()) (void)journal_->PutStorageClass(record);
    return Result(name, Outcome::kFailed, step, message, driver);
  };
  auto announce = [&](const std::string& step) -> Status {
    record.step = prefix + step;
    FLEXCSI_RETURN_IF_ERROR(journal_->PutStorageClass(record));
    MaybeCrashForTest(record.step, false);
    return Status::Ok();
  };

  auto live = client_->Get(Classes().Named(name));
  if (!live.ok() && !kube::IsNotFound(live.status())) {
    return fail(record.step, live.status().message());
  }
  const bool present = live.ok();
  if (present && !SameClass(*live, to)) {
    if (!SameClass(*live, from)) {
      return fail(record.step, "StorageClass " + name + " changed since it was journaled (now " +
                                   Describe(*live) + "); left as it is");
    }
    if (Status s = announce("sc-deleting"); !s.ok()) return fail(record.step, s.message());
    kube::DeleteOptions options;
    options.precondition_uid = UidOf(*live);
    auto deleted = client_->Delete(Classes().Named(name), options);
    if (!deleted.ok() && !kube::IsNotFound(deleted.status())) {
      return fail(record.step, "delete: " + deleted.status().message());
    }
    MaybeCrashForTest(record.step, true);
  }
  if (!present || !SameClass(*live, to)) {
    if (Status s = announce("sc-creating"); !s.ok()) return fail(record.step, s.message());
    auto created = client_->Create(Classes(), to);
    if (!created.ok()) {
      if (!kube::IsAlreadyExists(created.status())) {
        return fail(record.step, "create: " + created.status().message());
      }
      auto again = client_->Get(Classes().Named(name));
      if (!again.ok() || !SameClass(*again, to)) {
        return fail(record.step, "StorageClass " + name +
                                     " was created by someone else meanwhile; left as it is");
      }
    }
    MaybeCrashForTest(record.step, true);
  }
  record.step = prefix + "sc-done";
  record.state = rollback ? RecordState::kRolledBack : RecordState::kMoved;
  record.last_error.clear();
  if (Status s = journal_->PutStorageClass(record); !s.ok()) return fail(record.step, s.message());
  return Result(name, rollback ? Outcome::kRolledBack : Outcome::kMoved, record.step,
                rollback ? "restored: " + Describe(to) : "now " + Describe(to), driver);
}

StatusOr<std::vector<std::string>> CsiPvsProvisionedMeanwhile(kube::KubeClient& client,
                                                              MigrationJournal& journal,
                                                              const std::string& class_name) {
  std::vector<std::string> out;
  auto record = journal.GetStorageClass(class_name);
  if (!record.ok()) return record.status();
  if (!record->has_value() || (*record)->state != RecordState::kRolledBack) return out;
  const std::string original = (*record)->original.value("provisioner", "");
  const std::string driver = (*record)->twin.value("provisioner", "");
  if (original.rfind("kubernetes.io/", 0) == 0 || driver.empty()) return out;
  auto rows = journal.List();
  if (!rows.ok()) return rows.status();
  std::set<std::string> journaled;
  for (const auto& r : *rows) journaled.insert(r.pv_name);
  auto pvs = client.List(kube::ResourcePath::Core("persistentvolumes"));
  if (!pvs.ok()) return pvs.status().WithContext("list persistentvolumes");
  for (const auto& pv : (*pvs)["items"]) {
    if (Str(pv, "/spec/storageClassName"_json_pointer) == class_name &&
        Str(pv, "/spec/csi/driver"_json_pointer) == driver && !journaled.count(NameOf(pv))) {
      out.push_back(NameOf(pv));
    }
  }
  return out;
}

}  // namespace flexcsi::migrate
