"""The controller loop: every controller's sync() runs in one background thread, one after the
other, whenever the store changes (or every tick, for delayed work). Controllers write through
the same Api as clients, so their writes are validated, versioned, watched and audited.
"""
import threading
import time
import traceback

from .. import errors


class Controller(object):
    """A sync() that reads the store and converges it a step. Subclasses set `name`."""
    name = "controller"

    def __init__(self, fake):
        self.fake = fake
        self.api = fake.api
        self.store = fake.store
        self.registry = fake.registry
        self.user = "system:serviceaccount:kube-system:" + self.name
        self.paused = False
        self._recorded = set()  # (uid, reason, message) of events already recorded

    def sync(self):
        raise NotImplementedError

    def pending(self):
        """True while work is scheduled for later (a delay that has not yet run out)."""
        return False

    # ---- helpers: every write through the Api, conflicts left for the next pass ----

    def t(self, group_version, plural):
        return self.registry.get(group_version, plural)

    def items(self, rtype, namespace=None):
        return self.store.items(rtype.key, namespace)

    def obj(self, rtype, namespace, name):
        return self.store.get(rtype.key, namespace or "", name)

    def write(self, fn, *args, **kwargs):
        kwargs.setdefault("user", self.user)
        try:
            return fn(*args, **kwargs)
        except errors.ApiError as e:
            if e.code in (404, 409):
                return None  # the world moved; the next pass sees the new state
            raise

    def update(self, rtype, obj, subresource=None):
        return self.write(self.api.update, rtype, obj["metadata"].get("namespace", ""),
                          obj["metadata"]["name"], obj, subresource=subresource)

    def create(self, rtype, namespace, obj):
        return self.write(self.api.create, rtype, namespace, obj)

    def delete(self, rtype, obj, options=None):
        meta = obj["metadata"]
        opts = {"preconditions": {"uid": meta["uid"]}}
        opts.update(options or {})
        return self.write(self.api.delete, rtype, meta.get("namespace", ""), meta["name"], opts)

    def event(self, involved, rtype, etype, reason, message):
        """Records a v1 Event on an object, as controllers' event recorders do."""
        meta = involved["metadata"]
        namespace = meta.get("namespace") or "default"
        ev_type = self.t("v1", "events")
        from ..api_ops import now_rfc3339
        body = {
            "metadata": {"generateName": meta["name"] + ".", "namespace": namespace},
            "involvedObject": {"kind": rtype.kind, "apiVersion": rtype.group_version,
                               "name": meta["name"], "namespace": meta.get("namespace", ""),
                               "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]},
            "reason": reason, "message": message, "type": etype,
            "source": {"component": self.name}, "count": 1,
            "firstTimestamp": now_rfc3339(), "lastTimestamp": now_rfc3339(),
        }
        if not meta.get("namespace"):
            body["involvedObject"].pop("namespace")
        # An identical event already recorded is not repeated (the recorder aggregates them).
        key = (meta["uid"], reason, message)
        if key in self._recorded:
            return
        if self.create(ev_type, namespace, body) is not None:
            self._recorded.add(key)


class ControllerManager(object):
    TICK = 0.02

    def __init__(self, fake, controllers):
        self.fake = fake
        self.controllers = controllers
        self._thread = None
        self._lock = threading.Condition()
        self._quiet_passes = 0
        self._pass_count = 0
        self._pending = False

    def start(self):
        self._thread = threading.Thread(target=self._run, name="controllers", daemon=True)
        self._thread.start()

    def join(self, timeout=None):
        if self._thread:
            self._thread.join(timeout)

    def set_paused(self, names, paused):
        for c in self.controllers:
            if not names or c.name in names:
                c.paused = paused
        with self._lock:
            self._quiet_passes = 0
        return sorted(c.name for c in self.controllers if c.paused)

    def describe(self):
        return [{"name": c.name, "paused": c.paused} for c in self.controllers]

    def run_pass(self):
        store = self.fake.store
        with store.lock:
            before = store.resource_version
        pending = False
        for c in self.controllers:
            if c.paused or self.fake.stopping:
                continue
            try:
                with store.lock:
                    c.sync()
                    pending = pending or c.pending()
            except Exception:
                traceback.print_exc()
        with store.lock:
            changed = store.resource_version != before
        with self._lock:
            self._pass_count += 1
            self._quiet_passes = 0 if (changed or pending) else self._quiet_passes + 1
            self._lock.notify_all()
        self._pending = pending
        return changed

    def _run(self):
        store = self.fake.store
        while not self.fake.stopping:
            started = time.time()
            changed = self.run_pass()
            # Passes scan every object: with many objects, leave the API at least two thirds
            # of the time (a pass holds the store lock while each controller syncs).
            rest = max(self.TICK, 2 * (time.time() - started))
            if changed:
                time.sleep(rest if rest > self.TICK else 0)
            else:
                # Any write wakes the loop at once; with nothing changing and no timer
                # pending, idle servers (many run side by side in CI) stay nearly idle.
                idle = rest if self._pending or self._quiet_passes < 2 else max(rest, 1.0)
                with store.lock:
                    store.changed.wait(idle)

    def wait_settled(self, deadline):
        """Waits for two consecutive passes that changed nothing and left nothing pending."""
        with self._lock:
            self._quiet_passes = 0
        with self.fake.store.lock:
            self.fake.store.changed.notify_all()  # wake an idle loop now
        with self._lock:
            while self._quiet_passes < 2:
                left = deadline - time.time()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
            return True
