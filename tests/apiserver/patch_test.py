"""The three patch formats, patch preconditions, and the autoscaling/v1 scale subresource."""
import unittest

from testlib import PV, ServerTestCase, flex_pv, ns_path

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


class PatchTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def test_merge_patch_sets_and_null_deletes(self):
        self.api.create(PV, flex_pv("patch-merge"))
        got = self.api.patch(PV + "/patch-merge",
                             {"metadata": {"labels": {"a": "1", "b": "2"}}})
        got = self.api.patch(PV + "/patch-merge", {"metadata": {"labels": {"a": None}}})
        self.assertEqual(got["metadata"]["labels"], {"b": "2"})

    def test_merge_patch_replaces_lists_whole(self):
        self.api.create(PV, flex_pv("patch-list"))
        got = self.api.patch(PV + "/patch-list", {"metadata": {"finalizers": ["a.io/x"]}})
        self.assertEqual(got["metadata"]["finalizers"], ["a.io/x"])

    def test_strategic_merge_unions_finalizers_and_deletes_from_primitive_list(self):
        self.api.create(PV, flex_pv("patch-smp"))
        self.api.patch(PV + "/patch-smp", {"metadata": {"finalizers": ["a.io/one"]}}, "strategic")
        got = self.api.patch(PV + "/patch-smp", {"metadata": {"finalizers": ["a.io/two"]}},
                             "strategic")
        self.assertEqual(got["metadata"]["finalizers"],
                         ["kubernetes.io/pv-protection", "a.io/one", "a.io/two"])
        got = self.api.patch(PV + "/patch-smp", {"metadata": {
            "$deleteFromPrimitiveList/finalizers": ["a.io/one"]}}, "strategic")
        self.assertEqual(got["metadata"]["finalizers"],
                         ["kubernetes.io/pv-protection", "a.io/two"])

    def test_strategic_merge_of_containers_by_name(self):
        body = {"metadata": {"name": "patch-dep"}, "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": "p"}},
            "template": {"metadata": {"labels": {"app": "p"}}, "spec": {"containers": [
                {"name": "a", "image": "one"}, {"name": "b", "image": "two"}]}}}}
        self.api.create(DEPLOY, body)
        got = self.api.patch(DEPLOY + "/patch-dep", {"spec": {"replicas": 0, "template": {
            "spec": {"containers": [{"name": "b", "image": "three"}]}}}}, "strategic")
        self.assertEqual(got["spec"]["replicas"], 0)
        self.assertEqual([c["image"] for c in got["spec"]["template"]["spec"]["containers"]],
                         ["one", "three"])
        self.assertEqual(got["metadata"]["generation"], 2)

    def test_json_patch_test_operation_guards_the_write(self):
        pv = self.api.create(PV, flex_pv("patch-json"))
        rv = pv["metadata"]["resourceVersion"]
        got = self.api.patch(PV + "/patch-json", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec/persistentVolumeReclaimPolicy", "value": "Delete"}],
            "json")
        self.assertEqual(got["spec"]["persistentVolumeReclaimPolicy"], "Delete")
        e = self.assertApiError(422, self.api.patch, PV + "/patch-json", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec/persistentVolumeReclaimPolicy", "value": "Retain"}],
            "json")
        self.assertIn("test failed", e["message"])
        self.assertApiError(422, self.api.patch, PV + "/patch-json",
                            [{"op": "remove", "path": "/metadata/labels/none"}], "json")

    def test_patch_carrying_a_stale_resource_version_is_409(self):
        pv = self.api.create(PV, flex_pv("patch-rv"))
        self.api.patch(PV + "/patch-rv", {"metadata": {"labels": {"a": "1"}}})
        self.assertApiError(409, self.api.patch, PV + "/patch-rv", {"metadata": {
            "resourceVersion": pv["metadata"]["resourceVersion"], "labels": {"a": "2"}}})

    def test_patches_that_do_not_fit_the_object_are_refused_cleanly(self):
        self.api.create(PV, flex_pv("patch-odd"))
        self.assertApiError(422, self.api.patch, PV + "/patch-odd",
                            [{"op": "add", "path": "/spec/accessModes/x", "value": "a"}], "json")
        self.assertApiError(400, self.api.patch, PV + "/patch-odd", {"spec": {"capacity": 5}},
                            "strategic")
        self.assertApiError(400, self.api.patch, PV + "/patch-odd", ["not", "a", "map"])

    def test_patch_of_missing_object_is_404(self):
        self.assertApiError(404, self.api.patch, PV + "/patch-none", {"metadata": {}})

    def test_scale_subresource_reads_and_writes_replicas(self):
        body = {"metadata": {"name": "scale-dep"}, "spec": {
            "replicas": 3, "selector": {"matchLabels": {"app": "s"}},
            "template": {"metadata": {"labels": {"app": "s"}},
                         "spec": {"containers": [{"name": "a", "image": "x"}]}}}}
        self.api.create(DEPLOY, body)
        scale = self.api.get(DEPLOY + "/scale-dep/scale")
        self.assertEqual(scale["kind"], "Scale")
        self.assertEqual(scale["apiVersion"], "autoscaling/v1")
        self.assertEqual(scale["spec"]["replicas"], 3)
        self.assertEqual(scale["status"]["selector"], "app=s")
        scale["spec"]["replicas"] = 0
        self.assertEqual(self.api.update(DEPLOY + "/scale-dep/scale", scale)["spec"]["replicas"], 0)
        self.assertApiError(409, self.api.update, DEPLOY + "/scale-dep/scale", scale)
        got = self.api.patch(DEPLOY + "/scale-dep/scale", {"spec": {"replicas": 2}})
        self.assertEqual(got["spec"]["replicas"], 2)
        self.assertEqual(self.api.get(DEPLOY + "/scale-dep")["spec"]["replicas"], 2)
        self.assertApiError(422, self.api.patch, DEPLOY + "/scale-dep/scale",
                            {"spec": {"replicas": -1}})
        self.assertApiError(404, self.api.get, ns_path("default", "pods", "x") + "/scale")


if __name__ == "__main__":
    unittest.main()
