"""The csi-attacher stand-in (--csi-attacher): a VolumeAttachment and the external-attacher
finalizer while a CSI PV is attached, the VolumeAttachment gone after detach, and the finalizer
kept on a live PV, removed only from a deleting one that nothing attaches."""
import unittest

from testlib import PV, ServerTestCase, claim, node, ns_path, pod

PVC = ns_path("default", "persistentvolumeclaims")
PODS = ns_path("default", "pods")
VA = "/apis/storage.k8s.io/v1/volumeattachments"
DRIVER = "lvm.csi.acme.io"
FINALIZER = "external-attacher/lvm-csi-acme-io"


def csi_pv(name):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "claimRef": {"namespace": "default", "name": name},
                     "csi": {"driver": DRIVER, "volumeHandle": "vol-" + name}}}


class CsiAttacherTest(ServerTestCase):
    SERVER_OPTIONS = {"csi_attacher": True,
                      "controller_delays": {"pod_termination": 0.1, "detach": 0.2}}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api.create("/api/v1/nodes", node("node-1"))
        cls.api.create("/apis/storage.k8s.io/v1/csidrivers",
                       {"metadata": {"name": DRIVER}, "spec": {"attachRequired": True}})

    def attachments(self, pv_name):
        return [va for va in self.api.get(VA)["items"]
                if va["spec"]["source"].get("persistentVolumeName") == pv_name]

    def test_attached_csi_pv_has_an_attachment_and_a_finalizer_until_deleted_detached(self):
        self.api.create(PV, csi_pv("att"))
        self.api.create(PVC, claim("att", volume_name="att"))
        self.api.create(PODS, pod("att-user", "att"))
        self.api.settle()
        vas = self.attachments("att")
        self.assertEqual(len(vas), 1)
        self.assertEqual((vas[0]["spec"]["attacher"], vas[0]["spec"]["nodeName"]),
                         (DRIVER, "node-1"))
        self.assertTrue(vas[0]["metadata"]["name"].startswith("csi-"))
        self.assertTrue(vas[0]["status"]["attached"])
        self.assertIn(FINALIZER, self.api.get(PV + "/att")["metadata"]["finalizers"])

        # Deleted while attached: stays Terminating, held by csi-attacher's finalizer (and
        # pv-protection, the PV being Bound).
        self.api.delete(PV + "/att")
        self.api.settle()
        self.assertIn(FINALIZER, self.api.get(PV + "/att")["metadata"]["finalizers"])

        self.api.delete(PODS + "/att-user")
        self.wait_for(lambda: not self.attachments("att"), what="the attachment to go")
        self.wait_for(lambda: FINALIZER not in self.api.get(PV + "/att")["metadata"]["finalizers"],
                      what="csi-attacher to let the deleting PV go")

    def test_finalizer_stays_on_a_live_pv_after_detach(self):
        self.api.create(PV, csi_pv("live"))
        self.api.create(PVC, claim("live", volume_name="live"))
        self.api.create(PODS, pod("live-user", "live"))
        self.api.settle()
        self.assertTrue(self.attachments("live"))
        self.api.delete(PODS + "/live-user")
        self.wait_for(lambda: not self.attachments("live"), what="the attachment to go")
        self.api.settle()
        self.assertIn(FINALIZER, self.api.get(PV + "/live")["metadata"]["finalizers"])


if __name__ == "__main__":
    unittest.main()
