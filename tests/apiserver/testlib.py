"""Shared plumbing of the fake API server's own tests: an in-process server per test class
(real HTTPS, real certificates) and a small JSON client over http.client."""
import atexit
import http.client
import json
import os
import shutil
import ssl
import tempfile
import time
import unittest
import urllib.parse

from fakeapi import tls_material
from fakeapi.server import FakeApiServer

_CERTS = None


def _shared_certs():
    """One set of certificates for the whole test run (openssl is slow on a loaded machine)."""
    global _CERTS
    if _CERTS is None:
        _CERTS = tempfile.mkdtemp(prefix="fake-apiserver-certs-")
        atexit.register(shutil.rmtree, _CERTS, True)
        tls_material.ensure_certificates(_CERTS)
    return _CERTS


class ApiError(Exception):
    def __init__(self, code, body, headers):
        super().__init__("%s %s" % (code, body))
        self.code, self.body, self.headers = code, body, headers


class Client(object):
    def __init__(self, port, directory, cert=True, token=None, ca=None):
        ctx = ssl.create_default_context(cafile=ca or os.path.join(directory, "ca.crt"))
        if cert:
            ctx.load_cert_chain(os.path.join(directory, "admin.crt"),
                                os.path.join(directory, "admin.key"))
        self.ctx, self.port, self.token = ctx, port, token
        self._conn = None

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method, path, body=None, content_type="application/json", params=None,
                raw=None):
        if params:
            path += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                             else None)
        if data is not None:
            headers["Content-Type"] = content_type
        # One kept-alive connection, as client-go keeps one: TLS handshakes are not free.
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPSConnection("127.0.0.1", self.port,
                                                         context=self.ctx, timeout=30)
            try:
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                payload = resp.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
            except Exception:
                self.close()
                raise
        self.last_headers = resp.headers
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        try:
            parsed = json.loads(payload.decode()) if payload else None
        except ValueError:
            parsed = payload.decode()
        if resp.status >= 400:
            raise ApiError(resp.status, parsed, dict(resp.getheaders()))
        return resp.status, parsed

    def get(self, path, **params):
        return self.request("GET", path, params=params or None)[1]

    def create(self, path, body, **params):
        return self.request("POST", path, body, params=params or None)[1]

    def update(self, path, body, **params):
        return self.request("PUT", path, body, params=params or None)[1]

    def patch(self, path, body, kind="merge", **params):
        ctype = {"merge": "application/merge-patch+json",
                 "strategic": "application/strategic-merge-patch+json",
                 "json": "application/json-patch+json"}[kind]
        return self.request("PATCH", path, body, ctype, params=params or None)[1]

    def delete(self, path, options=None, **params):
        return self.request("DELETE", path, options, params=params or None)

    def watch(self, path, max_events=100, timeout=5, **params):
        """Reads a watch stream until it ends, max_events arrive or `timeout` passes."""
        params = dict(params)
        params["watch"] = "true"
        params.setdefault("timeoutSeconds", str(max(int(round(timeout)), 1)))
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                           timeout=timeout + 5)
        conn.request("GET", path + "?" + urllib.parse.urlencode(params),
                     headers={"Accept": "application/json"})
        resp = conn.getresponse()
        events = []
        while len(events) < max_events:
            line = resp.readline()
            if not line:
                break
            if line.strip():
                events.append(json.loads(line.decode()))
        conn.close()
        return events

    def settle(self, timeout=30):
        """Waits for the controllers to converge; fails loudly when they do not."""
        answer = self.request("POST", "/_fake/settle",
                              params={"timeoutSeconds": str(timeout)})[1]
        if not answer.get("settled"):
            raise AssertionError("controllers did not settle within %s s" % timeout)
        return answer

    def audit(self, since=0):
        return self.get("/_fake/audit", since=str(since))["items"]


class ServerTestCase(unittest.TestCase):
    """Starts one server for the class. Subclasses may set SERVER_OPTIONS."""
    SERVER_OPTIONS = {}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fake-apiserver-test-")
        for name in os.listdir(_shared_certs()):
            shutil.copy(os.path.join(_shared_certs(), name), cls.dir)
        options = {"controller_delays": {"pod_termination": 0.1, "detach": 0.2}}
        options.update(cls.SERVER_OPTIONS)
        try:
            cls.server = FakeApiServer(cls.dir, **options).start()
        except BaseException:
            shutil.rmtree(cls.dir, ignore_errors=True)  # tearDownClass will not run
            raise
        cls.api = Client(cls.server.port, cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.api.close()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def assertApiError(self, code, fn, *args, **kwargs):
        with self.assertRaises(ApiError) as ctx:
            fn(*args, **kwargs)
        self.assertEqual(ctx.exception.code, code, ctx.exception.body)
        return ctx.exception.body

    def wait_for(self, fn, timeout=20.0, what="condition"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = fn()
            if value:
                return value
            time.sleep(0.02)
        self.fail("timed out waiting for " + what)


PV = "/api/v1/persistentvolumes"


def ns_path(ns, plural, name=None, group=None):
    base = ("/apis/%s" % group) if group else "/api/v1"
    path = "%s/namespaces/%s/%s" % (base, ns, plural)
    return path + ("/" + name if name else "")


def flex_pv(name, size="1Gi", reclaim="Retain", claim_ref=None, driver="flexcsi/loopback",
            storage_class=None, extra_spec=None):
    spec = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": reclaim,
            "flexVolume": {"driver": driver, "options": {"volumeID": name}}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def claim(name, size="1Gi", storage_class="", volume_name=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
            "storageClassName": storage_class}
    if volume_name:
        spec["volumeName"] = volume_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec}


def pod(name, claim_name=None, node=None):
    spec = {"containers": [{"name": "c", "image": "busybox"}]}
    if claim_name:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def node(name, labels=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}}}
