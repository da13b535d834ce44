// StorageClassMover: replaces a StorageClass by its CSI twin under the same name, and back.
// A class's provisioner and parameters are immutable (the API server refuses an update of
// either), so the swap is a delete (uid precondition: exactly the class that was planned) and a
// create, each announced in the journal before it is sent:
//   apply     sc-deleting  (original and twin journaled)   rollback  rb-sc-deleting
//             sc-creating                                            rb-sc-creating
//             sc-done      (state moved)                             rb-sc-done (rolled-back)
// Every step re-reads the live class and decides from it, so a run killed anywhere resumes:
// the original still there is deleted, an absent class is created from the journal, the target
// already there is done. A class that is neither the journaled original nor the target (someone
// changed it meanwhile) fails with what it is, and is left alone.
//
// Claims naming the class keep working: a bound claim never reads its class again, and a claim
// created while the class is absent stays Pending. The PV controller (1.24
// pkg/controller/volume/persistentvolume) treats a missing class as no delayed binding, then
// fails that claim's provisioning with a ProvisioningFailed event "storageclass ... not found"
// and tries again at its next claim sync; external-provisioner acts only on claims the PV
// controller annotated with its name, and requeues one whose class it cannot read. Once the twin
// exists, the claim is provisioned once, by the twin's provisioner.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kube/kube_client.h"
#include "migrate/journal.h"
#include "migrate/pv_mover.h"
#include "translator/translator.h"

namespace flexcsi::migrate {

// MoveResult.pv_name of a class: "storageclass/<name>", so PVs and classes share one report.
std::string StorageClassResultName(const std::string& name);

class StorageClassMover {
 public:
  // `journal` may be null only with `dry_run`. `flex_provisioners` as FlexVolumeProvisioners
  // of the cluster's PVs. All pointers must outlive the mover.
  StorageClassMover(kube::KubeClient* client, MigrationJournal* journal,
                    const translator::Translator* translator,
                    std::map<std::string, std::string> flex_provisioners, bool dry_run);

  MoveResult Apply(const std::string& name);
  MoveResult Rollback(const std::string& name);

 private:
  MoveResult Swap(StorageClassRecord record, bool rollback);
  MoveResult Result(const std::string& name, Outcome outcome, const std::string& step,
                    const std::string& message, const std::string& csi_driver = "") const;

  kube::KubeClient* client_;
  MigrationJournal* journal_;
  const translator::Translator* translator_;
  std::map<std::string, std::string> flex_provisioners_;
  bool dry_run_;
};

// After the rollback of a class flexcsi-controller served: the PVs of the class with the twin's
// CSI driver that are not in the journal, i.e. those external-provisioner provisioned while the
// twin was in place. Rollback leaves them CSI, and once external-provisioner is stopped nobody
// deletes their volumes (flexcsi-controller's deleter takes FlexVolume PVs only): the operator
// decides (docs/migration.md, "Going back"). Empty for an in-tree class (its CSI driver's own
// external-provisioner keeps serving its PVs) and for a class not rolled back.
StatusOr<std::vector<std::string>> CsiPvsProvisionedMeanwhile(kube::KubeClient& client,
                                                              MigrationJournal& journal,
                                                              const std::string& class_name);

}  // namespace flexcsi::migrate
