"""pvc-protection and pv-protection (pkg/controller/volume/pvcprotection,
pkg/controller/volume/pvprotection): each adds its finalizer to live objects that lack it and
removes it from an object being deleted once the object is no longer in use:
- a claim is in use while a pod scheduled to a node (spec.nodeName set) names it in
  spec.volumes[].persistentVolumeClaim.claimName, whatever the pod's phase (podUsesPVC);
- a PV is in use while its phase is Bound.
"""
from ..admission import PV_PROTECTION, PVC_PROTECTION
from .base import Controller


def _with_finalizers(obj, finalizers):
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    new["metadata"]["finalizers"] = finalizers
    return new


class _Protection(Controller):
    finalizer = ""

    def resource(self):
        raise NotImplementedError

    def in_use(self, obj):
        raise NotImplementedError

    def sync(self):
        rtype = self.resource()
        for obj in list(self.items(rtype)):
            fins = list(obj["metadata"].get("finalizers") or [])
            deleting = obj["metadata"].get("deletionTimestamp")
            if not deleting and self.finalizer not in fins:
                self.update(rtype, _with_finalizers(obj, fins + [self.finalizer]))
            elif deleting and self.finalizer in fins and not self.in_use(obj):
                self.update(rtype, _with_finalizers(obj, [f for f in fins
                                                          if f != self.finalizer]))


class PvcProtectionController(_Protection):
    name = "pvc-protection-controller"
    finalizer = PVC_PROTECTION

    def resource(self):
        return self.t("v1", "persistentvolumeclaims")

    def in_use(self, claim):
        pods = self.t("v1", "pods")
        name = claim["metadata"]["name"]
        for pod in self.items(pods, claim["metadata"]["namespace"]):
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            for v in (pod.get("spec") or {}).get("volumes") or []:
                if (v.get("persistentVolumeClaim") or {}).get("claimName") == name:
                    return True
        return False


class PvProtectionController(_Protection):
    name = "pv-protection-controller"
    finalizer = PV_PROTECTION

    def resource(self):
        return self.t("v1", "persistentvolumes")

    def in_use(self, pv):
        return (pv.get("status") or {}).get("phase") == "Bound"
