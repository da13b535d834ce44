"""The admission plugins a default kube-apiserver runs that flexcsi's tools can observe.

- NamespaceLifecycle (plugin/pkg/admission/namespace/lifecycle): objects are created only in
  existing, non-terminating namespaces; default, kube-system and kube-public cannot be deleted.
- DefaultStorageClass (plugin/pkg/admission/storage/storageclass/setdefault): a claim created
  without storageClassName gets the default class (the newest when several are marked).
- StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection): adds
  kubernetes.io/pv-protection / kubernetes.io/pvc-protection finalizers on create.
- PersistentVolumeClaimResize (plugin/pkg/admission/storage/persistentvolume/resize): a claim's
  request may grow only when it is bound and its StorageClass has allowVolumeExpansion (403).
"""
from . import errors, quantity

PV_PROTECTION = "kubernetes.io/pv-protection"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")


class Admission(object):
    def __init__(self, registry, store):
        self.registry = registry
        self.store = store

    # REQUIRES: store.lock held.

    def check_namespace_for_create(self, rtype, namespace, name=""):
        if not rtype.namespaced:
            return
        ns_type = self.registry.core("namespaces")
        ns = self.store.get(ns_type.key, "", namespace)
        if ns is None:
            raise errors.namespace_not_found(namespace)
        if ns["metadata"].get("deletionTimestamp") and rtype.kind not in ("Event",):
            raise errors.ApiError(
                403, "Forbidden", "%s \"%s\" is forbidden: unable to create new content in "
                "namespace %s because it is being terminated" % (rtype.plural, name, namespace),
                {"kind": rtype.plural, "causes": [{"reason": "NamespaceTerminating",
                                                   "message": "namespace %s is being terminated"
                                                   % namespace,
                                                   "field": "metadata.namespace"}]})

    def mutate_create(self, rtype, obj):
        meta = obj["metadata"]
        if rtype.kind == "PersistentVolumeClaim":
            spec = obj.setdefault("spec", {})
            if spec.get("storageClassName") is None:
                default = self._default_storage_class()
                if default is not None:
                    spec["storageClassName"] = default
            fins = meta.setdefault("finalizers", [])
            if PVC_PROTECTION not in fins:
                fins.append(PVC_PROTECTION)
        elif rtype.kind == "PersistentVolume":
            fins = meta.setdefault("finalizers", [])
            if PV_PROTECTION not in fins:
                fins.append(PV_PROTECTION)

    def _default_storage_class(self):
        sc_type = self.registry.get("storage.k8s.io/v1", "storageclasses")
        defaults = [sc for sc in self.store.items(sc_type.key)
                    if any((sc["metadata"].get("annotations") or {}).get(a) == "true"
                           for a in DEFAULT_CLASS_ANNOTATIONS)]
        if not defaults:
            return None
        defaults.sort(key=lambda sc: (sc["metadata"]["creationTimestamp"], sc["metadata"]["name"]))
        return defaults[-1]["metadata"]["name"]

    def validate_update(self, rtype, new, old, subresource):
        if rtype.kind != "PersistentVolumeClaim" or subresource:
            return
        new_size = quantity.parse(_request(new))
        old_size = quantity.parse(_request(old))
        if new_size is None or old_size is None or new_size <= old_size:
            return
        name = new["metadata"]["name"]
        if (old.get("status") or {}).get("phase") != "Bound":
            raise errors.forbidden(rtype, name, "Only bound persistent volume claims can be "
                                   "expanded")
        sc_name = (old.get("spec") or {}).get("storageClassName") or ""
        sc_type = self.registry.get("storage.k8s.io/v1", "storageclasses")
        sc = self.store.get(sc_type.key, "", sc_name) if sc_name else None
        if sc is None or sc.get("allowVolumeExpansion") is not True:
            raise errors.forbidden(rtype, name, "only dynamically provisioned pvc can be resized "
                                   "and the storageclass that provisions the pvc must support "
                                   "resize")

    def validate_delete(self, rtype, name):
        if rtype.kind == "Namespace" and name in UNDELETABLE_NAMESPACES:
            raise errors.forbidden(rtype, name, "this namespace may not be deleted")


def _request(pvc):
    return (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
