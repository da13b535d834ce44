"""Create/update/delete rules of the generic registry: server-set metadata, resourceVersion
conflicts, no-op updates, dryRun, status handling, and strict refusals."""
import unittest

from testlib import PV, ServerTestCase, claim, flex_pv, ns_path

PVC = ns_path("default", "persistentvolumeclaims")


class CreateAndUpdateTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def test_create_sets_uid_timestamp_and_increasing_resource_versions(self):
        a = self.api.create(PV, flex_pv("crud-a"))
        b = self.api.create(PV, flex_pv("crud-b"))
        self.assertTrue(a["metadata"]["uid"])
        self.assertTrue(a["metadata"]["creationTimestamp"].endswith("Z"))
        self.assertGreater(int(b["metadata"]["resourceVersion"]),
                           int(a["metadata"]["resourceVersion"]))
        self.assertEqual(a["status"], {"phase": "Pending"})
        self.assertEqual(a["spec"]["volumeMode"], "Filesystem")

    def test_create_ignores_client_uid_and_status(self):
        body = flex_pv("crud-uid")
        body["metadata"]["uid"] = "not-mine"
        body["status"] = {"phase": "Bound"}
        got = self.api.create(PV, body)
        self.assertNotEqual(got["metadata"]["uid"], "not-mine")
        self.assertEqual(got["status"]["phase"], "Pending")

    def test_create_with_resource_version_fails_like_etcd3_store(self):
        body = flex_pv("crud-rv")
        body["metadata"]["resourceVersion"] = "5"
        e = self.assertApiError(500, self.api.create, PV, body)
        self.assertIn("resourceVersion should not be set on objects to be created", e["message"])

    def test_duplicate_name_is_409_already_exists(self):
        self.api.create(PV, flex_pv("crud-dup"))
        e = self.assertApiError(409, self.api.create, PV, flex_pv("crud-dup"))
        self.assertEqual(e["reason"], "AlreadyExists")
        self.assertEqual(e["details"]["name"], "crud-dup")

    def test_generate_name_appends_five_characters(self):
        body = flex_pv("")
        del body["metadata"]["name"]
        body["metadata"]["generateName"] = "gen-"
        got = self.api.create(PV, body)
        self.assertRegex(got["metadata"]["name"], r"^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$")

    def test_invalid_name_is_422_with_field_cause(self):
        e = self.assertApiError(422, self.api.create, PV, flex_pv("Bad_Name"))
        self.assertEqual(e["reason"], "Invalid")
        self.assertEqual(e["details"]["causes"][0]["field"], "metadata.name")

    def test_stale_resource_version_update_is_409_conflict(self):
        old = self.api.create(PV, flex_pv("crud-stale"))
        fresh = dict(old, metadata=dict(old["metadata"], labels={"a": "1"}))
        self.api.update(PV + "/crud-stale", fresh)
        stale = dict(old, metadata=dict(old["metadata"], labels={"a": "2"}))
        e = self.assertApiError(409, self.api.update, PV + "/crud-stale", stale)
        self.assertEqual(e["reason"], "Conflict")
        self.assertIn("the object has been modified", e["message"])

    def test_update_without_resource_version_is_unconditional_for_builtin_types(self):
        self.api.create(PV, flex_pv("crud-uncond"))
        body = flex_pv("crud-uncond")
        body["metadata"]["labels"] = {"x": "y"}
        got = self.api.update(PV + "/crud-uncond", body)
        self.assertEqual(got["metadata"]["labels"], {"x": "y"})

    def test_noop_update_stores_nothing(self):
        old = self.api.create(PV, flex_pv("crud-noop"))
        got = self.api.update(PV + "/crud-noop", old)
        self.assertEqual(got["metadata"]["resourceVersion"], old["metadata"]["resourceVersion"])

    def test_leases_need_a_version_to_update_but_may_be_created_by_put(self):
        leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a",
                                                         "leaseDurationSeconds": 15}}
        code, created = self.api.request("PUT", leases + "/leader", body)
        self.assertEqual(code, 201)
        body["spec"]["holderIdentity"] = "b"
        e = self.assertApiError(422, self.api.update, leases + "/leader", body)
        self.assertIn("metadata.resourceVersion", e["message"])
        body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
        self.assertEqual(self.api.update(leases + "/leader", body)["spec"]["holderIdentity"], "b")
        self.assertApiError(409, self.api.update, leases + "/leader", body)

    def test_update_carrying_another_uid_is_a_failed_precondition(self):
        old = self.api.create(PV, flex_pv("crud-uidpre"))
        body = dict(old, metadata=dict(old["metadata"], uid="someone-else"))
        e = self.assertApiError(409, self.api.update, PV + "/crud-uidpre", body)
        self.assertIn("Precondition failed: UID in precondition: someone-else", e["message"])

    def test_recreating_a_terminating_object_says_it_is_being_deleted(self):
        self.api.create(PV, flex_pv("crud-term"))
        self.api.delete(PV + "/crud-term")
        e = self.assertApiError(409, self.api.create, PV, flex_pv("crud-term"))
        self.assertEqual(e["reason"], "AlreadyExists")
        self.assertEqual(e["message"],
                         'object is being deleted: persistentvolumes "crud-term" already exists')

    def test_update_of_missing_object_is_404(self):
        e = self.assertApiError(404, self.api.update, PV + "/crud-none", flex_pv("crud-none"))
        self.assertEqual(e["message"], 'persistentvolumes "crud-none" not found')

    def test_name_in_body_must_match_url(self):
        self.api.create(PV, flex_pv("crud-n1"))
        self.assertApiError(400, self.api.update, PV + "/crud-n1", flex_pv("crud-n2"))

    def test_main_resource_update_ignores_status_and_status_update_ignores_spec(self):
        old = self.api.create(PV, flex_pv("crud-status"))
        body = dict(old, status={"phase": "Bound"})
        body["spec"] = dict(old["spec"], persistentVolumeReclaimPolicy="Delete")
        got = self.api.update(PV + "/crud-status", body)
        self.assertEqual(got["status"]["phase"], "Pending")
        self.assertEqual(got["spec"]["persistentVolumeReclaimPolicy"], "Delete")
        body = dict(got, status={"phase": "Available"})
        body["spec"] = dict(got["spec"], persistentVolumeReclaimPolicy="Retain")
        got2 = self.api.update(PV + "/crud-status/status", body)
        self.assertEqual(got2["status"]["phase"], "Available")
        self.assertEqual(got2["spec"]["persistentVolumeReclaimPolicy"], "Delete")

    def test_claim_status_write_may_change_annotations_but_not_spec(self):
        old = self.api.create(PVC, claim("crud-pvc-status"))
        body = dict(old, status={"phase": "Pending", "conditions": [{"type": "Resizing",
                                                                     "status": "True"}]})
        body["metadata"] = dict(old["metadata"], annotations={"a.io/x": "1"})
        body["spec"] = dict(old["spec"], volumeName="elsewhere")
        got = self.api.update(PVC + "/crud-pvc-status/status", body)
        self.assertEqual(got["metadata"]["annotations"], {"a.io/x": "1"})
        self.assertNotIn("volumeName", got["spec"])
        self.assertEqual(got["status"]["conditions"][0]["type"], "Resizing")

    def test_workload_status_write_changes_status_only(self):
        deploy = "/apis/apps/v1/namespaces/default/deployments"
        old = self.api.create(deploy, {"metadata": {"name": "crud-dep-status"}, "spec": {
            "selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        body = dict(old, status={"replicas": 3})
        body["metadata"] = dict(old["metadata"], labels={"x": "y"})
        got = self.api.update(deploy + "/crud-dep-status/status", body)
        self.assertEqual(got["status"], {"replicas": 3})
        self.assertNotIn("labels", got["metadata"])

    def test_pv_status_update_needs_resource_version(self):
        old = self.api.create(PV, flex_pv("crud-status-rv"))
        body = dict(old, status={"phase": "Available"})
        body["metadata"] = dict(old["metadata"])
        del body["metadata"]["resourceVersion"]
        e = self.assertApiError(422, self.api.update, PV + "/crud-status-rv/status", body)
        self.assertEqual(e["details"]["causes"][0]["field"], "resourceVersion")

    def test_dry_run_validates_but_stores_nothing(self):
        got = self.api.create(PV, flex_pv("crud-dry"), dryRun="All")
        self.assertNotIn("resourceVersion", got["metadata"])
        self.assertApiError(404, self.api.get, PV + "/crud-dry")
        self.assertApiError(422, self.api.create, PV, flex_pv("Bad"), dryRun="All")
        live = self.api.create(PV, flex_pv("crud-dry2"))
        self.api.patch(PV + "/crud-dry2", {"metadata": {"labels": {"d": "1"}}}, dryRun="All")
        code, _ = self.api.delete(PV + "/crud-dry2", dryRun="All")
        now = self.api.get(PV + "/crud-dry2")
        self.assertEqual(now["metadata"]["resourceVersion"], live["metadata"]["resourceVersion"])
        self.assertNotIn("labels", now["metadata"])
        self.assertNotIn("deletionTimestamp", now["metadata"])
        self.assertApiError(400, self.api.create, PV, flex_pv("crud-dry3"), dryRun="Some")

    def test_bodies_of_the_wrong_shape_are_400_not_500(self):
        for body in ({"metadata": {"name": "crud-shape", "labels": ["a"]}},
                     {"metadata": {"name": 7}},
                     dict(flex_pv("crud-shape"), spec=["not", "an", "object"]),
                     dict(flex_pv("crud-shape"), spec={"capacity": "1Gi"})):
            e = self.assertApiError(400, self.api.create, PV, body)
            self.assertIn("cannot be handled as a PersistentVolume", e["message"])

    def test_unknown_fields_are_dropped_with_a_warning_or_refused_when_strict(self):
        body = flex_pv("crud-unknown")
        body["spec"]["claimref"] = {"name": "typo"}
        body["metadata"]["labelz"] = {"a": "b"}
        body["extra"] = 1
        code, got = self.api.request("POST", PV, body)
        self.assertEqual(code, 201)
        self.assertNotIn("claimref", got["spec"])
        self.assertNotIn("labelz", got["metadata"])
        self.assertNotIn("extra", got)
        warnings = self.api.last_headers.get_all("Warning")
        self.assertIn('299 - "unknown field \\"spec.claimref\\""', warnings)
        body["metadata"]["name"] = "crud-unknown2"
        e = self.assertApiError(400, self.api.create, PV, body, fieldValidation="Strict")
        self.assertIn('strict decoding error: unknown field "extra"', e["message"])

    def test_namespaced_create_needs_an_existing_namespace(self):
        e = self.assertApiError(404, self.api.create,
                                ns_path("nowhere", "persistentvolumeclaims"), claim("c"))
        self.assertEqual(e["message"], 'namespaces "nowhere" not found')

    def test_namespace_in_body_must_match_url(self):
        body = claim("crud-nsm")
        body["metadata"]["namespace"] = "kube-system"
        self.assertApiError(400, self.api.create, PVC, body)

    def test_unserved_things_answer_404_405_415(self):
        self.assertApiError(404, self.api.get, "/api/v1/services")
        self.assertApiError(404, self.api.get, "/apis/batch/v1/jobs")
        self.assertApiError(404, self.api.get, PV + "/x/scale")
        self.assertApiError(405, self.api.create, PV + "/x", flex_pv("x"))
        self.assertApiError(415, self.api.request, "POST", PV, raw=b"kind: PersistentVolume",
                            content_type="application/yaml")
        self.assertApiError(415, self.api.request, "PATCH", PV + "/x", raw=b"{}",
                            content_type="application/apply-patch+yaml")
        self.assertApiError(400, self.api.request, "POST", PV, raw=b"{not json")

    def test_default_namespaces_exist_and_cannot_be_deleted(self):
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.assertEqual(self.api.get("/api/v1/namespaces/" + name)["status"]["phase"],
                             "Active")
        e = self.assertApiError(403, self.api.delete, "/api/v1/namespaces/default")
        self.assertIn("this namespace may not be deleted", e["message"])


class CustomResourceTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False, "snapshot_crds": True}
    VS = ns_path("default", "volumesnapshots", group="snapshot.storage.k8s.io/v1")

    def snapshot(self, name):
        return {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                "metadata": {"name": name},
                "spec": {"source": {"persistentVolumeClaimName": "data"}}}

    def test_custom_resource_update_requires_resource_version(self):
        self.api.create(self.VS, self.snapshot("snap-rv"))
        e = self.assertApiError(422, self.api.update, self.VS + "/snap-rv",
                                self.snapshot("snap-rv"))
        self.assertIn("must be specified for an update", e["message"])

    def test_strategic_merge_patch_is_415_for_custom_resources(self):
        self.api.create(self.VS, self.snapshot("snap-smp"))
        self.assertApiError(415, self.api.patch, self.VS + "/snap-smp",
                            {"metadata": {"labels": {"a": "b"}}}, "strategic")
        got = self.api.patch(self.VS + "/snap-smp", {"metadata": {"labels": {"a": "b"}}})
        self.assertEqual(got["metadata"]["labels"], {"a": "b"})

    def test_snapshot_status_fields_are_typed_like_the_crd_schema(self):
        self.api.create(self.VS, self.snapshot("snap-status"))
        snap = self.api.get(self.VS + "/snap-status")
        snap["status"] = {"readyToUse": "yes"}
        e = self.assertApiError(422, self.api.update, self.VS + "/snap-status/status", snap)
        self.assertIn("status.readyToUse in body must be of type boolean", e["message"])
        snap["status"] = {"readyToUse": True, "restoreSize": "1Gi",
                          "creationTime": "2024-01-01T00:00:00Z", "unknown": 1}
        got = self.api.update(self.VS + "/snap-status/status", snap)
        self.assertEqual(got["status"], {"readyToUse": True, "restoreSize": "1Gi",
                                         "creationTime": "2024-01-01T00:00:00Z"})

    def test_snapshot_source_is_exactly_one_and_immutable(self):
        bad = self.snapshot("snap-bad")
        bad["spec"]["source"]["volumeSnapshotContentName"] = "c"
        self.assertApiError(422, self.api.create, self.VS, bad)
        self.api.create(self.VS, self.snapshot("snap-imm"))
        self.assertApiError(422, self.api.patch, self.VS + "/snap-imm",
                            {"spec": {"source": {"persistentVolumeClaimName": "other"}}})


if __name__ == "__main__":
    unittest.main()
