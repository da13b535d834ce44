"""A tiny kube-scheduler: binds pods without spec.nodeName to a node ("node-1" when it exists,
else the first node by name whose labels match the pod's nodeSelector), after its volume binder
step (pkg/scheduler/framework/plugins/volumebinding):
- a claim that does not exist, or is being deleted, keeps the pod Pending (FailedScheduling);
- an unbound WaitForFirstConsumer claim gets a static PV that fits the node bound to it (claimRef
  with uid, bound-by-controller) or, with a provisioner, the annotation
  volume.kubernetes.io/selected-node=<node>; the pod is bound once all its claims are Bound;
- an unbound Immediate claim keeps the pod Pending.
Pods created with spec.nodeName bypass it, as with the real scheduler: nothing then sets
selected-node for their claims.
"""
from .. import quantity
from ..selection import match_label_selector_object
from .base import Controller
from .pv_binder import (BOUND_BY_CONTROLLER, SELECTED_NODE, access_modes_contain, annotations,
                        claim_class, volume_class, volume_mode)


def _expr_matches(expr, values_of):
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    have = values_of(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt"):
        try:
            a, b = int(have), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_matches_affinity(node, affinity):
    """pv.spec.nodeAffinity.required: any term matches when all its expressions do."""
    if not affinity:
        return True
    terms = ((affinity.get("required") or {}).get("nodeSelectorTerms")) or []
    labels = node["metadata"].get("labels") or {}
    for term in terms:
        ok = all(_expr_matches(e, labels.get) for e in term.get("matchExpressions") or [])
        ok = ok and all(_expr_matches(e, lambda k: node["metadata"]["name"]
                                      if k == "metadata.name" else None)
                        for e in term.get("matchFields") or [])
        if ok and (term.get("matchExpressions") or term.get("matchFields")):
            return True
    return False


class Scheduler(Controller):
    name = "default-scheduler"

    def sync(self):
        pods_t = self.t("v1", "pods")
        nodes_t = self.t("v1", "nodes")
        nodes = self.items(nodes_t)
        if not nodes:
            return
        for pod in list(self.items(pods_t)):
            spec = pod.get("spec") or {}
            if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            if spec.get("schedulerName", "default-scheduler") != "default-scheduler":
                continue
            candidates = [n for n in nodes if match_label_selector_object(
                {"matchLabels": spec.get("nodeSelector") or {}}, n["metadata"].get("labels"))]
            candidates.sort(key=lambda n: (n["metadata"]["name"] != "node-1",
                                           n["metadata"]["name"]))
            if not candidates:
                self.event(pod, pods_t, "Warning", "FailedScheduling",
                           "0/%d nodes are available: node(s) didn't match Pod's node "
                           "affinity/selector." % len(nodes))
                continue
            node = candidates[0]
            if self.volumes_ready(pod, node):
                new = dict(pod)
                new["spec"] = dict(spec)
                new["spec"]["nodeName"] = node["metadata"]["name"]
                if self.update(pods_t, new) is not None:
                    self.event(pod, pods_t, "Normal", "Scheduled",
                               "Successfully assigned %s/%s to %s"
                               % (pod["metadata"]["namespace"], pod["metadata"]["name"],
                                  node["metadata"]["name"]))

    def volumes_ready(self, pod, node):
        pods_t = self.t("v1", "pods")
        pvc_t = self.t("v1", "persistentvolumeclaims")
        sc_t = self.t("storage.k8s.io/v1", "storageclasses")
        ready = True
        for v in (pod.get("spec") or {}).get("volumes") or []:
            ref = v.get("persistentVolumeClaim")
            if not ref:
                continue
            claim = self.obj(pvc_t, pod["metadata"]["namespace"], ref.get("claimName"))
            if claim is None:
                self.event(pod, pods_t, "Warning", "FailedScheduling",
                           "0/1 nodes are available: persistentvolumeclaim \"%s\" not found."
                           % ref.get("claimName"))
                return False
            if claim["metadata"].get("deletionTimestamp"):
                self.event(pod, pods_t, "Warning", "FailedScheduling",
                           "0/1 nodes are available: persistentvolumeclaim \"%s\" is being "
                           "deleted." % ref.get("claimName"))
                return False
            if (claim.get("status") or {}).get("phase") == "Bound":
                continue
            ready = False
            sc = self.obj(sc_t, "", claim_class(claim)) if claim_class(claim) else None
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                self.event(pod, pods_t, "Warning", "FailedScheduling",
                           "0/1 nodes are available: pod has unbound immediate "
                           "PersistentVolumeClaims.")
                continue
            if SELECTED_NODE in annotations(claim) or (claim.get("spec") or {}).get("volumeName"):
                continue
            pv = self.find_static_pv(claim, node)
            if pv is not None:
                new = dict(pv)
                new["spec"] = dict(pv["spec"])
                cm = claim["metadata"]
                new["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                           "namespace": cm["namespace"], "name": cm["name"],
                                           "uid": cm["uid"],
                                           "resourceVersion": cm["resourceVersion"]}
                new["metadata"] = dict(pv["metadata"])
                ann = dict(annotations(pv))
                ann[BOUND_BY_CONTROLLER] = "yes"
                new["metadata"]["annotations"] = ann
                self.update(self.t("v1", "persistentvolumes"), new)
            elif sc.get("provisioner") != "kubernetes.io/no-provisioner":
                new = dict(claim)
                new["metadata"] = dict(claim["metadata"])
                ann = dict(annotations(claim))
                ann[SELECTED_NODE] = node["metadata"]["name"]
                new["metadata"]["annotations"] = ann
                self.update(pvc_t, new)
        return ready

    def find_static_pv(self, claim, node):
        pv_t = self.t("v1", "persistentvolumes")
        spec = claim.get("spec") or {}
        request = quantity.parse(((spec.get("resources") or {}).get("requests") or {})
                                 .get("storage"))
        best = None
        for pv in self.items(pv_t):
            pspec = pv.get("spec") or {}
            if (pv.get("status") or {}).get("phase") != "Available" or pspec.get("claimRef"):
                continue
            if volume_class(pv) != claim_class(claim) or volume_mode(pspec) != volume_mode(spec):
                continue
            if not access_modes_contain(pspec.get("accessModes"), spec.get("accessModes")):
                continue
            if spec.get("selector") is not None and not match_label_selector_object(
                    spec["selector"], pv["metadata"].get("labels")):
                continue
            if not node_matches_affinity(node, pspec.get("nodeAffinity")):
                continue
            size = quantity.parse((pspec.get("capacity") or {}).get("storage"))
            if size is None or request is None or size < request:
                continue
            if best is None or size < quantity.parse(best["spec"]["capacity"]["storage"]):
                best = pv
        return best
