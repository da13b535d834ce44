// Provisioner: turns Pending claims of our provisioners into a CSI volume plus a bound-to-be
// FlexVolume PV, and recovers from crashes through the intent journal.
//
// Order of one provisioning (each step safe to repeat after a crash at any point):
//   1. PV pvc-<uid> exists?  -> done (the journal row, if any, is finished).
//   2. journal row "about to create pvc-<uid> for claim <uid>"       (fsync'd)
//   3. CreateVolume(name = pvc-<uid>)   idempotent: a repeat returns the same volume
//   4. journal row gets the volume id
//   5. claim still there with that uid? no -> DeleteVolume, finish the row
//   6. create the PV (AlreadyExists counts as created)                -> finish the row
// So a claim never gets two volumes, no PV exists without its volume, and a volume without a
// PV always has a row that leads to either its PV or its deletion (RecoverJournal).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controller/controller_context.h"
#include "controller/provision_plan.h"

namespace flexcsi::controller {

class Provisioner {
 public:
  explicit Provisioner(ControllerContext& ctx) : ctx_(ctx) {}

  // Provisions the claim if it is ours and ready. A non-OK status means "retry later"; the
  // reason has already been recorded as a ProvisioningFailed event where the user should see it.
  Status SyncClaim(const std::string& namespace_, const std::string& name);
  Status SyncClaim(const nlohmann::json& claim);

  // Whether a claim that is not Bound may give the provisioner work, judged from its watched
  // copy without a read: one handed to another provisioner, or neither handed over nor placed
  // by the scheduler yet, or already naming its volume, has none.
  bool MayHaveWork(const nlohmann::json& claim) const;

  // Finishes every row whose PV exists and undoes every row whose claim is gone; rows of live
  // claims are left to the claims' own keys.
  Status RecoverJournal();

 private:
  Status Provision(const nlohmann::json& claim, const nlohmann::json& storage_class,
                   const DriverConfig& driver);
  // --node-deployment, a claim no node owns yet: an Immediate claim this node may serve is
  // taken by writing this node into its selected-node annotation (optimistic concurrency: one
  // node wins), as external-provisioner does; anything else is left alone, silently.
  Status ClaimForThisNode(const nlohmann::json& claim, const DriverConfig& driver);
  // The driver of a WaitForFirstConsumer claim of one of our classes that the scheduler has
  // placed and the PV controller has not annotated yet (ProvisionerOfClaim), else null.
  const DriverConfig* DriverOfPlacedClaim(const nlohmann::json& claim);
  StatusOr<ContentSource> ResolveDataSource(const nlohmann::json& claim,
                                            const DriverConfig& driver);
  // Repeats the journaled CreateVolume to learn a lost volume id, then deletes the volume.
  Status UndoIntent(const struct Intent& intent);
  void Failed(const nlohmann::json& claim, const std::string& storage_class, const Status& why);
  // A claim this cluster can never see served (unservable_claim.h): one ProvisioningFailed
  // event and one log line per claim, however often it is synced.
  void RefuseOnce(const nlohmann::json& claim, const std::string& storage_class,
                  const std::string& why);
  // A Pending claim without a provisioner annotation whose class is ours (clusters before 1.11
  // leave WaitForFirstConsumer claims so): refused once when it cannot be served.
  Status RefuseUnannotated(const nlohmann::json& claim);
  // A Warning event on the claim when the volume's accessible topology (the PV's nodeAffinity)
  // matches no node's labels.
  void WarnIfNoNodeMatches(const nlohmann::json& claim, const std::string& pv_name,
                           const csi::v1::Volume& volume);

  ControllerContext& ctx_;
  // Claims (uid) being provisioned right now: the journal replay and the claim's own key must
  // not run two provisionings of one claim at once (harmless, CreateVolume is idempotent, but
  // it doubles the driver's work and the events).
  std::mutex in_flight_mu_;
  std::set<std::string> in_flight_;
  std::map<std::string, int> lost_races_;  // guarded by in_flight_mu_; claim uid -> conflicts
};

}  // namespace flexcsi::controller
