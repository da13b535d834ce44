"""In-memory object storage with a global resourceVersion counter and a bounded event history.

Plays etcd's role: every write gets the next revision; watchers read the history after a
revision, and a revision older than the kept window is "compacted" (410 Gone). Optionally every
write is appended to a journal file (--state-file) and replayed at start, so a test can kill the
server and restart it with the same objects, like an apiserver restart over a surviving etcd.
The history itself is not journaled: after a restart, watches from an old revision get 410.
"""
import bisect
import copy
import json
import os
import threading

HISTORY_LIMIT = 1000
FIRST_RESOURCE_VERSION = 100


class Store(object):
    def __init__(self, history_limit=HISTORY_LIMIT, state_file=None):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self._objects = {}  # type key -> {(namespace, name): object}
        self._rv = FIRST_RESOURCE_VERSION
        self._history = []  # (rv, type key, event type, object), rv increasing
        self._history_rvs = []
        self._history_limit = history_limit
        # Events with rv <= compacted_rv are gone; a watch from below it gets 410.
        self.compacted_rv = FIRST_RESOURCE_VERSION
        self._journal = None
        if state_file:
            self._replay(state_file)
            self._rewrite(state_file)
            self._journal = open(state_file, "a")

    # REQUIRES: lock held for every method below (callers take `store.lock`).

    @property
    def resource_version(self):
        return self._rv

    def get(self, type_key, namespace, name):
        """Returns the stored object (not a copy: callers must not modify it) or None."""
        return self._objects.get(type_key, {}).get((namespace or "", name))

    def items(self, type_key, namespace=None):
        """Stored objects of a type, sorted by (namespace, name): the order real lists use."""
        bucket = self._objects.get(type_key, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def count(self, type_key):
        return len(self._objects.get(type_key, {}))

    def put(self, type_key, obj, event_type):
        """Stores obj (ADDED or MODIFIED) under the next revision, which it writes into obj."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        meta = obj["metadata"]
        bucket = self._objects.setdefault(type_key, {})
        key = (meta.get("namespace", ""), meta["name"])
        prev = bucket.get(key)
        bucket[key] = obj
        self._record(type_key, event_type, obj, prev)
        self._log({"op": "put", "type": type_key, "rv": self._rv, "object": obj})
        return obj

    def remove(self, type_key, obj):
        """Deletes obj; the DELETED event carries the deletion's revision, as etcd3 watch does."""
        meta = obj["metadata"]
        self._objects.get(type_key, {}).pop((meta.get("namespace", ""), meta["name"]), None)
        self._rv += 1
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        obj = copy.deepcopy(obj)
        self._record(type_key, "DELETED", gone, obj)
        self._log({"op": "delete", "type": type_key, "rv": self._rv,
                   "namespace": meta.get("namespace", ""), "name": meta["name"]})
        return gone

    def events_after(self, rv, type_key):
        """History entries of one type with revision > rv: (rv, event type, object, previous
        object or None). The objects are shared: callers must not modify them."""
        start = bisect.bisect_right(self._history_rvs, rv)
        return [(r, t, o, p) for (r, k, t, o, p) in self._history[start:] if k == type_key]

    def compact(self):
        """Drops the whole history, as an etcd compaction at the current revision."""
        self._history = []
        self._history_rvs = []
        self.compacted_rv = self._rv

    def _record(self, type_key, event_type, obj, prev):
        # Stored objects are replaced, never modified in place, so history can share them.
        self._history.append((self._rv, type_key, event_type, obj, prev))
        self._history_rvs.append(self._rv)
        if len(self._history) > 2 * self._history_limit:
            drop = len(self._history) - self._history_limit
            self.compacted_rv = self._history_rvs[drop - 1]
            self._history = self._history[drop:]
            self._history_rvs = self._history_rvs[drop:]
        self.changed.notify_all()

    def _log(self, entry):
        if self._journal is not None:
            self._journal.write(json.dumps(entry, separators=(",", ":")) + "\n")
            self._journal.flush()

    def _rewrite(self, path):
        """Starts the journal afresh with one entry per live object (temp file + rename), so
        replay time follows the state, not the history of every run before."""
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            for type_key in sorted(self._objects):
                for key in sorted(self._objects[type_key]):
                    obj = self._objects[type_key][key]
                    f.write(json.dumps({"op": "put", "type": type_key,
                                        "rv": int(obj["metadata"]["resourceVersion"]),
                                        "object": obj}, separators=(",", ":")) + "\n")
            # Keeps the revision counter even when the newest write was a delete.
            f.write(json.dumps({"op": "rv", "rv": self._rv}) + "\n")
        os.replace(tmp, path)

    def _replay(self, path):
        if not os.path.exists(path):
            return
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    break  # a torn last line from a kill -9: everything before it stands
                if entry["op"] == "rv":
                    self._rv = max(self._rv, entry["rv"])
                    continue
                bucket = self._objects.setdefault(entry["type"], {})
                if entry["op"] == "put":
                    meta = entry["object"]["metadata"]
                    bucket[(meta.get("namespace", ""), meta["name"])] = entry["object"]
                else:
                    bucket.pop((entry["namespace"], entry["name"]), None)
                self._rv = max(self._rv, entry["rv"])
        self.compacted_rv = self._rv
