"""The expand controller (pkg/controller/volume/expand/expand_controller.go) for a bound claim
whose request exceeds status.capacity:
- FlexVolume PVs are "kubelet-expandable" (volume.Spec.IsKubeletExpandable): without the driver
  on the controller host the controller uses the no-op expander, whose plugin name is the flex
  driver (Spec.KubeletExpandablePluginName). It marks the claim Resizing with annotation
  volume.kubernetes.io/storage-resizer=<flex driver>, raises pv.spec.capacity (keeping the old
  one in volume.alpha.kubernetes.io/pre-resize-capacity), records VolumeResizeSuccessful and
  leaves condition FileSystemResizePending for kubelet's expandfs. It never execs anything.
- CSI PVs get a Normal ExternalExpanding event ("waiting for an external controller to expand
  this PVC") and nothing else: external-resizer recognises CSI PVs by pv.spec.csi.driver, so the
  controller sets no resizer annotation for them.
- Other sources: the same ExternalExpanding event (their in-tree expanders are not modelled).
"""
from .. import quantity
from .base import Controller
from .pv_binder import annotations

STORAGE_RESIZER = "volume.kubernetes.io/storage-resizer"
PRE_RESIZE_CAPACITY = "volume.alpha.kubernetes.io/pre-resize-capacity"
FS_RESIZE_MESSAGE = ("Waiting for user to (re-)start a pod to finish file system resize of "
                     "volume on node.")


def _condition(ctype):
    from ..api_ops import now_rfc3339
    cond = {"type": ctype, "status": "True", "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339()}
    if ctype == "FileSystemResizePending":
        cond["message"] = FS_RESIZE_MESSAGE
    return cond


class ExpandController(Controller):
    name = "expand-controller"

    def sync(self):
        pvc_type = self.t("v1", "persistentvolumeclaims")
        pv_type = self.t("v1", "persistentvolumes")
        for claim in list(self.items(pvc_type)):
            spec, status = claim.get("spec") or {}, claim.get("status") or {}
            if not spec.get("volumeName") or status.get("phase") != "Bound":
                continue
            pv = self.obj(pv_type, "", spec["volumeName"])
            if pv is None:
                continue
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if ref.get("uid") != claim["metadata"]["uid"] or \
                    ref.get("namespace") != claim["metadata"]["namespace"]:
                continue
            request = quantity.parse(((spec.get("resources") or {}).get("requests") or {})
                                     .get("storage"))
            have = quantity.parse((status.get("capacity") or {}).get("storage"))
            if request is None or have is None:
                continue
            if request <= have:
                # Node expansion done (status.capacity caught up): the PV's pre-resize
                # annotation goes (expand(): isNodeExpandComplete, DeleteAnnPreResizeCapacity).
                pv_size = quantity.parse(pv["spec"]["capacity"].get("storage"))
                if PRE_RESIZE_CAPACITY in annotations(pv) and pv_size is not None and \
                        have >= pv_size and (pv.get("spec") or {}).get("flexVolume") is not None:
                    new = dict(pv)
                    new["metadata"] = dict(pv["metadata"])
                    ann = dict(annotations(pv))
                    ann.pop(PRE_RESIZE_CAPACITY)
                    new["metadata"]["annotations"] = ann
                    self.update(pv_type, new)
                continue
            if (pv.get("spec") or {}).get("flexVolume") is None:
                self.event(claim, pvc_type, "Normal", "ExternalExpanding",
                           "waiting for an external controller to expand this PVC")
                continue
            self.expand_flex(claim, pv, pvc_type, pv_type, request)

    def expand_flex(self, claim, pv, pvc_type, pv_type, request):
        resizer = pv["spec"]["flexVolume"].get("driver", "")
        conditions = [c.get("type") for c in (claim.get("status") or {}).get("conditions") or []]
        if "FileSystemResizePending" in conditions:
            pv_size = quantity.parse(pv["spec"]["capacity"].get("storage"))
            if pv_size is not None and pv_size >= request:
                return  # waiting for kubelet's expandfs
        # MarkResizeInProgressWithResizer
        if annotations(claim).get(STORAGE_RESIZER) != resizer:
            new = dict(claim)
            new["metadata"] = dict(claim["metadata"])
            ann = dict(annotations(claim))
            ann[STORAGE_RESIZER] = resizer
            new["metadata"]["annotations"] = ann
            claim = self.update(pvc_type, new)
            if claim is None:
                return
        if "Resizing" not in conditions and "FileSystemResizePending" not in conditions:
            new = dict(claim)
            new["status"] = dict(claim.get("status") or {})
            new["status"]["conditions"] = [_condition("Resizing")]
            claim = self.update(pvc_type, new, "status")
            if claim is None:
                return
        # The no-op expander "succeeds"; UpdatePVSize raises the PV's capacity.
        requested = claim["spec"]["resources"]["requests"]["storage"]
        if pv["spec"]["capacity"].get("storage") != requested:
            new = dict(pv)
            new["spec"] = dict(pv["spec"])
            new["spec"]["capacity"] = dict(pv["spec"]["capacity"])
            old_size = pv["spec"]["capacity"].get("storage")
            new["spec"]["capacity"]["storage"] = requested
            new["metadata"] = dict(pv["metadata"])
            ann = dict(annotations(pv))
            ann.setdefault(PRE_RESIZE_CAPACITY, old_size)
            new["metadata"]["annotations"] = ann
            if self.update(pv_type, new) is None:
                return
        # MarkForFSResize: kubelet's expandfs finishes and clears the condition.
        new = dict(claim)
        new["status"] = dict(claim.get("status") or {})
        new["status"]["conditions"] = [_condition("FileSystemResizePending")]
        if self.update(pvc_type, new, "status") is not None:
            self.event(claim, pvc_type, "Normal", "VolumeResizeSuccessful",
                       "ExpandVolume succeeded for volume %s/%s"
                       % (claim["metadata"]["namespace"], claim["metadata"]["name"]))
