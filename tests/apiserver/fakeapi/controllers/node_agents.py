"""What the nodes do, seen from the API: a kubelet stand-in per node and the attach/detach
controller (pkg/controller/volume/attachdetach).

- kubelet: a scheduled pod whose claims are all Bound starts Running (Ready); a pod being
  deleted gracefully is stopped and removed (a delete with gracePeriodSeconds 0) after
  --pod-termination-ms; node.status.volumesInUse lists the attachable volumes of the pods still
  on the node (mounted until the pod is gone).
- attach/detach: node.status.volumesAttached lists the attachable volumes of the pods on the
  node (added at once); a volume no pod on the node uses any more is detached --detach-ms later.
  Names are the unique volume names of pkg/volume (see volume_names.py): for CSI
  "kubernetes.io/csi/<driver>^<volumeHandle>", for FlexVolume "flexvolume-<driver>/<pv name>",
  for in-tree plugins "kubernetes.io/<plugin>/<volume id>". Non-attachable sources (NFS,
  hostPath, local, CSI drivers with attachRequired false) never appear. VolumeAttachment objects
  are not created here (see csi_attacher.py, --csi-attacher).
"""
import time

from ..volume_names import attached_name
from .base import Controller
from .workloads import is_active


def _pod_volume_names(ctrl, node_name, include_terminating):
    pods_t = ctrl.t("v1", "pods")
    pvc_t = ctrl.t("v1", "persistentvolumeclaims")
    pv_t = ctrl.t("v1", "persistentvolumes")
    drivers = {d["metadata"]["name"]: d
               for d in ctrl.items(ctrl.t("storage.k8s.io/v1", "csidrivers"))}
    names = set()
    for pod in ctrl.items(pods_t):
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if not include_terminating and not is_active(pod):
            continue
        if (pod.get("status") or {}).get("phase") != "Running" and \
                not pod["metadata"].get("deletionTimestamp"):
            continue
        for v in (pod.get("spec") or {}).get("volumes") or []:
            ref = v.get("persistentVolumeClaim")
            if not ref:
                continue
            claim = ctrl.obj(pvc_t, pod["metadata"]["namespace"], ref.get("claimName"))
            vn = ((claim or {}).get("spec") or {}).get("volumeName")
            pv = ctrl.obj(pv_t, "", vn) if vn else None
            name = attached_name(pv, drivers) if pv else None
            if name:
                names.add(name)
    return names


def _set_node_status(ctrl, node, field, value):
    status = node.get("status") or {}
    if status.get(field, []) == value or (not value and field not in status):
        return
    new = dict(node)
    new["status"] = dict(status)
    if value:
        new["status"][field] = value
    else:
        new["status"].pop(field, None)
    ctrl.update(ctrl.t("v1", "nodes"), new, "status")


class KubeletStandIn(Controller):
    name = "kubelet"

    def __init__(self, fake):
        super().__init__(fake)
        self.termination_delay = fake.delays.get("pod_termination", 0.3)
        self._terminating_since = {}
        self.user = "system:node:kubelet"

    def pending(self):
        return bool(self._terminating_since)

    def sync(self):
        from ..api_ops import now_rfc3339
        pods_t = self.t("v1", "pods")
        nodes_t = self.t("v1", "nodes")
        nodes = {n["metadata"]["name"]: n for n in self.items(nodes_t)}
        seen = set()
        now = time.time()
        for pod in list(self.items(pods_t)):
            node = (pod.get("spec") or {}).get("nodeName")
            if node not in nodes:
                continue
            uid = pod["metadata"]["uid"]
            if pod["metadata"].get("deletionTimestamp"):
                seen.add(uid)
                started = self._terminating_since.setdefault(uid, now)
                if now - started >= self.termination_delay:
                    self.delete(pods_t, pod, {"gracePeriodSeconds": 0})
                continue
            if (pod.get("status") or {}).get("phase") == "Pending" and self.claims_bound(pod):
                new = dict(pod)
                new["status"] = {
                    "phase": "Running", "startTime": now_rfc3339(), "hostIP": "10.0.0.1",
                    "podIP": "10.244.0.%d" % (hash(uid) % 250 + 2),
                    "conditions": [{"type": t, "status": "True",
                                    "lastTransitionTime": now_rfc3339()}
                                   for t in ("Initialized", "Ready", "ContainersReady",
                                             "PodScheduled")],
                    "containerStatuses": [
                        {"name": c.get("name"), "image": c.get("image"), "ready": True,
                         "started": True, "restartCount": 0,
                         "state": {"running": {"startedAt": now_rfc3339()}}}
                        for c in (pod.get("spec") or {}).get("containers") or []],
                }
                self.update(pods_t, new, "status")
        for uid in list(self._terminating_since):
            if uid not in seen:
                del self._terminating_since[uid]
        for name, node in nodes.items():
            in_use = sorted(_pod_volume_names(self, name, include_terminating=True))
            _set_node_status(self, node, "volumesInUse", in_use)

    def claims_bound(self, pod):
        pvc_t = self.t("v1", "persistentvolumeclaims")
        pv_t = self.t("v1", "persistentvolumes")
        for v in (pod.get("spec") or {}).get("volumes") or []:
            ref = v.get("persistentVolumeClaim")
            if not ref:
                continue
            claim = self.obj(pvc_t, pod["metadata"]["namespace"], ref.get("claimName"))
            if claim is None or (claim.get("status") or {}).get("phase") != "Bound":
                return False
            if self.obj(pv_t, "", claim["spec"].get("volumeName")) is None:
                return False
        return True


class AttachDetachController(Controller):
    name = "attachdetach-controller"

    def __init__(self, fake):
        super().__init__(fake)
        self.detach_delay = fake.delays.get("detach", 0.3)
        self._unused_since = {}

    def pending(self):
        return bool(self._unused_since)

    def sync(self):
        nodes_t = self.t("v1", "nodes")
        now = time.time()
        live = set()
        for node in list(self.items(nodes_t)):
            name = node["metadata"]["name"]
            desired = _pod_volume_names(self, name, include_terminating=True)
            current = [v.get("name") for v in (node.get("status") or {}).get("volumesAttached")
                       or []]
            keep = set(desired)
            for vol in current:
                if vol in desired:
                    continue
                key = (name, vol)
                live.add(key)
                started = self._unused_since.setdefault(key, now)
                if now - started < self.detach_delay:
                    keep.add(vol)
            attached = [{"name": v, "devicePath": ""} for v in sorted(keep)]
            _set_node_status(self, node, "volumesAttached", attached)
        for key in list(self._unused_since):
            if key not in live:
                del self._unused_since[key]
