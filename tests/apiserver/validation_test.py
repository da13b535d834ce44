"""422 Invalid and 403 Forbidden rules: PV source immutability and exactly-one-source, the
mount-options annotation, claim spec immutability and growth (PersistentVolumeClaimResize),
StorageClass immutability, DefaultStorageClass, pod and workload checks."""
import unittest

from testlib import PV, ServerTestCase, claim, flex_pv, ns_path, pod

PVC = ns_path("default", "persistentvolumeclaims")
SC = "/apis/storage.k8s.io/v1/storageclasses"


def causes(err):
    return [(c["field"], c["reason"]) for c in err["details"]["causes"]]


class PersistentVolumeValidationTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def test_every_source_is_immutable(self):
        sources = {
            "flexVolume": ({"driver": "a/b", "options": {"x": "1"}},
                           {"driver": "a/b", "options": {"x": "2"}}),
            "csi": ({"driver": "d", "volumeHandle": "h1"}, {"driver": "d", "volumeHandle": "h2"}),
            "nfs": ({"server": "s", "path": "/a"}, {"server": "s", "path": "/b"}),
            "awsElasticBlockStore": ({"volumeID": "v1"}, {"volumeID": "v2"}),
        }
        for source, (before, after) in sources.items():
            name = "val-src-" + source.lower()
            body = flex_pv(name)
            del body["spec"]["flexVolume"]
            body["spec"][source] = before
            self.api.create(PV, body)
            e = self.assertApiError(422, self.api.patch, PV + "/" + name, {"spec": {source: after}})
            self.assertEqual(causes(e), [("spec.persistentvolumesource", "FieldValueForbidden")])
            self.assertIn("spec.persistentvolumesource is immutable after creation", e["message"])
            # Swapping the source for another is refused the same way.
            e = self.assertApiError(422, self.api.patch, PV + "/" + name, {
                "spec": {source: None, "csi": {"driver": "x", "volumeHandle": "y"}}
                if source != "csi" else {"csi": None, "nfs": {"server": "s", "path": "/"}}})
            self.assertIn(("spec.persistentvolumesource", "FieldValueForbidden"), causes(e))

    def test_exactly_one_source(self):
        body = flex_pv("val-two")
        body["spec"]["csi"] = {"driver": "d", "volumeHandle": "h"}
        e = self.assertApiError(422, self.api.create, PV, body)
        self.assertEqual(causes(e), [("spec.csi", "FieldValueForbidden")])
        body = flex_pv("val-none")
        del body["spec"]["flexVolume"]
        e = self.assertApiError(422, self.api.create, PV, body)
        self.assertEqual(causes(e), [("spec", "FieldValueRequired")])

    def test_required_fields(self):
        body = flex_pv("val-req", driver="")
        del body["spec"]["capacity"]
        body["spec"]["accessModes"] = []
        e = self.assertApiError(422, self.api.create, PV, body)
        self.assertEqual(sorted(causes(e)), [("spec.accessModes", "FieldValueRequired"),
                                             ("spec.capacity", "FieldValueRequired"),
                                             ("spec.flexVolume.driver", "FieldValueRequired")])

    def test_in_tree_and_csi_sources_need_their_identifying_fields(self):
        cases = {"awsElasticBlockStore": ({}, "spec.awsElasticBlockStore.volumeID"),
                 "gcePersistentDisk": ({}, "spec.persistentDisk.pdName"),
                 "rbd": ({"image": "i"}, "spec.rbd.monitors"),
                 "csi": ({"driver": "Bad Name!", "volumeHandle": "h"}, "spec.csi.driver")}
        for source, (fields, field) in cases.items():
            body = flex_pv("val-req-" + source.lower())
            del body["spec"]["flexVolume"]
            body["spec"][source] = fields
            e = self.assertApiError(422, self.api.create, PV, body)
            self.assertEqual([c[0] for c in causes(e)], [field])

    def test_mount_options_annotation_refused_for_flexvolume_spec_field_accepted(self):
        body = flex_pv("val-mo-ann")
        body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "ro"}
        e = self.assertApiError(422, self.api.create, PV, body)
        self.assertIn("may not specify mount options for this volume type", e["message"])
        # The API server does not validate spec.mountOptions per source (kubelet refuses them
        # for FlexVolume at mount time).
        body = flex_pv("val-mo-spec", extra_spec={"mountOptions": ["ro"]})
        self.assertEqual(self.api.create(PV, body)["spec"]["mountOptions"], ["ro"])
        nfs = flex_pv("val-mo-nfs")
        del nfs["spec"]["flexVolume"]
        nfs["spec"]["nfs"] = {"server": "s", "path": "/"}
        nfs["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "hard"}
        self.api.create(PV, nfs)

    def test_reclaim_policy_and_claim_ref_may_change(self):
        self.api.create(PV, flex_pv("val-mut", reclaim="Delete"))
        got = self.api.patch(PV + "/val-mut", {"spec": {
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "c"}}})
        self.assertEqual(got["spec"]["persistentVolumeReclaimPolicy"], "Retain")
        self.assertApiError(422, self.api.patch, PV + "/val-mut",
                            {"spec": {"persistentVolumeReclaimPolicy": "Keep"}})


class ClaimValidationTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api.create(SC, {"metadata": {"name": "grow"}, "provisioner": "p.io",
                            "allowVolumeExpansion": True})
        cls.api.create(SC, {"metadata": {"name": "fixed"}, "provisioner": "p.io"})

    def bound_claim(self, name, storage_class):
        self.api.create(PVC, claim(name, storage_class=storage_class))
        got = self.api.get(PVC + "/" + name)
        got["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
        return self.api.update(PVC + "/" + name + "/status", got)

    def test_claim_spec_is_immutable_except_volume_name_once(self):
        self.api.create(PVC, claim("val-imm"))
        self.api.patch(PVC + "/val-imm", {"spec": {"volumeName": "pv-1"}})
        e = self.assertApiError(422, self.api.patch, PVC + "/val-imm",
                                {"spec": {"volumeName": "pv-2"}})
        self.assertIn("spec is immutable after creation", e["message"])
        for change in ({"accessModes": ["ReadWriteMany"]}, {"storageClassName": "x"},
                       {"volumeMode": "Block"}, {"selector": {"matchLabels": {"a": "b"}}}):
            self.assertApiError(422, self.api.patch, PVC + "/val-imm", {"spec": change})

    def test_request_may_grow_only_when_bound_and_class_allows(self):
        self.bound_claim("val-grow", "grow")
        got = self.api.patch(PVC + "/val-grow",
                             {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
        self.assertEqual(got["spec"]["resources"]["requests"]["storage"], "2Gi")
        e = self.assertApiError(422, self.api.patch, PVC + "/val-grow",
                                {"spec": {"resources": {"requests": {"storage": "1Gi"}}}})
        self.assertIn("field can not be less than previous value", e["message"])
        self.bound_claim("val-fixed", "fixed")
        e = self.assertApiError(403, self.api.patch, PVC + "/val-fixed",
                                {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
        self.assertEqual(e["reason"], "Forbidden")
        self.assertIn("only dynamically provisioned pvc can be resized", e["message"])
        self.api.create(PVC, claim("val-unbound", storage_class="grow"))
        self.assertApiError(422, self.api.patch, PVC + "/val-unbound",
                            {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})

    def test_storage_class_parameters_are_immutable(self):
        self.api.create(SC, {"metadata": {"name": "val-sc"}, "provisioner": "p.io",
                             "parameters": {"a": "1"}})
        got = self.api.get(SC + "/val-sc")
        self.assertEqual((got["reclaimPolicy"], got["volumeBindingMode"]), ("Delete", "Immediate"))
        self.assertApiError(422, self.api.patch, SC + "/val-sc", {"parameters": {"a": "2"}})
        self.assertApiError(422, self.api.patch, SC + "/val-sc", {"reclaimPolicy": "Retain"})
        self.assertEqual(self.api.patch(SC + "/val-sc", {"allowVolumeExpansion": True})
                         ["allowVolumeExpansion"], True)

    def test_default_storage_class_is_filled_in_on_create(self):
        self.api.create(SC, {"metadata": {"name": "val-default", "annotations": {
            "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "p.io"})
        body = claim("val-nodefault")
        del body["spec"]["storageClassName"]
        self.assertEqual(self.api.create(PVC, body)["spec"]["storageClassName"], "val-default")
        self.assertEqual(self.api.create(PVC, claim("val-empty"))["spec"]["storageClassName"], "")
        self.api.delete(SC + "/val-default")

    def test_data_source_is_mirrored_into_data_source_ref(self):
        body = claim("val-clone")
        body["spec"]["dataSource"] = {"kind": "PersistentVolumeClaim", "name": "origin"}
        got = self.api.create(PVC, body)
        self.assertEqual(got["spec"]["dataSourceRef"], {"kind": "PersistentVolumeClaim",
                                                        "name": "origin"})

    def test_claim_needs_modes_and_request(self):
        body = claim("val-claim")
        body["spec"]["accessModes"] = []
        del body["spec"]["resources"]
        e = self.assertApiError(422, self.api.create, PVC, body)
        self.assertEqual(sorted(causes(e)), [("spec.accessModes", "FieldValueRequired"),
                                             ("spec.resources[storage]", "FieldValueRequired")])


class PodAndWorkloadValidationTest(ServerTestCase):
    SERVER_OPTIONS = {"run_controllers": False}

    def test_pod_spec_is_immutable_but_node_name_can_be_set_once(self):
        pods = ns_path("default", "pods")
        self.api.create(pods, pod("val-pod"))
        self.api.patch(pods + "/val-pod", {"spec": {"nodeName": "n1"}})
        self.assertApiError(422, self.api.patch, pods + "/val-pod", {"spec": {"nodeName": "n2"}})
        self.assertApiError(422, self.api.patch, pods + "/val-pod",
                            {"spec": {"restartPolicy": "Never"}})
        got = self.api.patch(pods + "/val-pod", {"spec": {"containers": [
            {"name": "c", "image": "busybox:2"}]}}, "strategic")
        self.assertEqual(got["spec"]["containers"][0]["image"], "busybox:2")

    def test_events_live_in_their_objects_namespace(self):
        def event(ns, involved_ns):
            return {"metadata": {"name": "ev-%s-%s" % (ns, involved_ns or "none")},
                    "involvedObject": {"kind": "PersistentVolume", "name": "pv",
                                       "namespace": involved_ns}, "reason": "R", "message": "m"}
        self.api.create(ns_path("default", "events"), event("default", ""))
        self.assertApiError(422, self.api.create, ns_path("kube-system", "events"),
                            event("kube-system", ""))
        self.assertApiError(422, self.api.create, ns_path("default", "events"),
                            event("default", "kube-system"))

    def test_workload_selector_must_match_template_and_is_immutable(self):
        deploy = "/apis/apps/v1/namespaces/default/deployments"
        body = {"metadata": {"name": "val-dep"}, "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
        e = self.assertApiError(422, self.api.create, deploy, body)
        self.assertIn("`selector` does not match template `labels`", e["message"])
        body["spec"]["template"]["metadata"]["labels"] = {"app": "a", "x": "y"}
        self.assertEqual(self.api.create(deploy, body)["spec"]["replicas"], 1)
        self.assertApiError(422, self.api.patch, deploy + "/val-dep", {"spec": {
            "selector": {"matchLabels": {"app": "a", "x": "y"}}}})


if __name__ == "__main__":
    unittest.main()


class CsiNodeValidationTest(ServerTestCase):
    """Found on the real API server (tests/cluster/controller_suite_test.py): a CSINode driver
    entry is immutable as a whole; entries may only be added and removed."""
    SERVER_OPTIONS = {"run_controllers": False}
    CSINODES = "/apis/storage.k8s.io/v1/csinodes"

    def test_a_driver_entry_is_immutable_but_may_be_removed_and_added_again(self):
        entry = {"name": "d.csi.io", "nodeID": "n1", "topologyKeys": ["k"]}
        self.api.create(self.CSINODES, {"metadata": {"name": "node-1"},
                                        "spec": {"drivers": [entry]}})
        current = self.api.get(self.CSINODES + "/node-1")
        current["spec"]["drivers"] = [dict(entry, nodeID="n2")]
        e = self.assertApiError(422, self.api.update, self.CSINODES + "/node-1", current)
        self.assertEqual(causes(e), [("CSINodeDriver", "FieldValueInvalid")])
        self.assertIn("field is immutable", e["message"])
        current["spec"]["drivers"] = []
        current = self.api.update(self.CSINODES + "/node-1", current)
        current["spec"]["drivers"] = [dict(entry, nodeID="n2")]
        self.assertEqual(self.api.update(self.CSINODES + "/node-1",
                                         current)["spec"]["drivers"][0]["nodeID"], "n2")
