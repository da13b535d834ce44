"""Validation of the external-snapshotter CRDs (snapshot.storage.k8s.io/v1): the required
fields and CEL rules of their schemas, and the types of their status fields
(kubernetes-csi/external-snapshotter client/config/crd). Same cause format as validation.py.
"""
import json
import re

from . import quantity


def _q(value):
    """Go's rendering of a bad value, roughly: strings quoted, others as JSON."""
    return '"%s"' % value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _supported(values):
    return "supported values: " + ", ".join('"%s"' % v for v in values)


def validate_volume_snapshot(obj):
    source = (obj.get("spec") or {}).get("source")
    if source is None:
        return [("spec.source", "Required value", "")]
    if bool(source.get("persistentVolumeClaimName")) == \
            bool(source.get("volumeSnapshotContentName")):
        return [("spec.source", "Invalid value", "%s: exactly one of volumeSnapshotContentName "
                 "and persistentVolumeClaimName must be set" % _q(source))]
    return []


def validate_volume_snapshot_update(new, old):
    causes = validate_volume_snapshot(new)
    ns = (new.get("spec") or {}).get("source") or {}
    os_ = (old.get("spec") or {}).get("source") or {}
    for field in ("persistentVolumeClaimName", "volumeSnapshotContentName"):
        if ns.get(field) != os_.get(field):
            causes.append(("spec.source.%s" % field, "Invalid value",
                           "%s: %s is immutable" % (_q(ns.get(field)), field)))
    return causes


def validate_volume_snapshot_content(obj):
    spec = obj.get("spec") or {}
    causes = []
    for field in ("driver", "deletionPolicy", "source", "volumeSnapshotRef"):
        if not spec.get(field):
            causes.append(("spec." + field, "Required value", ""))
    if spec.get("deletionPolicy") and spec["deletionPolicy"] not in ("Delete", "Retain"):
        causes.append(("spec.deletionPolicy", "Unsupported value", "%s: %s"
                       % (_q(spec["deletionPolicy"]), _supported(["Delete", "Retain"]))))
    source = spec.get("source") or {}
    if spec.get("source") and \
            bool(source.get("volumeHandle")) == bool(source.get("snapshotHandle")):
        causes.append(("spec.source", "Invalid value", "%s: exactly one of volumeHandle and "
                       "snapshotHandle must be set" % _q(source)))
    return causes


def validate_volume_snapshot_content_update(new, old):
    causes = validate_volume_snapshot_content(new)
    if ((new.get("spec") or {}).get("source") != (old.get("spec") or {}).get("source")):
        causes.append(("spec.source", "Invalid value", "%s: source is immutable"
                       % _q((new.get("spec") or {}).get("source"))))
    return causes


def validate_volume_snapshot_class(obj):
    causes = []
    if not obj.get("driver"):
        causes.append(("driver", "Required value", ""))
    if obj.get("deletionPolicy") not in ("Delete", "Retain"):
        causes.append(("deletionPolicy", "Unsupported value", "%s: %s"
                       % (_q(obj.get("deletionPolicy")), _supported(["Delete", "Retain"]))))
    return causes


# Field types of the snapshot CRDs' status (external-snapshotter client/config/crd, the
# OpenAPI schemas the apiextensions server validates every write against).
_SNAPSHOT_STATUS_TYPES = {
    "VolumeSnapshot": {"boundVolumeSnapshotContentName": "string", "creationTime": "date-time",
                       "readyToUse": "boolean", "restoreSize": "quantity", "error": "error",
                       "volumeGroupSnapshotName": "string"},
    "VolumeSnapshotContent": {"creationTime": "int64", "readyToUse": "boolean",
                              "restoreSize": "int64", "snapshotHandle": "string",
                              "error": "error", "volumeGroupSnapshotHandle": "string"},
}
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _type_ok(kind, value):
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "int64":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "date-time":
        return isinstance(value, str) and bool(_DATE_TIME.match(value))
    if kind == "quantity":
        return (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, str) and quantity.parse(value) is not None)
    if kind == "error":
        return isinstance(value, dict) and isinstance(value.get("message", ""), str) and \
            (value.get("time") is None or _type_ok("date-time", value["time"]))
    return True


def validate_snapshot_status(rtype, obj):
    types = _SNAPSHOT_STATUS_TYPES.get(rtype.kind)
    status = obj.get("status")
    if not types or status is None:
        return []
    if not isinstance(status, dict):
        return [("status", "Invalid value", '%s: status in body must be of type object'
                 % _q(status))]
    causes = []
    for field, value in status.items():
        kind = types.get(field)
        if kind and value is not None and not _type_ok(kind, value):
            expected = {"int64": "integer", "date-time": "string (date-time)",
                        "quantity": "integer or quantity string",
                        "error": "object"}.get(kind, kind)
            causes.append(("status." + field, "Invalid value",
                           "%s: status.%s in body must be of type %s" % (_q(value), field,
                                                                        expected)))
    return causes
