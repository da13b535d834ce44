"""Namespace deletion and garbage collection (pkg/controller/namespace,
pkg/controller/garbagecollector), reduced to what tests observe:
- a namespace being deleted has all its content deleted; once empty, its spec.finalizers are
  cleared and it disappears;
- an object whose every owner (ownerReferences by uid) is gone is deleted in the background,
  unless an owner is of a kind this server does not serve (a Job, a custom resource): those
  dependents are left alone;
- an owner deleted with propagationPolicy Orphan loses the "orphan" finalizer after its
  dependents' ownerReferences to it are removed; with Foreground, its dependents are deleted
  first and then the "foregroundDeletion" finalizer is removed.
"""
from .base import Controller


class NamespaceController(Controller):
    name = "namespace-controller"

    def sync(self):
        ns_t = self.t("v1", "namespaces")
        for ns in list(self.items(ns_t)):
            if not ns["metadata"].get("deletionTimestamp"):
                continue
            name = ns["metadata"]["name"]
            remaining = 0
            for rtype in self.registry.types:
                if not rtype.namespaced:
                    continue
                for obj in list(self.items(rtype, name)):
                    remaining += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        self.delete(rtype, obj, {"gracePeriodSeconds": 0})
            if remaining == 0 and (ns.get("spec") or {}).get("finalizers"):
                new = dict(ns)
                new["spec"] = dict(ns["spec"])
                new["spec"]["finalizers"] = []
                self.fake.api.finalize_namespace(new, self.user)


class GarbageCollector(Controller):
    name = "garbage-collector-controller"

    def served(self, ref):
        api_version = ref.get("apiVersion") or ""
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        return self.registry.by_kind(group, ref.get("kind")) is not None

    def sync(self):
        alive = {}
        for rtype in self.registry.types:
            for obj in self.items(rtype):
                alive[obj["metadata"]["uid"]] = (rtype, obj)
        for uid, (rtype, obj) in list(alive.items()):
            refs = obj["metadata"].get("ownerReferences") or []
            if not refs:
                continue
            owners = [alive.get(r.get("uid")) for r in refs]
            # An owner of a kind this server does not serve cannot be looked up (the real GC
            # finds no REST mapping and leaves the dependent alone): never collect those.
            resolvable = all(self.served(r) for r in refs)
            if resolvable and all(o is None for o in owners) and \
                    not obj["metadata"].get("deletionTimestamp"):
                self.delete(rtype, obj)
                continue
            for ref, owner in zip(refs, owners):
                if owner is None:
                    continue
                ometa = owner[1]["metadata"]
                if not ometa.get("deletionTimestamp"):
                    continue
                fins = ometa.get("finalizers") or []
                if "orphan" in fins:
                    new = dict(obj)
                    new["metadata"] = dict(obj["metadata"])
                    kept = [r for r in refs if r.get("uid") != ref.get("uid")]
                    if kept:
                        new["metadata"]["ownerReferences"] = kept
                    else:
                        new["metadata"].pop("ownerReferences", None)
                    self.update(rtype, new)
                elif "foregroundDeletion" in fins and not obj["metadata"].get("deletionTimestamp"):
                    self.delete(rtype, obj, {"propagationPolicy": "Foreground"})
        # Owners whose dependents are settled lose their GC finalizer.
        for uid, (rtype, obj) in list(alive.items()):
            meta = obj["metadata"]
            fins = meta.get("finalizers") or []
            if not meta.get("deletionTimestamp") or \
                    not ({"orphan", "foregroundDeletion"} & set(fins)):
                continue
            dependents = [d for d, (_, o) in alive.items()
                          if any(r.get("uid") == uid
                                 for r in o["metadata"].get("ownerReferences") or [])]
            if dependents:
                continue
            new = dict(obj)
            new["metadata"] = dict(meta)
            new["metadata"]["finalizers"] = [f for f in fins
                                             if f not in ("orphan", "foregroundDeletion")]
            self.update(rtype, new)
