"""Per-type server behaviour around a write: defaulting (pkg/apis/*/v1/defaults.go) and the
PrepareForCreate / PrepareForUpdate of each registry strategy (pkg/registry/*/strategy.go):
which fields the server owns, and what the main resource and the status subresource may change.
"""
import base64
import binascii
import copy

from . import errors

# Types whose main resource resets status on create (PrepareForCreate drops client status).
# Nodes keep theirs: kubelet registers a node with its status.
_KEEP_STATUS_ON_CREATE = {"Node"}

# Status strategies that reset only spec (pkg/registry/core/{persistentvolume,
# persistentvolumeclaim,pod,node,namespace}/strategy.go). Everything else (apps, storage,
# custom resources) calls metav1.ResetObjectMetaForStatus: /status changes status only.
_STATUS_KEEPS_METADATA = {"PersistentVolume", "PersistentVolumeClaim", "Pod", "Node", "Namespace"}

# Types that carry metadata.generation, bumped when spec changes.
_GENERATION_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "VolumeSnapshot",
                     "VolumeSnapshotContent"}


def apply_defaults(rtype, obj):
    kind = rtype.kind
    spec = obj.get("spec")
    if kind == "PersistentVolume":
        spec = obj.setdefault("spec", {})
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif kind == "PersistentVolumeClaim":
        spec = obj.setdefault("spec", {})
        spec.setdefault("volumeMode", "Filesystem")
        # EnforceDataSourceBackwardsCompatibility (AnyVolumeDataSource): dataSource and
        # dataSourceRef mirror each other for the kinds both accept.
        if spec.get("dataSource") and not spec.get("dataSourceRef"):
            spec["dataSourceRef"] = copy.deepcopy(spec["dataSource"])
        elif spec.get("dataSourceRef") and not spec.get("dataSource") and \
                not spec["dataSourceRef"].get("namespace"):
            spec["dataSource"] = {k: v for k, v in spec["dataSourceRef"].items()
                                  if k in ("apiGroup", "kind", "name")}
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif kind == "Pod":
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        if kind == "StatefulSet":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault("persistentVolumeClaimRetentionPolicy",
                            {"whenDeleted": "Retain", "whenScaled": "Retain"})
            for t in spec.get("volumeClaimTemplates") or []:
                t.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
    elif kind == "StorageClass":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif kind == "CSIDriver":
        spec = obj.setdefault("spec", {})
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("storageCapacity", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        spec.setdefault("volumeLifecycleModes", ["Persistent"])
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")
    elif kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    return obj


def decode_secret(obj):
    """v1 -> internal conversion of a Secret: `data` must be base64 (400 otherwise) and the
    write-only `stringData` is merged into `data`, never stored."""
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        raise errors.bad_request("Secret in version \"v1\" cannot be handled as a Secret: data "
                                 "must be an object")
    for key, value in data.items():
        try:
            base64.b64decode(value if isinstance(value, str) else "!", validate=True)
        except (binascii.Error, ValueError):
            raise errors.bad_request("Secret in version \"v1\" cannot be handled as a Secret: "
                                     "illegal base64 data in data[%s]" % json_key(key))
    string_data = obj.pop("stringData", None) or {}
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    if data:
        obj["data"] = data


def json_key(key):
    return '"%s"' % key


def prepare_for_create(rtype, obj):
    if rtype.kind == "Secret":
        decode_secret(obj)
    if rtype.has_status and rtype.kind not in _KEEP_STATUS_ON_CREATE:
        obj.pop("status", None)
    if rtype.kind == "Namespace":
        obj["status"] = {"phase": "Active"}
    if rtype.kind in _GENERATION_KINDS:
        obj["metadata"]["generation"] = 1
    apply_defaults(rtype, obj)


def prepare_for_update(rtype, new, old, subresource):
    """Makes `new` what may be stored: the main resource cannot change status, the status
    subresource can change nothing but status. REQUIRES: new is a private copy."""
    if subresource == "status":
        status = new.get("status")
        result = copy.deepcopy(old)
        if status is None:
            result.pop("status", None)
        else:
            result["status"] = status
        if rtype.kind in _STATUS_KEEPS_METADATA:
            # These status strategies reset only spec: labels, annotations and finalizers sent
            # to /status are stored (the expand controller annotates PVCs this way).
            meta = copy.deepcopy(new["metadata"])
            for field in ("uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"):
                if field in old["metadata"]:
                    meta[field] = old["metadata"][field]
                else:
                    meta.pop(field, None)
            if rtype.kind == "Pod":
                meta["ownerReferences"] = old["metadata"].get("ownerReferences")
                if meta["ownerReferences"] is None:
                    meta.pop("ownerReferences")
            result["metadata"] = meta
        result["metadata"]["resourceVersion"] = new["metadata"].get("resourceVersion", "")
        return result
    if rtype.kind == "Secret":
        decode_secret(new)
    if rtype.has_status:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if rtype.kind in _GENERATION_KINDS:
        gen = old["metadata"].get("generation", 1)
        if new.get("spec") != old.get("spec"):
            gen += 1
        new["metadata"]["generation"] = gen
    apply_defaults(rtype, new)
    return new
