"""DELETE: preconditions, the Status reply, finalizers with deletionTimestamp (object stays
readable; no new finalizers; gone when the last one is removed), graceful pod deletion and the
protection finalizers added at create."""
import unittest

from testlib import PV, ServerTestCase, claim, flex_pv, ns_path, pod

PVC = ns_path("default", "persistentvolumeclaims")
PODS = ns_path("default", "pods")


class DeleteTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def plain_pv(self, name):
        """A PV without the pv-protection finalizer (removed right after create)."""
        self.api.create(PV, flex_pv(name))
        return self.api.patch(PV + "/" + name, {"metadata": {"finalizers": None}})

    def test_protection_finalizers_are_added_on_create(self):
        self.assertEqual(self.api.create(PV, flex_pv("del-fin"))["metadata"]["finalizers"],
                         ["kubernetes.io/pv-protection"])
        self.assertEqual(self.api.create(PVC, claim("del-fin"))["metadata"]["finalizers"],
                         ["kubernetes.io/pvc-protection"])

    def test_delete_answers_with_the_object_or_a_success_status_by_type(self):
        pv = self.plain_pv("del-plain")
        code, body = self.api.delete(PV + "/del-plain")
        self.assertEqual((code, body["kind"]), (200, "PersistentVolume"))
        self.assertApiError(404, self.api.get, PV + "/del-plain")
        cm = self.api.create(ns_path("default", "configmaps"), {"metadata": {"name": "del-cm"}})
        code, body = self.api.delete(ns_path("default", "configmaps", "del-cm"))
        self.assertEqual(code, 200)
        self.assertEqual(body["kind"], "Status")
        self.assertEqual(body["status"], "Success")
        self.assertEqual(body["details"], {"name": "del-cm", "kind": "configmaps",
                                           "uid": cm["metadata"]["uid"]})
        self.assertEqual(pv["kind"], "PersistentVolume")

    def test_uid_and_resource_version_preconditions(self):
        pv = self.plain_pv("del-pre")
        e = self.assertApiError(409, self.api.delete, PV + "/del-pre",
                                {"preconditions": {"uid": "someone-else"}})
        self.assertIn("Precondition failed: UID in precondition: someone-else", e["message"])
        self.assertApiError(409, self.api.delete, PV + "/del-pre",
                            {"preconditions": {"resourceVersion": "1"}})
        code, _ = self.api.delete(PV + "/del-pre", {"preconditions": {
            "uid": pv["metadata"]["uid"], "resourceVersion": pv["metadata"]["resourceVersion"]}})
        self.assertEqual(code, 200)

    def test_finalizers_keep_a_deleted_object_until_the_last_is_removed(self):
        self.api.create(PV, flex_pv("del-keep"))
        self.api.patch(PV + "/del-keep", {"metadata": {
            "finalizers": ["a.io/x", "kubernetes.io/pv-protection"]}})
        code, body = self.api.delete(PV + "/del-keep")
        self.assertEqual(code, 200)
        self.assertEqual(body["kind"], "PersistentVolume")
        self.assertIn("deletionTimestamp", body["metadata"])
        self.assertEqual(body["metadata"]["deletionGracePeriodSeconds"], 0)
        got = self.api.get(PV + "/del-keep")
        self.assertEqual(got["metadata"]["deletionTimestamp"],
                         body["metadata"]["deletionTimestamp"])
        # A second delete changes nothing.
        code, again = self.api.delete(PV + "/del-keep")
        self.assertEqual(again["metadata"]["resourceVersion"], got["metadata"]["resourceVersion"])
        e = self.assertApiError(422, self.api.patch, PV + "/del-keep",
                                {"metadata": {"finalizers": ["a.io/x", "b.io/new"]}})
        self.assertIn("no new finalizers can be added if the object is being deleted",
                      e["message"])
        self.api.patch(PV + "/del-keep", {"metadata": {"finalizers": ["a.io/x"]}})
        self.assertEqual(self.api.get(PV + "/del-keep")["metadata"]["finalizers"], ["a.io/x"])
        self.api.patch(PV + "/del-keep", {"metadata": {"finalizers": []}})
        self.assertApiError(404, self.api.get, PV + "/del-keep")

    def test_deletion_timestamp_cannot_be_set_or_cleared_by_update(self):
        pv = self.api.create(PV, flex_pv("del-ts"))
        body = dict(pv, metadata=dict(pv["metadata"], deletionTimestamp="2020-01-01T00:00:00Z"))
        self.assertApiError(422, self.api.update, PV + "/del-ts", body)
        self.api.delete(PV + "/del-ts")
        got = self.api.get(PV + "/del-ts")
        cleared = dict(got, metadata=dict(got["metadata"]))
        del cleared["metadata"]["deletionTimestamp"]
        self.assertIn("deletionTimestamp", self.api.update(PV + "/del-ts", cleared)["metadata"])

    def test_scheduled_pod_is_deleted_gracefully_unscheduled_at_once(self):
        self.api.create(PODS, pod("del-sched", node="node-x"))
        code, body = self.api.delete(PODS + "/del-sched")
        self.assertEqual(code, 200)
        self.assertEqual(body["metadata"]["deletionGracePeriodSeconds"], 30)
        code, body = self.api.delete(PODS + "/del-sched", {"gracePeriodSeconds": 0})
        self.assertEqual(code, 200)
        self.assertEqual(body["kind"], "Pod")
        self.assertApiError(404, self.api.get, PODS + "/del-sched")
        self.api.create(PODS, pod("del-unsched"))
        code, _ = self.api.delete(PODS + "/del-unsched")
        self.assertEqual(code, 200)

    def test_bad_propagation_policy_is_refused(self):
        self.plain_pv("del-prop")
        self.assertApiError(422, self.api.delete, PV + "/del-prop",
                            {"propagationPolicy": "Sometimes"})

    def test_orphan_policy_adds_the_orphan_finalizer(self):
        self.plain_pv("del-orphan")
        code, body = self.api.delete(PV + "/del-orphan", {"propagationPolicy": "Orphan"})
        self.assertEqual(code, 200)
        self.assertEqual(body["metadata"]["finalizers"], ["orphan"])

    def test_pending_delete_is_202_only_when_orphan_dependents_is_false(self):
        self.api.create(PV, flex_pv("del-202"))
        code, body = self.api.delete(PV + "/del-202", {"orphanDependents": False})
        self.assertEqual(code, 202)
        self.assertIn("deletionTimestamp", body["metadata"])

    def test_delete_of_missing_object_is_404(self):
        e = self.assertApiError(404, self.api.delete, PV + "/del-none")
        self.assertEqual(e["reason"], "NotFound")


if __name__ == "__main__":
    unittest.main()
