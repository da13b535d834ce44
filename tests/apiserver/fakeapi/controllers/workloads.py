"""Workload controllers, enough for "scale to zero and restore" (pkg/controller/deployment,
replicaset, statefulset):
- Deployment -> one ReplicaSet per pod template (`<deployment>-<template hash>`, label
  pod-template-hash), older ReplicaSets scaled to 0 (a Recreate-style rollout).
- ReplicaSet -> pods `<replicaset>-<5 chars>`; surplus pods are deleted (unscheduled, then
  pending, then newest first). status.replicas counts active pods: it drops as soon as the
  deletes are issued, while the pods themselves terminate for a while.
- StatefulSet -> pods `<set>-<ordinal>` and, before each pod, its claims
  `<template>-<set>-<ordinal>` from volumeClaimTemplates (never deleted by the controller:
  retention policy Retain). OrderedReady creates one pod at a time, each after the lower ones
  are Running and Ready, and removes from the highest ordinal, one at a time; Parallel does both
  at once.
All pods carry ownerReferences with controller: true.
"""
import copy
import hashlib
import json

from .base import Controller

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template):
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def owner_ref(owner, kind, api_version="apps/v1"):
    return {"apiVersion": api_version, "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def controlled_by(obj, owner):
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid") == owner["metadata"]["uid"]:
            return True
    return False


def is_active(pod):
    return (not pod["metadata"].get("deletionTimestamp") and
            (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def is_ready(pod):
    if (pod.get("status") or {}).get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class _Workload(Controller):
    def set_status(self, rtype, obj, status):
        current = obj.get("status") or {}
        merged = dict(current)
        merged.update(status)
        merged["observedGeneration"] = obj["metadata"].get("generation", 1)
        if merged == current:
            return
        new = dict(obj)
        new["status"] = merged
        self.update(rtype, new, "status")

    def pods_of(self, owner):
        pods = self.t("v1", "pods")
        return [p for p in self.items(pods, owner["metadata"]["namespace"])
                if controlled_by(p, owner)]


class DeploymentController(_Workload):
    name = "deployment-controller"

    def sync(self):
        dtype = self.t("apps/v1", "deployments")
        rstype = self.t("apps/v1", "replicasets")
        for d in list(self.items(dtype)):
            if d["metadata"].get("deletionTimestamp"):
                continue
            ns = d["metadata"]["namespace"]
            template = copy.deepcopy(d["spec"].get("template") or {})
            h = template_hash(template)
            template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = h
            owned = [rs for rs in self.items(rstype, ns) if controlled_by(rs, d)]
            name = "%s-%s" % (d["metadata"]["name"], h)
            current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
            replicas = d["spec"].get("replicas", 1)
            if current is None:
                selector = copy.deepcopy(d["spec"]["selector"])
                selector.setdefault("matchLabels", {})["pod-template-hash"] = h
                self.create(rstype, ns, {
                    "metadata": {"name": name, "namespace": ns,
                                 "labels": template["metadata"]["labels"],
                                 "ownerReferences": [owner_ref(d, "Deployment")]},
                    "spec": {"replicas": replicas, "selector": selector,
                             "template": template}})
            elif current["spec"].get("replicas") != replicas:
                new = dict(current)
                new["spec"] = dict(current["spec"])
                new["spec"]["replicas"] = replicas
                self.update(rstype, new)
            for rs in owned:
                if rs is not current and rs["spec"].get("replicas", 0) != 0:
                    new = dict(rs)
                    new["spec"] = dict(rs["spec"])
                    new["spec"]["replicas"] = 0
                    self.update(rstype, new)
            st = [rs.get("status") or {} for rs in owned]
            total = sum(s.get("replicas", 0) for s in st)
            ready = sum(s.get("readyReplicas", 0) for s in st)
            updated = (current.get("status") or {}).get("replicas", 0) if current else 0
            self.set_status(dtype, d, {"replicas": total, "readyReplicas": ready,
                                       "availableReplicas": ready, "updatedReplicas": updated,
                                       "unavailableReplicas": max(replicas - ready, 0)})


class ReplicaSetController(_Workload):
    name = "replicaset-controller"

    def sync(self):
        rstype = self.t("apps/v1", "replicasets")
        pods = self.t("v1", "pods")
        for rs in list(self.items(rstype)):
            if rs["metadata"].get("deletionTimestamp"):
                continue
            ns = rs["metadata"]["namespace"]
            active = [p for p in self.pods_of(rs) if is_active(p)]
            want = rs["spec"].get("replicas", 1)
            template = rs["spec"].get("template") or {}
            for _ in range(want - len(active)):
                tmeta = template.get("metadata") or {}
                meta = {"generateName": rs["metadata"]["name"] + "-", "namespace": ns,
                        "labels": copy.deepcopy(tmeta.get("labels") or {}),
                        "ownerReferences": [owner_ref(rs, "ReplicaSet")]}
                if tmeta.get("annotations"):
                    meta["annotations"] = copy.deepcopy(tmeta["annotations"])
                self.create(pods, ns, {"metadata": meta,
                                       "spec": copy.deepcopy(template.get("spec") or {})})
            if len(active) > want:
                def rank(p):
                    scheduled = bool((p.get("spec") or {}).get("nodeName"))
                    running = (p.get("status") or {}).get("phase") == "Running"
                    return (scheduled, running, _neg_time(p["metadata"]["creationTimestamp"]))
                for p in sorted(active, key=rank)[:len(active) - want]:
                    self.delete(pods, p)
            active = [p for p in self.pods_of(rs) if is_active(p)]
            ready = len([p for p in active if is_ready(p)])
            self.set_status(rstype, rs, {"replicas": len(active),
                                         "fullyLabeledReplicas": len(active),
                                         "readyReplicas": ready, "availableReplicas": ready})


def _neg_time(ts):
    # Newest first when sorted ascending: invert the characters of an RFC 3339 timestamp.
    return "".join(chr(255 - ord(c)) for c in ts)


class StatefulSetController(_Workload):
    name = "statefulset-controller"

    def sync(self):
        ststype = self.t("apps/v1", "statefulsets")
        pods = self.t("v1", "pods")
        pvcs = self.t("v1", "persistentvolumeclaims")
        for sts in list(self.items(ststype)):
            if sts["metadata"].get("deletionTimestamp"):
                continue
            self.sync_one(sts, ststype, pods, pvcs)

    def sync_one(self, sts, ststype, pods, pvcs):
        ns = sts["metadata"]["namespace"]
        name = sts["metadata"]["name"]
        spec = sts["spec"]
        replicas = spec.get("replicas", 1)
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        by_ordinal = {}
        for p in self.pods_of(sts):
            suffix = p["metadata"]["name"][len(name) + 1:]
            if p["metadata"]["name"].startswith(name + "-") and suffix.isdigit():
                by_ordinal[int(suffix)] = p
        templates = spec.get("volumeClaimTemplates") or []
        for i in range(replicas):
            if i in by_ordinal:
                if ordered and not is_ready(by_ordinal[i]):
                    break
                continue
            for t in templates:
                claim_name = "%s-%s-%d" % (t["metadata"]["name"], name, i)
                if self.obj(pvcs, ns, claim_name) is None:
                    labels = dict((t.get("metadata") or {}).get("labels") or {})
                    labels.update((spec.get("selector") or {}).get("matchLabels") or {})
                    self.create(pvcs, ns, {"metadata": {"name": claim_name, "namespace": ns,
                                                        "labels": labels},
                                           "spec": copy.deepcopy(t.get("spec") or {})})
            self.create(pods, ns, self.pod_for(sts, i, templates))
            if ordered:
                break
        surplus = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
        terminating = any(by_ordinal[o]["metadata"].get("deletionTimestamp") for o in surplus)
        for o in surplus:
            pod = by_ordinal[o]
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if ordered and terminating:
                break
            self.delete(pods, pod)
            if ordered:
                break
        current = [p for p in self.pods_of(sts) if not p["metadata"].get("deletionTimestamp")]
        ready = len([p for p in current if is_ready(p)])
        self.set_status(ststype, sts, {"replicas": len(current), "readyReplicas": ready,
                                       "currentReplicas": len(current),
                                       "updatedReplicas": len(current),
                                       "availableReplicas": ready})

    def pod_for(self, sts, ordinal, templates):
        name = sts["metadata"]["name"]
        template = sts["spec"].get("template") or {}
        tmeta = template.get("metadata") or {}
        pod_name = "%s-%d" % (name, ordinal)
        labels = dict(tmeta.get("labels") or {})
        labels["statefulset.kubernetes.io/pod-name"] = pod_name
        labels["apps.kubernetes.io/pod-index"] = str(ordinal)
        spec = copy.deepcopy(template.get("spec") or {})
        volumes = [v for v in spec.get("volumes") or []
                   if v.get("name") not in [t["metadata"]["name"] for t in templates]]
        for t in templates:
            volumes.append({"name": t["metadata"]["name"], "persistentVolumeClaim": {
                "claimName": "%s-%s-%d" % (t["metadata"]["name"], name, ordinal)}})
        if volumes:
            spec["volumes"] = volumes
        spec["hostname"] = pod_name
        if sts["spec"].get("serviceName"):
            spec["subdomain"] = sts["spec"]["serviceName"]
        meta = {"name": pod_name, "namespace": sts["metadata"]["namespace"], "labels": labels,
                "ownerReferences": [owner_ref(sts, "StatefulSet")]}
        if tmeta.get("annotations"):
            meta["annotations"] = copy.deepcopy(tmeta["annotations"])
        return {"metadata": meta, "spec": spec}
