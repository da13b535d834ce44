"""csi-attacher (kubernetes-csi/external-attacher) and the VolumeAttachment side of the
attach/detach controller, for CSI PVs whose CSIDriver requires attach. Only with --csi-attacher.

- While a node lists a CSI PV in status.volumesAttached, a VolumeAttachment
  `csi-<sha256(handle + driver + node)>` names it (spec.attacher, spec.nodeName,
  spec.source.persistentVolumeName; status.attached true), and the PV carries the finalizer
  `external-attacher/<driver with every character outside [a-zA-Z0-9-] replaced by ->` (an `X`
  appended when that ends with `-`): pkg/controller/util.go GetFinalizerName.
- Once the node no longer lists it, the VolumeAttachment is deleted.
- The PV finalizer is removed only from a PV being deleted that no VolumeAttachment names
  (csi_handler.go SyncNewOrUpdatedPersistentVolume ignores PVs without a deletionTimestamp), so
  a CSI PV deleted while attached stays Terminating until it is detached.
"""
import hashlib
import re

from ..volume_names import attached_name
from .base import Controller


def finalizer_name(driver):
    name = re.sub("[^a-zA-Z0-9-]", "-", driver)
    return "external-attacher/" + (name + "X" if name.endswith("-") else name)


class CsiAttacherStandIn(Controller):
    name = "csi-attacher"

    def sync(self):
        pv_t = self.t("v1", "persistentvolumes")
        va_t = self.t("storage.k8s.io/v1", "volumeattachments")
        drivers = {d["metadata"]["name"]: d
                   for d in self.items(self.t("storage.k8s.io/v1", "csidrivers"))}
        pvs = {}  # attached name -> PV, for CSI PVs that attach
        for pv in self.items(pv_t):
            csi = (pv.get("spec") or {}).get("csi")
            name = attached_name(pv, drivers) if csi else None
            if name:
                pvs[name] = pv
        wanted = {}  # VolumeAttachment name -> (pv, node)
        for node in self.items(self.t("v1", "nodes")):
            for v in (node.get("status") or {}).get("volumesAttached") or []:
                pv = pvs.get(v.get("name"))
                if pv is None:
                    continue
                csi, node_name = pv["spec"]["csi"], node["metadata"]["name"]
                key = csi.get("volumeHandle", "") + csi.get("driver", "") + node_name
                wanted["csi-" + hashlib.sha256(key.encode()).hexdigest()] = (pv, node_name)
        for va_name, (pv, node_name) in wanted.items():
            self._attach(va_t, pv_t, va_name, pv, node_name)
        named = set()
        for va in list(self.items(va_t)):
            if va["metadata"]["name"] not in wanted:
                self.delete(va_t, va)
            else:
                named.add(((va.get("spec") or {}).get("source") or {})
                          .get("persistentVolumeName"))
        for pv in self.items(pv_t):
            csi = (pv.get("spec") or {}).get("csi")
            if not csi or not pv["metadata"].get("deletionTimestamp"):
                continue
            finalizer = finalizer_name(csi.get("driver", ""))
            kept = [f for f in pv["metadata"].get("finalizers") or [] if f != finalizer]
            if pv["metadata"]["name"] in named or kept == pv["metadata"].get("finalizers"):
                continue
            new = dict(pv)
            new["metadata"] = dict(pv["metadata"], finalizers=kept)
            self.update(pv_t, new)

    def _attach(self, va_t, pv_t, va_name, pv, node_name):
        driver = pv["spec"]["csi"].get("driver", "")
        va = self.obj(va_t, "", va_name)
        if va is None:
            va = self.create(va_t, "", {
                "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                "metadata": {"name": va_name},
                "spec": {"attacher": driver, "nodeName": node_name,
                         "source": {"persistentVolumeName": pv["metadata"]["name"]}}})
            if va is None:
                return
        if not (va.get("status") or {}).get("attached"):
            new = dict(va)
            new["status"] = {"attached": True}
            self.update(va_t, new, "status")
        finalizers = pv["metadata"].get("finalizers") or []
        finalizer = finalizer_name(driver)
        if finalizer not in finalizers and not pv["metadata"].get("deletionTimestamp"):
            new = dict(pv)
            new["metadata"] = dict(pv["metadata"], finalizers=finalizers + [finalizer])
            self.update(pv_t, new)
