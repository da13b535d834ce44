"""Test-only controls under /_fake/ (see README.md). They change how the server behaves; they
never reveal more than the API itself stores (secret payloads stay out of the audit log)."""
import json
import threading
import time

from . import errors


class FailureInjector(object):
    """Makes the next N matching API requests fail with a chosen code."""

    def __init__(self):
        self._lock = threading.Lock()
        self._rules = []

    def add(self, rule):
        code = int(rule.get("code", 500))
        if code not in (403, 429, 500, 502, 503, 504):
            raise errors.bad_request("code must be one of 403, 429, 500, 502, 503, 504")
        entry = {"count": int(rule.get("count", 1)), "code": code,
                 "retryAfterSeconds": int(rule.get("retryAfterSeconds", 1)),
                 "method": rule.get("method") or "", "pathContains": rule.get("pathContains") or "",
                 "watchOnly": bool(rule.get("watchOnly"))}
        with self._lock:
            self._rules.append(entry)
        return entry

    def clear(self):
        with self._lock:
            self._rules = []

    def check(self, method, path, watching=False):
        with self._lock:
            for rule in self._rules:
                if rule["count"] <= 0:
                    continue
                if rule["method"] and rule["method"].upper() != method:
                    continue
                if rule["pathContains"] and rule["pathContains"] not in path:
                    continue
                if rule["watchOnly"] and not watching:
                    continue
                rule["count"] -= 1
                code = rule["code"]
                break
            else:
                return
            self._rules = [r for r in self._rules if r["count"] > 0]
        if code == 429:
            raise errors.too_many_requests(rule["retryAfterSeconds"])
        if code == 403:
            # as RBAC answers a verb the user's roles do not grant
            raise errors.ApiError(403, "Forbidden", "%s is forbidden: User cannot %s it "
                                  "(injected by /_fake/fail)" % (path, "watch" if watching
                                                                  else method.lower()))
        if code == 503:
            raise errors.ApiError(503, "ServiceUnavailable", "the server is currently unable to "
                                  "handle the request (injected by /_fake/fail)",
                                  {"retryAfterSeconds": rule["retryAfterSeconds"]},
                                  headers={"Retry-After": str(rule["retryAfterSeconds"])})
        if code == 504:
            raise errors.ApiError(504, "Timeout", "the server was unable to return a response in "
                                  "the time allotted (injected by /_fake/fail)")
        raise errors.ApiError(code, "InternalError", "Internal error occurred: injected failure "
                              "(/_fake/fail)")


class ReadCounter(object):
    """Every read of the API by verb and resource ("list pods", "get persistentvolumes/scale",
    "watch nodes"): the audit log records writes only, and a test of how a client reads (lists
    per object, or one watch) needs the reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = {}

    def record(self, verb, plural, subresource=""):
        key = "%s %s%s" % (verb, plural, "/" + subresource if subresource else "")
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def counts(self):
        with self._lock:
            return dict(self._counts)


class Control(object):
    def __init__(self, fake):
        self.fake = fake

    def handle(self, method, path, params, raw):
        fake = self.fake
        body = {}
        if raw:
            try:
                body = json.loads(raw.decode())
            except ValueError:
                raise errors.bad_request("control request body must be JSON")
        action = path[len("/_fake/"):].strip("/")
        if action == "audit" and method == "GET":
            since = int(params.get("since") or 0)
            return 200, {"items": fake.audit.since(since)}
        if action == "reads" and method == "GET":
            return 200, {"counts": fake.reads.counts()}
        if method != "POST" and not (action == "controllers" and method == "GET"):
            raise errors.method_not_allowed()
        if action == "fail":
            if body.get("clear"):
                fake.failures.clear()
                return 200, {"cleared": True}
            return 200, fake.failures.add(body)
        if action == "pause-controllers":
            return 200, {"paused": fake.controllers.set_paused(body.get("controllers"), True)}
        if action == "resume-controllers":
            return 200, {"paused": fake.controllers.set_paused(body.get("controllers"), False)}
        if action == "controllers":
            return 200, {"controllers": fake.controllers.describe(),
                         "openWatches": fake.open_watches.count(),
                         "watches": fake.open_watches.describe()}
        if action == "compact":
            with fake.store.lock:
                fake.store.compact()
                return 200, {"compactedResourceVersion": str(fake.store.compacted_rv)}
        if action == "close-watches":
            return 200, {"closed": True, "streams": fake.open_watches.close_all()}
        if action == "settle":
            timeout = float(params.get("timeoutSeconds") or body.get("timeoutSeconds") or 10)
            settled = fake.controllers.wait_settled(time.time() + timeout)
            return 200, {"settled": settled}
        if action == "delay":
            fake.delay_ms = int(body.get("ms", 0))
            return 200, {"delayMs": fake.delay_ms}
        raise errors.resource_not_found()
