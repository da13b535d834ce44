"""Unknown fields: the real server decodes into Go types, so a field the type does not have is
dropped (fieldValidation=Ignore/Warn, the default being Warn: a `Warning` header names it) or
refused with 400 (fieldValidation=Strict, kubectl's default). Custom resources with structural
schemas prune the same way. Without this, a misspelt field would round-trip through the fake and
a test reading it back would pass where a real cluster loses it.

Known fields are listed for the top level of every served type, ObjectMeta, and the spec and
status of PersistentVolumes and PersistentVolumeClaims (the objects flexcsi rewrites); deeper
levels are taken as given.
"""
from .validation import PV_SOURCES

OBJECT_META = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
               "generation", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
               "finalizers", "managedFields"}

_SPEC_STATUS = {"apiVersion", "kind", "metadata", "spec", "status"}
TOP_LEVEL = {
    "Secret": {"apiVersion", "kind", "metadata", "data", "stringData", "type", "immutable"},
    "ConfigMap": {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"},
    "Endpoints": {"apiVersion", "kind", "metadata", "subsets"},
    "ServiceAccount": {"apiVersion", "kind", "metadata", "secrets", "imagePullSecrets",
                       "automountServiceAccountToken"},
    "Event": {"apiVersion", "kind", "metadata", "involvedObject", "reason", "message", "source",
              "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series",
              "action", "related", "reportingComponent", "reportingInstance"},
    "StorageClass": {"apiVersion", "kind", "metadata", "provisioner", "parameters",
                     "reclaimPolicy", "mountOptions", "allowVolumeExpansion",
                     "volumeBindingMode", "allowedTopologies"},
    "VolumeSnapshotClass": {"apiVersion", "kind", "metadata", "driver", "parameters",
                            "deletionPolicy"},
    "CSIDriver": {"apiVersion", "kind", "metadata", "spec"},
    "CSINode": {"apiVersion", "kind", "metadata", "spec"},
    "Lease": {"apiVersion", "kind", "metadata", "spec"},
}

SPEC = {
    "PersistentVolume": {"capacity", "accessModes", "claimRef", "persistentVolumeReclaimPolicy",
                         "storageClassName", "mountOptions", "volumeMode", "nodeAffinity",
                         "volumeAttributesClassName"} | set(PV_SOURCES),
    "PersistentVolumeClaim": {"accessModes", "selector", "resources", "volumeName",
                              "storageClassName", "volumeMode", "dataSource", "dataSourceRef",
                              "volumeAttributesClassName"},
    "VolumeSnapshot": {"source", "volumeSnapshotClassName"},
    "VolumeSnapshotContent": {"deletionPolicy", "driver", "source", "sourceVolumeMode",
                              "volumeSnapshotClassName", "volumeSnapshotRef"},
}

STATUS = {
    "PersistentVolume": {"phase", "message", "reason", "lastPhaseTransitionTime"},
    "PersistentVolumeClaim": {"phase", "accessModes", "capacity", "conditions",
                              "allocatedResources", "allocatedResourceStatuses",
                              "currentVolumeAttributesClassName", "modifyVolumeStatus"},
    "VolumeSnapshot": {"boundVolumeSnapshotContentName", "creationTime", "readyToUse",
                       "restoreSize", "error", "volumeGroupSnapshotName"},
    "VolumeSnapshotContent": {"creationTime", "readyToUse", "restoreSize", "snapshotHandle",
                              "error", "volumeGroupSnapshotHandle"},
}


def prune(rtype, obj):
    """Removes unknown fields from obj in place; returns their paths ("spec.foo")."""
    dropped = []

    def cut(container, allowed, prefix):
        if not isinstance(container, dict):
            return
        for key in list(container):
            if key not in allowed:
                container.pop(key)
                dropped.append(prefix + key)

    cut(obj, TOP_LEVEL.get(rtype.kind, _SPEC_STATUS), "")
    cut(obj.get("metadata"), OBJECT_META, "metadata.")
    if rtype.kind in SPEC:
        cut(obj.get("spec"), SPEC[rtype.kind], "spec.")
    if rtype.kind in STATUS:
        cut(obj.get("status"), STATUS[rtype.kind], "status.")
    return dropped
