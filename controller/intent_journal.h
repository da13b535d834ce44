// IntentJournal: the controller's record of volumes it may have created but not yet handed over
// to a PV object. A row is written BEFORE CreateVolume and removed only once the PV exists (or
// the volume is deleted again), so a crash at any point leaves either a PV that owns the
// storage or a row that leads to it: "never storage without a PV or a record that deletes it".
//
// SQLite, like the bridge's state store (one journal design in flexcsi). The CreateVolume
// request is kept without secrets, so a restart can repeat it (idempotent by name) to learn the
// id of a volume whose response was lost, and delete it when its claim is gone.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/sqlite_database.h"
#include "common/status.h"

namespace flexcsi::controller {

struct Intent {
  std::string volume_name;  // pvc-<uid>: CreateVolume name and PV name
  std::string claim_namespace;
  std::string claim_name;
  std::string claim_uid;
  std::string flex_driver;
  std::string request;    // serialized CreateVolumeRequest, secrets stripped
  std::string volume_id;  // empty until CreateVolume answered
};

class IntentJournal {
 public:
  // Opens or creates the database (":memory:" for tests that do not restart).
  static StatusOr<std::unique_ptr<IntentJournal>> Open(const std::string& path);
  ~IntentJournal();

  Status Begin(const Intent& intent);  // insert or replace
  Status SetVolumeId(const std::string& volume_name, const std::string& volume_id);
  Status Finish(const std::string& volume_name);  // the PV exists or the volume is gone
  StatusOr<std::vector<Intent>> List();
  StatusOr<std::optional<Intent>> Find(const std::string& volume_name);

 private:
  explicit IntentJournal(std::unique_ptr<SqliteDatabase> db) : db_(std::move(db)) {}
  Status Exec(const std::string& sql, const std::vector<std::string>& args);
  std::unique_ptr<SqliteDatabase> db_;
};

}  // namespace flexcsi::controller
