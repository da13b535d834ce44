// Deleter: the reclaim half of an external provisioner. A PV this controller provisioned
// (provisioned-by one of our provisioners, a FlexVolume of one of our drivers) that is Released
// with reclaim policy Delete loses its storage first (DeleteVolume), then its PV object; the
// finalizer external-provisioner.volume.kubernetes.io/finalizer keeps the object until the
// storage is gone, so a user deleting the PV never orphans storage. A PV with reclaim Retain
// only loses our finalizer when it is deleted: retained storage is the user's.
#pragma once

#include <string>

#include "controller/controller_context.h"

namespace flexcsi::controller {

class Deleter {
 public:
  explicit Deleter(ControllerContext& ctx) : ctx_(ctx) {}
  Status SyncVolume(const std::string& pv_name);
  // False for a PV this controller has nothing to do with in its present state: neither
  // Released nor being deleted. Lets a cached copy answer a resync without a read.
  static bool MayNeedWork(const nlohmann::json& pv);

 private:
  Status RemoveFinalizer(nlohmann::json pv);
  ControllerContext& ctx_;
};

}  // namespace flexcsi::controller
