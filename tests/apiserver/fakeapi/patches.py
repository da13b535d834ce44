"""The three patch formats kube-apiserver accepts for built-in types.

- JSON merge patch (RFC 7386, application/merge-patch+json): complete.
- JSON patch (RFC 6902, application/json-patch+json): complete, including `test`, `move`, `copy`.
- Strategic merge patch (application/strategic-merge-patch+json): the subset documented in
  README.md: maps merge recursively, null deletes, `$patch: replace|delete` on maps and list
  elements, lists merge by the merge keys of the Kubernetes types below (everything else is
  replaced, as lists without a patchStrategy are in Kubernetes), primitive lists with strategy
  merge (metadata.finalizers) are unions, `$deleteFromPrimitiveList/<field>` removes from them,
  `$setElementOrder/<field>` is accepted and ignored. `$retainKeys` is refused with a 422.
"""
import copy

from . import errors

# Field name -> merge key, from the patchMergeKey tags of k8s.io/api types.
_MERGE_KEYS = {
    "ownerReferences": "uid",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "name",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "conditions": "type",
    "addresses": "type",
    "volumeClaimTemplates": None,  # atomic in StatefulSetSpec: replaced
}
# Primitive lists with patchStrategy "merge".
_MERGE_PRIMITIVE = {"finalizers"}


def _invalid_patch(message):
    return errors.ApiError(422, "Invalid", message)


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# ---- JSON patch -------------------------------------------------------------------------------

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts, path):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise _invalid_patch("doc is missing path: \"%s\": missing value" % path)
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                i = int(p)
            except ValueError:
                raise _invalid_patch("invalid array index %r in %s" % (p, path))
            if i < 0 or i >= len(cur):
                raise _invalid_patch("unable to access invalid index: %d" % i)
            cur = cur[i]
        else:
            raise _invalid_patch("doc is missing path: \"%s\"" % path)
    return cur


def _add(doc, path, value):
    parts = _pointer(path)
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            i = int(last)
            if i < 0 or i > len(parent):
                raise _invalid_patch("Unable to access invalid index: %d" % i)
            parent.insert(i, value)
    else:
        raise _invalid_patch("doc is missing path: \"%s\"" % path)
    return doc


def _remove(doc, path):
    parts = _pointer(path)
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch("Unable to remove nonexistent key: %s: missing value" % last)
        return parent.pop(last)
    if isinstance(parent, list):
        i = int(last)
        if i < 0 or i >= len(parent):
            raise _invalid_patch("Unable to remove invalid index: %d" % i)
        return parent.pop(i)
    raise _invalid_patch("doc is missing path: \"%s\"" % path)


def json_patch(doc, operations):
    if not isinstance(operations, list):
        raise errors.bad_request("json: cannot unmarshal object into Go value of type "
                                 "jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise errors.bad_request("invalid JSON patch operation: %r" % (op,))
        kind = op["op"]
        path = op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _walk(doc, _pointer(path), path)  # must exist
            _remove(doc, path) if _pointer(path) else None
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
        elif kind == "copy":
            value = copy.deepcopy(_walk(doc, _pointer(op.get("from", "")), op.get("from", "")))
            doc = _add(doc, path, value)
        elif kind == "test":
            actual = _walk(doc, _pointer(path), path)
            if actual != op.get("value"):
                raise _invalid_patch("testing value %s failed: test failed" % path)
        else:
            raise errors.bad_request("Unexpected kind: %s" % kind)
    return doc


# ---- strategic merge patch --------------------------------------------------------------------

def strategic_merge_patch(original, patch):
    if not isinstance(patch, dict):
        raise errors.bad_request("strategic merge patch must be a JSON object")
    return _smp_map(copy.deepcopy(original) if isinstance(original, dict) else {}, patch)


def _smp_map(original, patch):
    directive = patch.get("$patch")
    if directive == "replace":
        out = {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        return out
    if directive == "delete":
        return None
    if directive is not None:
        raise _invalid_patch("Unknown patch type: %s" % directive)
    if "$retainKeys" in patch:
        raise _invalid_patch("$retainKeys is not supported by this fake API server")
    deletions = {}
    for k, v in patch.items():
        if k.startswith("$deleteFromPrimitiveList/"):
            deletions[k.split("/", 1)[1]] = v or []
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            original.pop(k, None)
        elif isinstance(v, dict):
            merged = _smp_map(original.get(k) if isinstance(original.get(k), dict) else {}, v)
            if merged is None:
                original.pop(k, None)
            else:
                original[k] = merged
        elif isinstance(v, list):
            original[k] = _smp_list(k, original.get(k), v)
        else:
            original[k] = v
    for k, values in deletions.items():
        if isinstance(original.get(k), list):
            original[k] = [x for x in original[k] if x not in values]
    return original


def _smp_list(field, original, patch):
    original = original if isinstance(original, list) else []
    if field in _MERGE_PRIMITIVE:
        out = list(original)
        for v in patch:
            if v not in out:
                out.append(v)
        return out
    key = _MERGE_KEYS.get(field)
    if key is None or not all(isinstance(x, dict) for x in patch):
        # No patch strategy: the list is replaced whole, minus any `$patch` markers.
        return [copy.deepcopy(x) for x in patch
                if not (isinstance(x, dict) and x.get("$patch") is not None)]
    for x in patch:
        if x.get("$patch") == "replace":
            return [copy.deepcopy(y) for y in patch if y.get("$patch") is None]
    out = [copy.deepcopy(x) for x in original]
    for item in patch:
        if key not in item:
            raise _invalid_patch("map: %r does not contain declared merge key: %s" % (item, key))
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and
                    o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_smp_map({}, item))
        else:
            out[idx] = _smp_map(out[idx], item)
    return out
