"""Label and field selectors: the query-string syntax of labelSelector/fieldSelector, and the
LabelSelector object (matchLabels, matchExpressions) used in PVC and workload specs.

Syntax per k8s.io/apimachinery/pkg/labels/selector.go and pkg/fields/selector.go; the fields a
type may be selected by per pkg/registry/*/strategy.go (ToSelectableFields / field label
conversion funcs): an unknown field is a 400, like the real server.
"""
import re

from . import errors

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


def _split_top(text):
    """Splits on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip() != ""]


class LabelRequirement(object):
    def __init__(self, key, op, values):
        self.key, self.op, self.values = key, op, values

    def matches(self, labels):
        has = self.key in labels
        val = labels.get(self.key)
        if self.op in ("=", "=="):
            return has and val == self.values[0]
        if self.op == "!=":
            return not has or val != self.values[0]
        if self.op == "in":
            return has and val in self.values
        if self.op == "notin":
            return not has or val not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        raise AssertionError(self.op)


def parse_label_selector(text):
    """Returns a list of requirements (all must match). Raises 400 on bad syntax."""
    reqs = []
    if text is None or text.strip() == "":
        return reqs
    for part in _split_top(text):
        m = re.match(r"^(" + _KEY + r")\s+(in|notin)\s*\((.*)\)$", part)
        if m:
            values = [v.strip() for v in m.group(4).split(",")]
            for v in values:
                if not re.match("^" + _VALUE + "$", v):
                    raise errors.bad_request("unable to parse requirement: invalid label value: "
                                             "%r" % v)
            reqs.append(LabelRequirement(m.group(1), m.group(3), values))
            continue
        m = re.match(r"^!\s*(" + _KEY + r")$", part)
        if m:
            reqs.append(LabelRequirement(m.group(1), "!", []))
            continue
        m = re.match(r"^(" + _KEY + r")\s*(==|!=|=)\s*(" + _VALUE + r")$", part)
        if m:
            reqs.append(LabelRequirement(m.group(1), m.group(3), [m.group(4)]))
            continue
        m = re.match(r"^(" + _KEY + r")$", part)
        if m:
            reqs.append(LabelRequirement(m.group(1), "exists", []))
            continue
        raise errors.bad_request("unable to parse requirement: found '%s', expected: "
                                 "identifier, or operator" % part)
    return reqs


def labels_match(reqs, obj):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def match_label_selector_object(selector, labels):
    """metav1.LabelSelector semantics: nil selects nothing here (callers decide), {} everything."""
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        key = expr.get("key")
        values = expr.get("values") or []
        if op == "In":
            if labels.get(key) not in values or key not in labels:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


# Fields each type can be selected by, beyond metadata.name and metadata.namespace.
_EXTRA_FIELDS = {
    # "name" is a bug kept for backward compatibility (PersistentVolume(Claim)ToSelectableFields).
    "persistentvolumes": ["name"],
    "persistentvolumeclaims": ["name"],
    "pods": ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
             "status.nominatedNodeName"],
    "events": ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion",
               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
               "reportingComponent", "source", "type"],
    "namespaces": ["status.phase"],
    "secrets": ["type"],
    "nodes": ["spec.unschedulable"],
    "replicasets": ["status.replicas"],
}


def _field_value(obj, path):
    if path == "name":
        return obj["metadata"]["name"]
    if path == "source":
        return (obj.get("source") or {}).get("component", "")
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text, rtype):
    """Returns a list of (field, op, value); raises 400 for unsupported fields or bad syntax."""
    reqs = []
    if text is None or text.strip() == "":
        return reqs
    allowed = ["metadata.name", "metadata.namespace"] + _EXTRA_FIELDS.get(rtype.plural, [])
    for part in text.split(","):
        part = part.strip()
        if part == "":
            continue
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise errors.bad_request("invalid selector: '%s'; can't understand '%s'"
                                     % (text, part))
        field, op, value = m.group(1), m.group(2), m.group(3)
        if field not in allowed:
            raise errors.bad_request('field label not supported: %s' % field)
        reqs.append((field, "!=" if op == "!=" else "=", value))
    return reqs


def fields_match(reqs, obj):
    for field, op, value in reqs:
        actual = _field_value(obj, field)
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
    return True
