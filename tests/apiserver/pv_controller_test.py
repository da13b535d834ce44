"""The PV controller stand-in: binding of both halves with the controller's annotations,
pre-binding from either side, Released/Lost/re-binding, reclaim (never a storage delete unless
the real controller would), provisioning annotations, WaitForFirstConsumer through the
scheduler, and the protection controllers."""
import unittest

from testlib import PV, ServerTestCase, claim, flex_pv, node, ns_path, pod

PVC = ns_path("default", "persistentvolumeclaims")
PODS = ns_path("default", "pods")
SC = "/apis/storage.k8s.io/v1/storageclasses"


class PersistentVolumeControllerTest(ServerTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api.create("/api/v1/nodes", node("node-1", {"topology.example/zone": "a"}))

    def pv(self, name):
        return self.api.get(PV + "/" + name)

    def pvc(self, name):
        return self.api.get(PVC + "/" + name)

    def storage_deletes(self):
        return [e for e in self.api.audit() if e["verb"] == "storage-delete"]

    def test_controller_binds_both_halves_with_annotations(self):
        self.api.create(PV, flex_pv("pvc-bind-pv", size="5Gi", storage_class="manual"))
        self.api.create(PVC, claim("bind", size="2Gi", storage_class="manual"))
        self.api.settle()
        c, v = self.pvc("bind"), self.pv("pvc-bind-pv")
        self.assertEqual(c["spec"]["volumeName"], "pvc-bind-pv")
        self.assertEqual(c["status"], {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                                       "capacity": {"storage": "5Gi"}})
        self.assertEqual(c["metadata"]["annotations"],
                         {"pv.kubernetes.io/bind-completed": "yes",
                          "pv.kubernetes.io/bound-by-controller": "yes"})
        self.assertEqual(v["status"]["phase"], "Bound")
        self.assertEqual(v["metadata"]["annotations"],
                         {"pv.kubernetes.io/bound-by-controller": "yes"})
        ref = v["spec"]["claimRef"]
        self.assertEqual((ref["namespace"], ref["name"], ref["uid"]),
                         ("default", "bind", c["metadata"]["uid"]))

    def test_smallest_fitting_volume_of_the_same_class_wins(self):
        for name, size, sc in (("fit-big", "10Gi", "fit"), ("fit-small", "3Gi", "fit"),
                               ("fit-tiny", "1Gi", "fit"), ("fit-other", "3Gi", "other")):
            self.api.create(PV, flex_pv(name, size=size, storage_class=sc))
        # As the real controller does, it matches only PVs it has already made Available;
        # a claim created before that may bind whichever it had seen.
        self.api.settle()
        self.api.create(PVC, claim("fit", size="2Gi", storage_class="fit"))
        self.api.settle()
        self.assertEqual(self.pvc("fit")["spec"]["volumeName"], "fit-small")
        self.assertEqual(self.pv("fit-big")["status"]["phase"], "Available")

    def test_pv_prebound_by_claim_ref_waits_for_its_claim(self):
        self.api.create(PV, flex_pv("pre-pv", claim_ref={"namespace": "default",
                                                           "name": "pre"}))
        self.api.settle()
        self.assertEqual(self.pv("pre-pv")["status"]["phase"], "Available")
        self.api.create(PVC, claim("pre", storage_class="nomatch"))  # class is not checked
        self.api.settle()
        c = self.pvc("pre")
        self.assertEqual((c["spec"]["volumeName"], c["status"]["phase"]), ("pre-pv", "Bound"))
        self.assertNotIn("pv.kubernetes.io/bound-by-controller",
                         self.pv("pre-pv")["metadata"].get("annotations") or {})

    def test_claim_naming_a_volume_waits_for_it(self):
        self.api.create(PVC, claim("named", volume_name="named-pv"))
        self.api.settle()
        self.assertEqual(self.pvc("named")["status"]["phase"], "Pending")
        self.api.create(PV, flex_pv("named-pv"))
        self.api.settle()
        self.assertEqual(self.pvc("named")["status"]["phase"], "Bound")
        self.assertEqual(self.pvc("named")["metadata"]["annotations"],
                         {"pv.kubernetes.io/bind-completed": "yes"})

    def test_deleted_claim_releases_a_retained_volume_and_keeps_storage(self):
        self.api.create(PV, flex_pv("keep-pv", reclaim="Retain", storage_class="keep"))
        self.api.create(PVC, claim("keep", storage_class="keep"))
        self.api.settle()
        self.api.delete(PVC + "/keep")
        self.api.settle()
        self.assertApiError(404, self.api.get, PVC + "/keep")
        self.assertEqual(self.pv("keep-pv")["status"]["phase"], "Released")
        self.assertFalse([e for e in self.storage_deletes() if e["name"] == "keep-pv"])

    def test_claim_ref_with_another_uid_is_released(self):
        self.api.create(PV, flex_pv("uid-pv", claim_ref={"namespace": "default", "name": "uid",
                                                           "uid": "0000-gone"}))
        self.api.create(PVC, claim("uid", storage_class="uid-x"))
        self.api.settle()
        self.assertEqual(self.pv("uid-pv")["status"]["phase"], "Released")
        self.assertEqual(self.pvc("uid")["status"]["phase"], "Pending")

    def test_delete_policy_in_tree_deletes_storage_flex_fails_external_waits(self):
        def make(name, source, annotations=None):
            body = flex_pv(name + "-pv", reclaim="Delete", storage_class=name)
            if source:
                del body["spec"]["flexVolume"]
                body["spec"].update(source)
            if annotations:
                body["metadata"]["annotations"] = annotations
            self.api.create(PV, body)
            self.api.create(PVC, claim(name, storage_class=name))
        make("rd-ebs", {"awsElasticBlockStore": {"volumeID": "vol-1"}})
        make("rd-flex", None)
        make("rd-ext", {"csi": {"driver": "ext.csi", "volumeHandle": "h"}},
             {"pv.kubernetes.io/provisioned-by": "ext.csi"})
        make("rd-csi", {"csi": {"driver": "ext.csi", "volumeHandle": "h2"}})
        self.api.settle()
        for name in ("rd-ebs", "rd-flex", "rd-ext", "rd-csi"):
            self.assertEqual(self.pvc(name)["status"]["phase"], "Bound")
            self.api.delete(PVC + "/" + name)
        self.api.settle()
        self.assertApiError(404, self.api.get, PV + "/rd-ebs-pv")
        deletes = [e["name"] for e in self.storage_deletes()]
        self.assertEqual([n for n in deletes if n.startswith("rd-")], ["rd-ebs-pv"])
        flex = self.pv("rd-flex-pv")
        self.assertEqual(flex["status"]["phase"], "Failed")
        self.assertIn("no deletable volume plugin matched", flex["status"]["message"])
        self.assertEqual(self.pv("rd-ext-pv")["status"]["phase"], "Released")
        self.assertEqual(self.pv("rd-csi-pv")["status"]["phase"], "Failed")

    def test_claim_whose_volume_is_deleted_is_lost_then_rebinds_to_a_recreated_volume(self):
        self.api.create(PV, flex_pv("lost-pv", storage_class="lost"))
        self.api.create(PVC, claim("lost", storage_class="lost"))
        self.api.settle()
        uid = self.pvc("lost")["metadata"]["uid"]
        self.api.delete(PV + "/lost-pv")
        self.api.settle()
        self.assertEqual(self.pv("lost-pv")["status"]["phase"], "Bound")  # pv-protection
        self.api.patch(PV + "/lost-pv", {"metadata": {"finalizers": None}})
        self.api.settle()
        c = self.pvc("lost")
        self.assertEqual(c["status"], {"phase": "Lost"})
        self.assertEqual(c["spec"]["volumeName"], "lost-pv")
        events = self.api.get(ns_path("default", "events"),
                              fieldSelector="involvedObject.name=lost")["items"]
        self.assertIn("ClaimLost", [e["reason"] for e in events])
        # The new twin names the claim with its uid: Lost -> Bound, same claim object.
        body = flex_pv("lost-pv", storage_class="lost", driver="other/driver",
                       claim_ref={"namespace": "default", "name": "lost", "uid": uid})
        self.api.create(PV, body)
        self.api.settle()
        c = self.pvc("lost")
        self.assertEqual((c["metadata"]["uid"], c["status"]["phase"]), (uid, "Bound"))
        self.assertEqual(self.pv("lost-pv")["status"]["phase"], "Bound")

    def test_recreated_volume_without_claim_uid_leaves_the_claim_lost(self):
        self.api.create(PV, flex_pv("lost2-pv", storage_class="lost2"))
        self.api.create(PVC, claim("lost2", storage_class="lost2"))
        self.api.settle()
        self.api.delete(PV + "/lost2-pv")
        self.api.patch(PV + "/lost2-pv", {"metadata": {"finalizers": None}})
        self.api.create(PV, flex_pv("lost2-pv", storage_class="lost2",
                                    claim_ref={"namespace": "default", "name": "lost2"}))
        self.api.settle()
        self.assertEqual(self.pvc("lost2")["status"]["phase"], "Lost")

    def test_storage_class_provisioner_annotations_on_pending_claims(self):
        self.api.create(SC, {"metadata": {"name": "prov"}, "provisioner": "flexcsi.io/prov"})
        self.api.create(PVC, claim("prov", storage_class="prov"))
        self.api.settle()
        ann = self.pvc("prov")["metadata"]["annotations"]
        self.assertEqual(ann["volume.kubernetes.io/storage-provisioner"], "flexcsi.io/prov")
        self.assertEqual(ann["volume.beta.kubernetes.io/storage-provisioner"], "flexcsi.io/prov")
        self.assertEqual(self.pvc("prov")["status"]["phase"], "Pending")
        # The external provisioner's PV (claimRef with uid) is bound by the controller.
        uid = self.pvc("prov")["metadata"]["uid"]
        body = flex_pv("pvc-" + uid, reclaim="Delete", storage_class="prov",
                       claim_ref={"namespace": "default", "name": "prov", "uid": uid})
        body["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "flexcsi.io/prov"}
        self.api.create(PV, body)
        self.api.settle()
        self.assertEqual(self.pvc("prov")["spec"]["volumeName"], "pvc-" + uid)
        self.api.delete(PVC + "/prov")
        self.api.settle()
        # Released, left to its provisioner: the PV controller never touches the storage.
        self.assertEqual(self.pv("pvc-" + uid)["status"]["phase"], "Released")

    def test_wait_for_first_consumer_gets_selected_node_from_the_scheduler(self):
        self.api.create(SC, {"metadata": {"name": "wffc"}, "provisioner": "flexcsi.io/wffc",
                             "volumeBindingMode": "WaitForFirstConsumer"})
        self.api.create(PVC, claim("wffc", storage_class="wffc"))
        self.api.settle()
        ann = self.pvc("wffc")["metadata"].get("annotations") or {}
        self.assertNotIn("volume.kubernetes.io/selected-node", ann)
        self.assertNotIn("volume.kubernetes.io/storage-provisioner", ann)
        self.api.create(PODS, pod("wffc-user", claim_name="wffc"))
        self.api.settle()
        ann = self.pvc("wffc")["metadata"]["annotations"]
        self.assertEqual(ann["volume.kubernetes.io/selected-node"], "node-1")
        self.assertEqual(ann["volume.kubernetes.io/storage-provisioner"], "flexcsi.io/wffc")
        p = self.api.get(PODS + "/wffc-user")
        self.assertNotIn("nodeName", p["spec"])  # waits for the claim to bind
        uid = self.pvc("wffc")["metadata"]["uid"]
        self.api.create(PV, flex_pv("pvc-" + uid, storage_class="wffc",
                                    claim_ref={"namespace": "default", "name": "wffc",
                                               "uid": uid}))
        self.api.settle()
        p = self.api.get(PODS + "/wffc-user")
        self.assertEqual((p["spec"]["nodeName"], p["status"]["phase"]), ("node-1", "Running"))

    def test_pvc_protection_holds_a_claim_while_a_scheduled_pod_uses_it(self):
        self.api.create(PV, flex_pv("prot-pv", storage_class="prot"))
        self.api.create(PVC, claim("prot", storage_class="prot"))
        self.api.create(PODS, pod("prot-user", claim_name="prot", node="node-1"))
        self.api.settle()
        self.api.delete(PVC + "/prot")
        self.api.settle()
        c = self.pvc("prot")
        self.assertIn("deletionTimestamp", c["metadata"])
        self.assertEqual(c["metadata"]["finalizers"], ["kubernetes.io/pvc-protection"])
        self.api.delete(PODS + "/prot-user")
        self.api.settle()
        self.assertApiError(404, self.api.get, PVC + "/prot")
        self.assertEqual(self.pv("prot-pv")["status"]["phase"], "Released")

    def test_pv_protection_holds_a_bound_volume_and_is_readded_if_removed(self):
        self.api.create(PV, flex_pv("pvprot-pv", storage_class="pvprot"))
        self.api.patch(PV + "/pvprot-pv", {"metadata": {"finalizers": None}})
        self.api.settle()
        self.assertEqual(self.pv("pvprot-pv")["metadata"]["finalizers"],
                         ["kubernetes.io/pv-protection"])
        self.api.create(PVC, claim("pvprot", storage_class="pvprot"))
        self.api.settle()
        self.api.delete(PV + "/pvprot-pv")
        self.api.settle()
        self.assertEqual(self.pv("pvprot-pv")["status"]["phase"], "Bound")
        self.api.delete(PVC + "/pvprot")
        self.api.settle()
        self.assertApiError(404, self.api.get, PV + "/pvprot-pv")

    def test_paused_controllers_bind_nothing(self):
        self.api.request("POST", "/_fake/pause-controllers",
                         {"controllers": ["persistent-volume-binder"]})
        try:
            self.api.create(PV, flex_pv("pause-pv", storage_class="pause"))
            self.api.create(PVC, claim("pause", storage_class="pause"))
            self.api.settle()
            self.assertEqual(self.pvc("pause")["status"]["phase"], "Pending")
        finally:
            self.api.request("POST", "/_fake/resume-controllers")
        self.api.settle()
        self.assertEqual(self.pvc("pause")["status"]["phase"], "Bound")


if __name__ == "__main__":
    unittest.main()
