"""The record of every mutating request (and every storage deletion the fake controllers
perform), served at GET /_fake/audit so tests can assert what was never done: a PV with reclaim
Delete never deleted, storage never the target of a delete.

Secret payloads are never recorded: only their keys.
"""
import copy
import threading
import time


def _redact(obj):
    if not isinstance(obj, dict):
        return obj
    if obj.get("kind") == "Secret" or "data" in obj and obj.get("type") is not None:
        out = copy.deepcopy(obj)
        for field in ("data", "stringData"):
            if isinstance(out.get(field), dict):
                out[field] = {k: "<redacted>" for k in out[field]}
        return out
    return copy.deepcopy(obj)


class Audit(object):
    def __init__(self):
        self._lock = threading.Lock()
        self._entries = []

    def record(self, verb, rtype, namespace, name, subresource=None, dry_run=False, user="",
               code=200, reason="", obj=None, patch=None, extra=None):
        entry = {
            "time": time.time(),
            "verb": verb,
            "resource": rtype.plural if rtype else "",
            "group": rtype.group if rtype else "",
            "namespace": namespace or "",
            "name": name or "",
            "subresource": subresource or "",
            "dryRun": bool(dry_run),
            "user": user,
            "code": code,
            "reason": reason,
        }
        if obj is not None:
            entry["object"] = _redact(obj)
        if patch is not None and not (rtype is not None and rtype.kind == "Secret"):
            entry["patch"] = copy.deepcopy(patch)
        if extra:
            entry.update(extra)
        with self._lock:
            entry["seq"] = len(self._entries) + 1
            self._entries.append(entry)
        return entry

    def since(self, seq):
        with self._lock:
            return list(self._entries[seq:])
