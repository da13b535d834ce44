"""The /_fake/ test controls: injected 500/429 answers, the audit log (what was deleted, dry
runs, storage deletes; no secret payloads), and --state-file persistence across a restart."""
import base64
import json
import os
import shutil
import tempfile
import unittest

from fakeapi.server import FakeApiServer
from testlib import PV, ApiError, Client, ServerTestCase, _shared_certs, flex_pv, ns_path


class ControlTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def test_fail_makes_the_next_requests_answer_500_then_recovers(self):
        self.api.request("POST", "/_fake/fail", {"count": 2, "code": 500})
        for _ in range(2):
            e = self.assertApiError(500, self.api.get, PV)
            self.assertEqual(e["reason"], "InternalError")
        self.api.get(PV)

    def test_fail_429_carries_retry_after(self):
        self.api.request("POST", "/_fake/fail", {"count": 1, "code": 429, "retryAfterSeconds": 2,
                                                 "method": "POST", "pathContains": "configmaps"})
        self.api.get(PV)  # does not match: served
        with self.assertRaises(ApiError) as e:
            self.api.create(ns_path("default", "configmaps"), {"metadata": {"name": "cm429"}})
        self.assertEqual(e.exception.code, 429)
        self.assertEqual(e.exception.headers.get("Retry-After"), "2")
        self.assertEqual(e.exception.body["details"]["retryAfterSeconds"], 2)
        self.api.create(ns_path("default", "configmaps"), {"metadata": {"name": "cm429"}})

    def test_audit_records_mutations_with_dry_run_flag_and_objects(self):
        start = len(self.api.audit())
        self.api.create(PV, flex_pv("audit-pv", reclaim="Delete"))
        self.api.delete(PV + "/audit-pv", dryRun="All")
        self.assertApiError(409, self.api.delete, PV + "/audit-pv", {"preconditions": {"uid": "x"}})
        entries = self.api.audit(since=start)
        self.assertEqual([(e["verb"], e["code"], e["dryRun"]) for e in entries],
                         [("create", 201, False), ("delete", 200, True), ("delete", 409, False)])
        self.assertEqual(entries[1]["object"]["spec"]["persistentVolumeReclaimPolicy"], "Delete")
        self.assertEqual(entries[2]["options"], {"preconditions": {"uid": "x"}})
        self.assertEqual(self.api.get(PV)["kind"], "PersistentVolumeList")
        self.assertEqual(len(self.api.audit(since=start)), 3)  # reads are not recorded

    def test_audit_never_contains_secret_payloads(self):
        value = base64.b64encode(b"hunter2-password").decode()
        self.api.create(ns_path("default", "secrets"), {"metadata": {"name": "creds"},
                                                        "data": {"password": value}})
        self.api.patch(ns_path("default", "secrets", "creds"),
                       {"data": {"password": base64.b64encode(b"other-pass").decode()}})
        text = json.dumps(self.api.audit())
        self.assertNotIn(value, text)
        self.assertNotIn(base64.b64encode(b"other-pass").decode(), text)
        self.assertIn('"password": "<redacted>"', text)
        self.assertEqual(self.api.get(ns_path("default", "secrets", "creds"))["type"], "Opaque")

    def test_secret_string_data_is_stored_as_base64_data_only(self):
        got = self.api.create(ns_path("default", "secrets"), {
            "metadata": {"name": "sd"}, "stringData": {"token": "s3cr3t-token-value"}})
        self.assertEqual(got["data"], {"token": base64.b64encode(b"s3cr3t-token-value").decode()})
        self.assertNotIn("stringData", got)
        self.assertApiError(400, self.api.create, ns_path("default", "secrets"),
                            {"metadata": {"name": "bad"}, "data": {"k": "not base64!"}})
        self.assertNotIn("s3cr3t-token-value", json.dumps(self.api.audit()))

    def test_delay_slows_every_api_request(self):
        import time
        self.api.request("POST", "/_fake/delay", {"ms": 150})
        try:
            start = time.time()
            self.api.get(PV)
            self.assertGreaterEqual(time.time() - start, 0.15)
        finally:
            self.api.request("POST", "/_fake/delay", {"ms": 0})

    def test_delete_collection_deletes_the_selected_objects_only(self):
        cms = ns_path("default", "configmaps")
        for name, tier in (("dc-a", "x"), ("dc-b", "x"), ("dc-c", "y")):
            self.api.create(cms, {"metadata": {"name": name, "labels": {"dc": tier}}})
        self.api.delete(cms, labelSelector="dc=x")
        self.assertEqual([c["metadata"]["name"] for c in
                          self.api.get(cms, labelSelector="dc")["items"]], ["dc-c"])

    def test_unknown_control_is_404(self):
        self.assertApiError(404, self.api.request, "POST", "/_fake/nothing")


class StateFileTest(unittest.TestCase):
    def test_objects_survive_a_restart_with_the_same_uids_and_versions(self):
        d = tempfile.mkdtemp(prefix="fake-apiserver-state-")
        try:
            for name in os.listdir(_shared_certs()):
                shutil.copy(os.path.join(_shared_certs(), name), d)
            state = os.path.join(d, "state.jsonl")
            server = FakeApiServer(d, state_file=state, run_controllers=False).start()
            api = Client(server.port, d)
            pv = api.create(PV, flex_pv("state-pv"))
            api.create(PV, flex_pv("state-gone"))
            api.patch(PV + "/state-gone", {"metadata": {"finalizers": None}})
            api.delete(PV + "/state-gone")
            api.close()
            server.stop()
            with open(state, "a") as f:
                f.write('{"op": "put", "torn')  # a write cut short by kill -9
            server = FakeApiServer(d, state_file=state, run_controllers=False).start()
            api = Client(server.port, d)
            got = api.get(PV + "/state-pv")
            self.assertEqual(got["metadata"]["uid"], pv["metadata"]["uid"])
            self.assertEqual(got["metadata"]["resourceVersion"], pv["metadata"]["resourceVersion"])
            with self.assertRaises(ApiError):
                api.get(PV + "/state-gone")
            newer = api.create(PV, flex_pv("state-new"))
            self.assertGreater(int(newer["metadata"]["resourceVersion"]),
                               int(got["metadata"]["resourceVersion"]))
            events = api.watch(PV, resourceVersion=pv["metadata"]["resourceVersion"])
            self.assertEqual(events[0]["object"]["code"], 410)  # history is not kept
            api.close()
            server.stop()
            # The journal was rewritten at start: one line per live object plus the counter.
            with open(state) as f:
                kinds = [json.loads(line)["op"] for line in f]
            self.assertEqual(kinds.count("delete"), 0)
            server = FakeApiServer(d, state_file=state, run_controllers=False).start()
            api = Client(server.port, d)
            self.assertEqual(len([p for p in api.get(PV)["items"]
                                  if p["metadata"]["name"].startswith("state-")]), 2)
            api.close()
            server.stop()
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
