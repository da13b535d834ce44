"""Validation (422 Invalid) of created and updated objects, after pkg/apis/core/validation,
pkg/apis/apps/validation, pkg/apis/storage/validation and apimachinery's ObjectMeta checks.

Each function returns a list of causes (field, error type, detail); an empty list is valid.
Only the rules listed in README.md are modelled; everything else in a spec is taken as given.
"""
import json
import re

from . import quantity
from .snapshot_validation import (validate_snapshot_status, validate_volume_snapshot,
                                  validate_volume_snapshot_class,
                                  validate_volume_snapshot_content,
                                  validate_volume_snapshot_content_update,
                                  validate_volume_snapshot_update)

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")

# Every PersistentVolumeSource member (pkg/apis/core/types.go).
PV_SOURCES = ["gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd",
              "iscsi", "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile",
              "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
              "scaleIO", "local", "storageos", "csi"]

# checkMountOption() in pkg/volume/validation/pv_validation.go: the PV sources that may carry the
# legacy mount-options annotation. Note that spec.mountOptions itself is NOT validated by the API
# server for any source (kubelet refuses them at mount time for plugins without mount option
# support, FlexVolume included); only the annotation is refused here.
MOUNT_OPTION_ANNOTATION = "volume.beta.kubernetes.io/mount-options"
MOUNT_OPTION_SOURCES = {"gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd",
                        "quobyte", "iscsi", "cinder", "cephfs", "azureFile", "vsphereVolume",
                        "azureDisk", "photonPersistentDisk", "flocker", "scaleIO", "fc",
                        "portworxVolume"}

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]


def _q(value):
    """Go's %v/%q rendering of a bad value, roughly: strings quoted, others as JSON."""
    if isinstance(value, str):
        return '"%s"' % value
    return json.dumps(value, sort_keys=True)


def _immutable(field, value):
    return (field, "Invalid value", "%s: field is immutable" % _q(value))


def _supported(values):
    return "supported values: " + ", ".join('"%s"' % v for v in values)


# ---- metadata ---------------------------------------------------------------------------------

def validate_name(rtype, name):
    causes = []
    if not name:
        return [("metadata.name", "Required value", "name or generateName is required")]
    if rtype.plural == "namespaces":
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            causes.append(("metadata.name", "Invalid value", "%s: %s" % (_q(name), LABEL_MSG)))
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        causes.append(("metadata.name", "Invalid value", "%s: %s" % (_q(name), SUBDOMAIN_MSG)))
    return causes


def validate_metadata(rtype, obj):
    meta = obj.get("metadata") or {}
    causes = validate_name(rtype, meta.get("name"))
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, name = key.rpartition("/")
        if (not name or len(name) > 63 or not _QUALIFIED_NAME.match(name) or
                (prefix and not DNS1123_SUBDOMAIN.match(prefix))):
            causes.append(("metadata.labels", "Invalid value", "%s: name part must consist of "
                           "alphanumeric characters, '-', '_' or '.'" % _q(key)))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(("metadata.labels", "Invalid value", "%s: a valid label must be an "
                           "empty string or consist of alphanumeric characters, '-', '_' or '.'"
                           % _q(value)))
    for key, value in (meta.get("annotations") or {}).items():
        if not isinstance(value, str):
            causes.append(("metadata.annotations", "Invalid value", "%s: must be a string"
                           % _q(key)))
    finalizers = meta.get("finalizers") or []
    for i, f in enumerate(finalizers):
        if not isinstance(f, str) or "/" not in f and f not in ("kubernetes", "orphan",
                                                                 "foregroundDeletion"):
            causes.append(("metadata.finalizers[%d]" % i, "Invalid value",
                           "%s: name is neither a standard finalizer name nor is it fully "
                           "qualified" % _q(f)))
    return causes


def validate_metadata_update(new, old):
    nm, om = new["metadata"], old["metadata"]
    causes = []
    if nm.get("uid") != om.get("uid"):
        causes.append(_immutable("metadata.uid", nm.get("uid")))
    if om.get("deletionTimestamp") is None and nm.get("deletionTimestamp") is not None:
        causes.append(_immutable("metadata.deletionTimestamp", nm.get("deletionTimestamp")))
    if om.get("deletionTimestamp") is not None:
        added = [f for f in nm.get("finalizers") or [] if f not in (om.get("finalizers") or [])]
        if added:
            causes.append(("metadata.finalizers", "Forbidden", "no new finalizers can be added "
                           "if the object is being deleted, found new finalizers %s"
                           % json.dumps(added)))
    return causes


# ---- core/v1 ----------------------------------------------------------------------------------

def _storage_request(spec_resources, field):
    causes = []
    requests = (spec_resources or {}).get("requests") or {}
    if "storage" not in requests:
        return [(field + "[storage]", "Required value", "")]
    value = quantity.parse(requests["storage"])
    if value is None:
        causes.append((field + "[storage]", "Invalid value", "%s: quantities must match the "
                       "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                       % _q(requests["storage"])))
    elif value <= 0:
        causes.append((field + "[storage]", "Invalid value", "%s: must be greater than zero"
                       % _q(requests["storage"])))
    return causes


def _access_modes(modes, field):
    if not modes:
        return [(field, "Required value", "at least 1 access mode is required")]
    return [(field, "Unsupported value", "%s: %s" % (_q(m), _supported(ACCESS_MODES)))
            for m in modes if m not in ACCESS_MODES]


def pv_sources(spec):
    return [s for s in PV_SOURCES if spec.get(s) is not None]


def validate_pv(obj):
    spec = obj.get("spec") or {}
    causes = []
    capacity = spec.get("capacity") or {}
    if not capacity:
        causes.append(("spec.capacity", "Required value", ""))
    for key, value in capacity.items():
        if key != "storage":
            causes.append(("spec.capacity", "Unsupported value", '%s: supported values: "storage"'
                           % _q(key)))
        elif quantity.parse(value) is None:
            causes.append(("spec.capacity[storage]", "Invalid value", _q(value)))
        elif quantity.parse(value) <= 0:
            causes.append(("spec.capacity[storage]", "Invalid value", "%s: must be greater "
                           "than zero" % _q(value)))
    causes += _access_modes(spec.get("accessModes"), "spec.accessModes")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy not in ("Retain", "Delete", "Recycle"):
        causes.append(("spec.persistentVolumeReclaimPolicy", "Unsupported value",
                       "%s: %s" % (_q(policy), _supported(["Delete", "Recycle", "Retain"]))))
    if spec.get("volumeMode") not in ("Filesystem", "Block"):
        causes.append(("spec.volumeMode", "Unsupported value", "%s: %s"
                       % (_q(spec.get("volumeMode")), _supported(["Block", "Filesystem"]))))
    sources = pv_sources(spec)
    if not sources:
        causes.append(("spec", "Required value", "must specify a volume type"))
    for extra in sources[1:]:
        causes.append(("spec." + extra, "Forbidden", "may not specify more than 1 volume type"))
    if sources:
        causes += _source_required_fields(sources[0], spec[sources[0]] or {})
        if sources[0] == "local" and not spec.get("nodeAffinity"):
            causes.append(("spec.nodeAffinity", "Required value",
                           "Local volume requires node affinity"))
    annotations = obj["metadata"].get("annotations") or {}
    if MOUNT_OPTION_ANNOTATION in annotations and not (set(sources) & MOUNT_OPTION_SOURCES):
        causes.append(("metadata.annotations." + MOUNT_OPTION_ANNOTATION, "Forbidden",
                       "may not specify mount options for this volume type"))
    claim_ref = spec.get("claimRef")
    if claim_ref is not None and not claim_ref.get("name"):
        causes.append(("spec.claimRef.name", "Required value", ""))
    affinity = spec.get("nodeAffinity")
    if affinity is not None and not ((affinity.get("required") or {}).get("nodeSelectorTerms")):
        causes.append(("spec.nodeAffinity.required.nodeSelectorTerms", "Required value",
                       "must have at least one node selector term"))
    return causes


# Required fields of each source (validate<Plugin>VolumeSource in validation.go). The field path
# prefix is the one the real code passes, including its quirks (gcePersistentDisk is checked
# under "spec.persistentDisk", cephfs under "spec.cephfs").
_REQUIRED = {
    "flexVolume": ("spec.flexVolume", ["driver"]),
    "csi": ("spec.csi", ["driver", "volumeHandle"]),
    "nfs": ("spec.nfs", ["server", "path"]),
    "awsElasticBlockStore": ("spec.awsElasticBlockStore", ["volumeID"]),
    "gcePersistentDisk": ("spec.persistentDisk", ["pdName"]),
    "azureDisk": ("spec.azureDisk", ["diskName", "diskURI"]),
    "azureFile": ("spec.azureFile", ["secretName", "shareName"]),
    "cinder": ("spec.cinder", ["volumeID"]),
    "vsphereVolume": ("spec.vsphereVolume", ["volumePath"]),
    "portworxVolume": ("spec.portworxVolume", ["volumeID"]),
    "rbd": ("spec.rbd", ["monitors", "image"]),
    "iscsi": ("spec.iscsi", ["targetPortal", "iqn"]),
    "cephfs": ("spec.cephfs", ["monitors"]),
    "glusterfs": ("spec.glusterfs", ["endpoints", "path"]),
    "hostPath": ("spec.hostPath", ["path"]),
    "local": ("spec.local", ["path"]),
}
_CSI_DRIVER_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _source_required_fields(source, fields):
    causes = []
    prefix, required = _REQUIRED.get(source, ("", []))
    for field in required:
        if not fields.get(field):
            causes.append(("%s.%s" % (prefix, field), "Required value", ""))
    if source == "csi" and fields.get("driver"):
        driver = fields["driver"]
        if len(driver) > 63:
            causes.append(("spec.csi.driver", "Too long", "must have at most 63 bytes"))
        elif not _CSI_DRIVER_NAME.match(driver):
            causes.append(("spec.csi.driver", "Invalid value", "%s: a valid CSI driver name "
                           "must consist of alphanumeric characters, '-', '_' or '.', and must "
                           "start and end with an alphanumeric character" % _q(driver)))
    if source == "iscsi" and not 0 <= int(fields.get("lun", 0) or 0) <= 255:
        causes.append(("spec.iscsi.lun", "Invalid value", "%s: must be between 0 and 255"
                       % _q(fields.get("lun"))))
    if source == "fc" and not fields.get("wwids") and not (fields.get("targetWWNs") and
                                                           fields.get("lun") is not None):
        causes.append(("spec.fc.targetWWNs", "Required value",
                       "must specify either targetWWNs or wwids, but not both"))
    return causes


def _source_of(spec):
    return {s: spec.get(s) for s in PV_SOURCES if spec.get(s) is not None}


def validate_pv_update(new, old):
    causes = validate_pv(new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    new_source, old_source = _source_of(ns), _source_of(os_)
    # A CSI controllerExpandSecretRef may be added to an existing PV.
    if "csi" in new_source and "csi" in old_source and \
            "controllerExpandSecretRef" not in (old_source["csi"] or {}):
        new_source = json.loads(json.dumps(new_source))
        new_source["csi"].pop("controllerExpandSecretRef", None)
    if new_source != old_source:
        causes.append(("spec.persistentvolumesource", "Forbidden",
                       "spec.persistentvolumesource is immutable after creation\n%s -> %s"
                       % (json.dumps(old_source, sort_keys=True),
                          json.dumps(new_source, sort_keys=True))))
    # The real code names this field "volumeMode", without "spec.".
    if ns.get("volumeMode") != os_.get("volumeMode"):
        causes.append(_immutable("volumeMode", ns.get("volumeMode")))
    if os_.get("nodeAffinity") is not None and ns.get("nodeAffinity") != os_.get("nodeAffinity"):
        causes.append(_immutable("spec.nodeAffinity", ns.get("nodeAffinity")))
    return causes


def validate_pvc(obj):
    spec = obj.get("spec") or {}
    causes = _access_modes(spec.get("accessModes"), "spec.accessModes")
    causes += _storage_request(spec.get("resources"), "spec.resources")
    if spec.get("volumeMode") not in ("Filesystem", "Block"):
        causes.append(("spec.volumeMode", "Unsupported value", "%s: %s"
                       % (_q(spec.get("volumeMode")), _supported(["Block", "Filesystem"]))))
    for field in ("dataSource", "dataSourceRef"):
        ds = spec.get(field)
        if ds is not None:
            if not ds.get("name"):
                causes.append(("spec.%s.name" % field, "Required value", ""))
            if not ds.get("kind"):
                causes.append(("spec.%s.kind" % field, "Required value", ""))
    return causes


def validate_pvc_update(new, old):
    """ValidatePersistentVolumeClaimUpdate: the whole spec is immutable, except that an empty
    volumeName may be set once and, for a bound claim, requests.storage may grow."""
    causes = validate_pvc(new)
    ns = json.loads(json.dumps(new.get("spec") or {}))
    os_ = json.loads(json.dumps(old.get("spec") or {}))
    if not os_.get("volumeName"):
        os_["volumeName"] = ns.get("volumeName")
        if os_["volumeName"] is None:
            os_.pop("volumeName")
    bound = ((new.get("status") or {}).get("phase")) == "Bound"
    new_req = ((ns.get("resources") or {}).get("requests") or {})
    old_req = ((os_.get("resources") or {}).get("requests") or {})
    if bound and "storage" in new_req:
        new_req["storage"] = old_req.get("storage")
    if ns != os_:
        causes.append(("spec", "Forbidden", "spec is immutable after creation except "
                       "resources.requests and volumeAttributesClassName for bound claims"))
    new_size = quantity.parse((((new.get("spec") or {}).get("resources") or {})
                               .get("requests") or {}).get("storage"))
    old_size = quantity.parse((((old.get("spec") or {}).get("resources") or {})
                               .get("requests") or {}).get("storage"))
    if new_size is not None and old_size is not None and new_size < old_size:
        causes.append(("spec.resources.requests.storage", "Forbidden",
                       "field can not be less than previous value"))
    return causes


def validate_pod(obj):
    spec = obj.get("spec") or {}
    causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("spec.containers", "Required value", ""))
    for i, c in enumerate(containers):
        if not c.get("name"):
            causes.append(("spec.containers[%d].name" % i, "Required value", ""))
        if not c.get("image"):
            causes.append(("spec.containers[%d].image" % i, "Required value", ""))
    names = set()
    for i, v in enumerate(spec.get("volumes") or []):
        if not v.get("name"):
            causes.append(("spec.volumes[%d].name" % i, "Required value", ""))
        elif v["name"] in names:
            causes.append(("spec.volumes[%d].name" % i, "Duplicate value", _q(v["name"])))
        names.add(v.get("name"))
        pvc = v.get("persistentVolumeClaim")
        if pvc is not None and not pvc.get("claimName"):
            causes.append(("spec.volumes[%d].persistentVolumeClaim.claimName" % i,
                           "Required value", ""))
    return causes


def validate_pod_update(new, old):
    causes = validate_pod(new)
    ns = json.loads(json.dumps(new.get("spec") or {}))
    os_ = json.loads(json.dumps(old.get("spec") or {}))
    for spec in (ns, os_):
        for c in spec.get("containers") or []:
            c.pop("image", None)
        spec.pop("activeDeadlineSeconds", None)
        spec.pop("tolerations", None)
    if not os_.get("nodeName"):
        os_["nodeName"] = ns.get("nodeName")
        if os_["nodeName"] is None:
            os_.pop("nodeName")
    if ns != os_:
        causes.append(("spec", "Forbidden", "pod updates may not change fields other than "
                       "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                       "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                       "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
                       "be set to 1 if it was previously negative)"))
    return causes


def validate_event(obj):
    """ValidateEvent: the event lives in its object's namespace; events about cluster-scoped
    objects (PVs, nodes) live in "default"."""
    ns = obj["metadata"].get("namespace")
    io = obj.get("involvedObject") or {}
    if io.get("namespace") and io.get("namespace") != ns or \
            not io.get("namespace") and ns not in ("", "default"):
        return [("involvedObject.namespace", "Invalid value",
                 "%s: does not match event.namespace" % _q(io.get("namespace", "")))]
    return []


# ---- apps/v1 ----------------------------------------------------------------------------------

def validate_workload(obj):
    spec = obj.get("spec") or {}
    causes = []
    selector = spec.get("selector")
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(("spec.selector", "Required value", ""))
    else:
        from .selection import match_label_selector_object
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not match_label_selector_object(selector, labels):
            causes.append(("spec.template.metadata.labels", "Invalid value",
                           "%s: `selector` does not match template `labels`" % _q(labels)))
    if "replicas" in spec and (not isinstance(spec["replicas"], int) or spec["replicas"] < 0):
        causes.append(("spec.replicas", "Invalid value", "%s: must be greater than or equal "
                       "to 0" % _q(spec["replicas"])))
    template_spec = (spec.get("template") or {}).get("spec")
    if template_spec is not None:
        for field, kind, detail in validate_pod({"spec": template_spec}):
            causes.append(("spec.template." + field, kind, detail))
    else:
        causes.append(("spec.template.spec.containers", "Required value", ""))
    return causes


def validate_workload_update(kind, new, old):
    causes = validate_workload(new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if ns.get("selector") != os_.get("selector"):
        causes.append(_immutable("spec.selector", ns.get("selector")))
    if kind == "StatefulSet":
        allowed = ("replicas", "ordinals", "template", "updateStrategy",
                   "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
        strip_new = {k: v for k, v in ns.items() if k not in allowed}
        strip_old = {k: v for k, v in os_.items() if k not in allowed}
        if strip_new != strip_old:
            causes.append(("spec", "Forbidden", "updates to statefulset spec for fields other "
                           "than 'replicas', 'ordinals', 'template', 'updateStrategy', "
                           "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                           "forbidden"))
    return causes


# ---- storage.k8s.io/v1 ------------------------------------------------------------------------

def validate_storage_class(obj):
    causes = []
    if not obj.get("provisioner"):
        causes.append(("provisioner", "Required value", ""))
    if obj.get("reclaimPolicy") not in ("Delete", "Retain"):
        causes.append(("reclaimPolicy", "Unsupported value", "%s: %s"
                       % (_q(obj.get("reclaimPolicy")), _supported(["Delete", "Retain"]))))
    if obj.get("volumeBindingMode") not in ("Immediate", "WaitForFirstConsumer"):
        causes.append(("volumeBindingMode", "Unsupported value", "%s: %s"
                       % (_q(obj.get("volumeBindingMode")),
                          _supported(["Immediate", "WaitForFirstConsumer"]))))
    return causes


def validate_storage_class_update(new, old):
    causes = validate_storage_class(new)
    for field in ("parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"):
        if new.get(field) != old.get(field):
            causes.append((field, "Forbidden", "updates to %s are forbidden." % field))
    return causes


def validate_volume_attachment(obj):
    spec = obj.get("spec") or {}
    causes = []
    if not spec.get("attacher"):
        causes.append(("spec.attacher", "Required value", ""))
    if not spec.get("nodeName"):
        causes.append(("spec.nodeName", "Required value", ""))
    source = spec.get("source") or {}
    if bool(source.get("persistentVolumeName")) == bool(source.get("inlineVolumeSpec")):
        causes.append(("spec.source", "Required value",
                       "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    return causes


def validate_volume_attachment_update(new, old):
    causes = validate_volume_attachment(new)
    if new.get("spec") != old.get("spec"):
        causes.append(_immutable("spec", new.get("spec")))
    return causes


def validate_csi_driver_update(new, old):
    causes = []
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for field in ("attachRequired", "volumeLifecycleModes"):
        if ns.get(field) != os_.get(field):
            causes.append(_immutable("spec." + field, ns.get(field)))
    return causes


def validate_csi_node_update(new, old):
    """ValidateCSINodeUpdate: an entry of spec.drivers may come and go, but one that stays (by
    name) may not change at all; kubelet changes one by unregistering and registering again."""
    causes = []
    old_drivers = {d.get("name"): d for d in (old.get("spec") or {}).get("drivers") or []}
    for driver in (new.get("spec") or {}).get("drivers") or []:
        before = old_drivers.get(driver.get("name"))
        if before is not None and before != driver:
            causes.append(("CSINodeDriver", "Invalid value", "%s: field is immutable"
                           % _q(driver)))
    return causes


def validate_lease(obj):
    spec = obj.get("spec") or {}
    d = spec.get("leaseDurationSeconds")
    if d is not None and (not isinstance(d, int) or d <= 0):
        return [("spec.leaseDurationSeconds", "Invalid value", "%s: must be greater than 0"
                 % _q(d))]
    return []


# ---- dispatch ---------------------------------------------------------------------------------

_CREATE = {
    "PersistentVolume": validate_pv,
    "PersistentVolumeClaim": validate_pvc,
    "Pod": validate_pod,
    "Event": validate_event,
    "Deployment": validate_workload,
    "ReplicaSet": validate_workload,
    "StatefulSet": validate_workload,
    "DaemonSet": validate_workload,
    "StorageClass": validate_storage_class,
    "VolumeAttachment": validate_volume_attachment,
    "Lease": validate_lease,
    "VolumeSnapshot": validate_volume_snapshot,
    "VolumeSnapshotContent": validate_volume_snapshot_content,
    "VolumeSnapshotClass": validate_volume_snapshot_class,
}

_UPDATE = {
    "PersistentVolume": validate_pv_update,
    "PersistentVolumeClaim": validate_pvc_update,
    "Pod": validate_pod_update,
    "Deployment": lambda n, o: validate_workload_update("Deployment", n, o),
    "ReplicaSet": lambda n, o: validate_workload_update("ReplicaSet", n, o),
    "StatefulSet": lambda n, o: validate_workload_update("StatefulSet", n, o),
    "DaemonSet": lambda n, o: validate_workload_update("DaemonSet", n, o),
    "StorageClass": validate_storage_class_update,
    "VolumeAttachment": validate_volume_attachment_update,
    "CSIDriver": validate_csi_driver_update,
    "CSINode": validate_csi_node_update,
    "VolumeSnapshot": validate_volume_snapshot_update,
    "VolumeSnapshotContent": validate_volume_snapshot_content_update,
}


def validate_create(rtype, obj):
    causes = validate_metadata(rtype, obj)
    fn = _CREATE.get(rtype.kind)
    if fn:
        causes += fn(obj)
    return causes


def validate_update(rtype, new, old, subresource):
    causes = validate_metadata(rtype, new) + validate_metadata_update(new, old)
    if subresource == "status":
        causes += validate_snapshot_status(rtype, new)
        # ValidatePersistentVolume(Claim)StatusUpdate: a status write must name its version.
        if rtype.kind in ("PersistentVolume", "PersistentVolumeClaim") and \
                not new["metadata"].get("resourceVersion"):
            causes.append(("resourceVersion", "Required value", ""))
        return causes
    fn = _UPDATE.get(rtype.kind)
    if fn:
        causes += fn(new, old)
    else:
        fn = _CREATE.get(rtype.kind)
        if fn:
            causes += fn(new)
    return causes
