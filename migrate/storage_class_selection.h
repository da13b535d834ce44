// Which StorageClasses `apply` and `rollback` take: the named ones (--storage-class, in the
// order given), or with --all the journal's unfinished rows first (a killed run's class, deleted
// and not yet re-created, is taken up again) and then, for apply, every class the plan lists
// (rollback: every class in the journal not rolled back). A namespace-limited --all
// (-n) takes no class: classes are cluster-wide.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/kube_client.h"
#include "migrate/journal.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

struct StorageClassSelection {
  std::vector<std::string> names;
  std::map<std::string, std::string> flex_provisioners;  // FlexVolumeProvisioners of the PVs
};

struct StorageClassSelectionRequest {
  bool rollback = false;
  bool all = false;
  std::vector<std::string> names;  // --storage-class
  std::string namespace_;
};

// `journal` is null for a dry run.
StatusOr<StorageClassSelection> SelectStorageClasses(MigrationJournal* journal,
                                                     kube::KubeClient& client,
                                                     const translator::Translator& translator,
                                                     const StorageClassSelectionRequest& request);

}  // namespace flexcsi::migrate
