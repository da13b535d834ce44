"""The PersistentVolume controller of kube-controller-manager
(pkg/controller/volume/persistentvolume/pv_controller.go, util/util.go): binding both halves,
phases, Lost and re-binding, reclaim, and the storage-provisioner annotations.

What it does per pass, in the real controller's terms:
- syncClaim: unbound claims (no bind-completed annotation) are matched to a pre-bound or
  available PV (smallest that fits: class, access modes, selector, volume mode, size) or, with a
  StorageClass provisioner, annotated for external provisioning; WaitForFirstConsumer claims
  wait for the scheduler's selected-node. Bound claims whose PV is gone, unset, or claimed by
  another uid become Lost; a PV that points back at the claim's uid makes them Bound again.
- syncVolume: PVs without claimRef (or with claimRef.uid empty) are Available; a PV whose claim
  is gone (or has another uid) becomes Released and is reclaimed: Retain keeps it, Delete with a
  provisioned-by annotation naming an external provisioner waits for it, Delete of an in-tree
  deletable plugin deletes the storage (recorded as "storage-delete" in the audit log) and then
  the PV object, Delete of anything else (FlexVolume, NFS, CSI without provisioner) fails the PV.
"""
from .. import quantity
from ..volume_names import in_tree_deleter, source_of
from ..selection import match_label_selector_object
from .base import Controller

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
STORAGE_PROVISIONER_BETA = "volume.beta.kubernetes.io/storage-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
MIGRATED_TO = "pv.kubernetes.io/migrated-to"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def annotations(obj):
    return obj["metadata"].get("annotations") or {}


def storage(obj_spec_capacity):
    return quantity.parse((obj_spec_capacity or {}).get("storage"))


def claim_class(claim):
    return (claim.get("spec") or {}).get("storageClassName") or ""


def volume_class(pv):
    return (pv.get("spec") or {}).get("storageClassName") or ""


def is_bound_to_claim(pv, claim):
    ref = (pv.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    cm = claim["metadata"]
    return (ref.get("name") == cm["name"] and ref.get("namespace") == cm.get("namespace") and
            (not ref.get("uid") or ref.get("uid") == cm["uid"]))


def access_modes_contain(pv_modes, claim_modes):
    return all(m in (pv_modes or []) for m in (claim_modes or []))


def volume_mode(spec):
    return (spec or {}).get("volumeMode") or "Filesystem"


class PersistentVolumeController(Controller):
    name = "persistent-volume-binder"

    def sync(self):
        self.pv_type = self.t("v1", "persistentvolumes")
        self.pvc_type = self.t("v1", "persistentvolumeclaims")
        self.sc_type = self.t("storage.k8s.io/v1", "storageclasses")
        for claim in list(self.items(self.pvc_type)):
            claim = self.obj(self.pvc_type, claim["metadata"]["namespace"],
                             claim["metadata"]["name"])
            if claim is not None:
                self.sync_claim(claim)
        for pv in list(self.items(self.pv_type)):
            pv = self.obj(self.pv_type, "", pv["metadata"]["name"])
            if pv is not None:
                self.sync_volume(pv)

    # ---- helpers ----

    def storage_class(self, name):
        return self.obj(self.sc_type, "", name) if name else None

    def update_claim_status(self, claim, phase, volume):
        status = dict(claim.get("status") or {})
        changed = status.get("phase") != phase
        status["phase"] = phase
        if volume is None:
            for k in ("accessModes", "capacity"):
                if k in status:
                    status.pop(k)
                    changed = True
        else:
            modes = (volume.get("spec") or {}).get("accessModes")
            if status.get("accessModes") != modes:
                status["accessModes"] = modes
                changed = True
            # Capacity is set when the claim becomes Bound, never clobbered afterwards.
            cap = (volume.get("spec") or {}).get("capacity", {}).get("storage")
            if (claim.get("status") or {}).get("phase") != "Bound" or "capacity" not in status:
                if (status.get("capacity") or {}).get("storage") != cap:
                    status["capacity"] = {"storage": cap}
                    changed = True
        if not changed:
            return claim
        new = dict(claim)
        new["status"] = status
        return self.update(self.pvc_type, new, "status")

    def update_volume_phase(self, pv, phase, message=None):
        status = pv.get("status") or {}
        if status.get("phase") == phase and status.get("message") == message:
            return pv
        new = dict(pv)
        new["status"] = {"phase": phase}
        if message:
            new["status"]["message"] = message
        return self.update(self.pv_type, new, "status")

    def set_annotation(self, obj, key, value):
        new = dict(obj)
        new["metadata"] = dict(obj["metadata"])
        ann = dict(annotations(obj))
        ann[key] = value
        new["metadata"]["annotations"] = ann
        return new

    # ---- binding ----

    def bind(self, pv, claim):
        """bindVolumeToClaim, volume phase Bound, bindClaimToVolume, claim phase Bound."""
        cm = claim["metadata"]
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or ref.get("name") != cm["name"] or ref.get("namespace") != cm["namespace"] \
                or ref.get("uid") != cm["uid"]:
            new = dict(pv)
            new["spec"] = dict(pv["spec"])
            new["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim",
                                       "namespace": cm["namespace"], "name": cm["name"],
                                       "uid": cm["uid"], "apiVersion": "v1",
                                       "resourceVersion": cm["resourceVersion"]}
            if not ref and BOUND_BY_CONTROLLER not in annotations(pv):
                new = self.set_annotation(new, BOUND_BY_CONTROLLER, "yes")
            pv = self.update(self.pv_type, new)
            if pv is None:
                return
        pv = self.update_volume_phase(pv, "Bound")
        if pv is None:
            return
        new = dict(claim)
        dirty = False
        if (claim.get("spec") or {}).get("volumeName") != pv["metadata"]["name"]:
            new["spec"] = dict(claim["spec"])
            new["spec"]["volumeName"] = pv["metadata"]["name"]
            new = self.set_annotation(new, BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if annotations(new).get(BIND_COMPLETED) != "yes":
            new = self.set_annotation(new, BIND_COMPLETED, "yes")
            dirty = True
        if dirty:
            claim = self.update(self.pvc_type, new)
            if claim is None:
                return
        self.update_claim_status(claim, "Bound", pv)

    def check_volume_satisfies_claim(self, pv, claim):
        request = storage(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
        if storage(pv["spec"].get("capacity")) < request:
            return "requested PV is too small"
        if volume_class(pv) != claim_class(claim):
            return "storageClassName does not match"
        if volume_mode(pv["spec"]) != volume_mode(claim["spec"]):
            return "incompatible volumeMode"
        if not access_modes_contain(pv["spec"].get("accessModes"),
                                    claim["spec"].get("accessModes")):
            return "incompatible accessMode"
        return None

    def find_best_match(self, claim, delay_binding):
        """FindMatchingVolume with node == nil."""
        spec = claim.get("spec") or {}
        request = storage((spec.get("resources") or {}).get("requests"))
        selector = spec.get("selector")
        best = None
        for pv in self.items(self.pv_type):
            pspec = pv.get("spec") or {}
            if not access_modes_contain(pspec.get("accessModes"), spec.get("accessModes")):
                continue
            if volume_mode(pspec) != volume_mode(spec):
                continue
            if pv["metadata"].get("deletionTimestamp"):
                continue
            if is_bound_to_claim(pv, claim):
                return pv
            if delay_binding:
                continue
            if (pv.get("status") or {}).get("phase") != "Available" or pspec.get("claimRef"):
                continue
            if selector is not None and not match_label_selector_object(
                    selector, pv["metadata"].get("labels")):
                continue
            if volume_class(pv) != claim_class(claim):
                continue
            size = storage(pspec.get("capacity"))
            if size is not None and request is not None and size >= request:
                if best is None or storage(best["spec"].get("capacity")) > size:
                    best = pv
        return best

    def sync_claim(self, claim):
        if annotations(claim).get(BIND_COMPLETED) is None:
            self.sync_unbound_claim(claim)
        else:
            self.sync_bound_claim(claim)

    def sync_unbound_claim(self, claim):
        spec = claim.get("spec") or {}
        volume_name = spec.get("volumeName")
        if not volume_name:
            sc = self.storage_class(claim_class(claim))
            delay = sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"
            pv = self.find_best_match(claim, delay)
            if pv is not None:
                self.bind(pv, claim)
                return
            if delay and SELECTED_NODE not in annotations(claim):
                self.event(claim, self.pvc_type, "Normal", "WaitForFirstConsumer",
                           "waiting for first consumer to be created before binding")
            elif claim_class(claim):
                self.provision_claim(claim, sc)
                return
            else:
                self.event(claim, self.pvc_type, "Normal", "FailedBinding",
                           "no persistent volumes available for this claim and no storage class "
                           "is set")
            self.update_claim_status(claim, "Pending", None)
            return
        pv = self.obj(self.pv_type, "", volume_name)
        if pv is None:
            self.update_claim_status(claim, "Pending", None)
            return
        if not (pv.get("spec") or {}).get("claimRef"):
            why = self.check_volume_satisfies_claim(pv, claim)
            if why:
                self.event(claim, self.pvc_type, "Warning", "VolumeMismatch",
                           "Cannot bind to requested volume \"%s\": %s" % (volume_name, why))
                self.update_claim_status(claim, "Pending", None)
            else:
                self.bind(pv, claim)
        elif is_bound_to_claim(pv, claim):
            self.bind(pv, claim)
        else:
            self.event(claim, self.pvc_type, "Warning", "FailedBinding",
                       "volume \"%s\" already bound to a different claim." % volume_name)
            if BOUND_BY_CONTROLLER not in annotations(claim):
                self.update_claim_status(claim, "Pending", None)

    def provision_claim(self, claim, sc):
        if sc is None:
            self.event(claim, self.pvc_type, "Warning", "ProvisioningFailed",
                       "storageclass.storage.k8s.io \"%s\" not found" % claim_class(claim))
            self.update_claim_status(claim, "Pending", None)
            return
        provisioner = sc.get("provisioner")
        if provisioner == NO_PROVISIONER:
            self.event(claim, self.pvc_type, "Warning", "ProvisioningFailed",
                       "no volume plugin matched name: %s" % provisioner)
            self.update_claim_status(claim, "Pending", None)
            return
        ann = annotations(claim)
        if ann.get(STORAGE_PROVISIONER) != provisioner or \
                ann.get(STORAGE_PROVISIONER_BETA) != provisioner:
            new = self.set_annotation(claim, STORAGE_PROVISIONER, provisioner)
            new = self.set_annotation(new, STORAGE_PROVISIONER_BETA, provisioner)
            claim = self.update(self.pvc_type, new)
            if claim is None:
                return
        self.event(claim, self.pvc_type, "Normal", "ExternalProvisioning",
                   "Waiting for a volume to be created either by the external provisioner '%s' "
                   "or manually by the system administrator. If volume creation is delayed, "
                   "please verify that the provisioner is running and correctly registered."
                   % provisioner)
        self.update_claim_status(claim, "Pending", None)

    def sync_bound_claim(self, claim):
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if not volume_name:
            self.lose(claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. "
                      "Data on the volume is lost!")
            return
        pv = self.obj(self.pv_type, "", volume_name)
        if pv is None:
            self.lose(claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on "
                      "the volume is lost!")
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or ref.get("uid") == claim["metadata"]["uid"]:
            self.bind(pv, claim)
        else:
            self.lose(claim, "ClaimMisbound", "Two claims are bound to the same volume, this one "
                      "is bound incorrectly")

    def lose(self, claim, reason, message):
        if (claim.get("status") or {}).get("phase") != "Lost":
            self.event(claim, self.pvc_type, "Warning", reason, message)
        self.update_claim_status(claim, "Lost", None)

    # ---- volumes ----

    def sync_volume(self, pv):
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef")
        if not ref or not ref.get("uid"):
            self.update_volume_phase(pv, "Available")
            return
        claim = self.obj(self.pvc_type, ref.get("namespace"), ref.get("name"))
        if claim is not None and claim["metadata"]["uid"] != ref.get("uid"):
            claim = None
        if claim is None:
            phase = (pv.get("status") or {}).get("phase")
            if phase not in ("Released", "Failed"):
                pv = self.update_volume_phase(pv, "Released")
                if pv is None:
                    return
            self.reclaim(pv)
            return
        claim_volume = (claim.get("spec") or {}).get("volumeName")
        if not claim_volume:
            return  # the claim's sync completes the binding
        if claim_volume == pv["metadata"]["name"]:
            self.update_volume_phase(pv, "Bound")
            return
        if PROVISIONED_BY in annotations(pv) and \
                spec.get("persistentVolumeReclaimPolicy") == "Delete":
            if (pv.get("status") or {}).get("phase") not in ("Released", "Failed"):
                pv = self.update_volume_phase(pv, "Released")
                if pv is None:
                    return
            self.reclaim(pv)
            return
        self.unbind(pv)

    def unbind(self, pv):
        new = dict(pv)
        new["spec"] = dict(pv["spec"])
        if BOUND_BY_CONTROLLER in annotations(pv):
            new["spec"].pop("claimRef", None)
            new["metadata"] = dict(pv["metadata"])
            ann = dict(annotations(pv))
            ann.pop(BOUND_BY_CONTROLLER)
            if ann:
                new["metadata"]["annotations"] = ann
            else:
                new["metadata"].pop("annotations", None)
        else:
            ref = dict(new["spec"]["claimRef"])
            ref.pop("uid", None)
            new["spec"]["claimRef"] = ref
        pv = self.update(self.pv_type, new)
        if pv is not None:
            self.update_volume_phase(pv, "Available")

    def is_released(self, pv):
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            return False
        claim = self.obj(self.pvc_type, ref.get("namespace"), ref.get("name"))
        if claim is not None and claim["metadata"]["uid"] == ref.get("uid"):
            vn = (claim.get("spec") or {}).get("volumeName")
            return bool(vn) and vn != pv["metadata"]["name"]
        return True

    def reclaim(self, pv):
        if annotations(pv).get(MIGRATED_TO):
            return  # the CSI external provisioner handles migrated PVs
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        if policy == "Retain":
            return
        if policy == "Recycle":
            self.update_volume_phase(pv, "Failed", "Recycle is not supported by this fake API "
                                     "server")
            return
        if policy != "Delete":
            self.event(pv, self.pv_type, "Warning", "VolumeUnknownReclaimPolicy",
                       "Volume has unrecognized PersistentVolumeReclaimPolicy")
            self.update_volume_phase(pv, "Failed")
            return
        if pv["metadata"].get("deletionTimestamp") or not self.is_released(pv):
            return
        provisioned_by = annotations(pv).get(PROVISIONED_BY)
        deleter = in_tree_deleter(pv)
        if provisioned_by:
            if not provisioned_by.startswith("kubernetes.io/"):
                return  # an external provisioner deletes it
            if provisioned_by != deleter:
                self.fail_delete(pv, "no deletable volume plugin matched name: %s"
                                 % provisioned_by)
                return
        if deleter is None:
            self.fail_delete(pv, "error getting deleter volume plugin for volume \"%s\": no "
                             "deletable volume plugin matched" % pv["metadata"]["name"])
            return
        # The in-tree plugin deletes the storage, then the controller deletes the PV object.
        self.fake.audit.record("storage-delete", self.pv_type, "", pv["metadata"]["name"],
                               user=self.user, obj=pv,
                               extra={"plugin": deleter, "source": source_of(pv)})
        self.delete(self.pv_type, pv)

    def fail_delete(self, pv, message):
        if (pv.get("status") or {}).get("phase") != "Failed":
            self.event(pv, self.pv_type, "Warning", "VolumeFailedDelete", message)
        self.update_volume_phase(pv, "Failed", message)
