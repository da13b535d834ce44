"""Workloads and nodes: Deployment -> ReplicaSet -> pods on node-1, scale to zero through the
scale subresource with pods that take time to terminate, volumes attached while used and
detached a little after, StatefulSet claims and ordinals, the expand controller, and GC."""
import unittest

from testlib import PV, ServerTestCase, claim, flex_pv, node, ns_path

PVC = ns_path("default", "persistentvolumeclaims")
PODS = ns_path("default", "pods")
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
RS = "/apis/apps/v1/namespaces/default/replicasets"
STS = "/apis/apps/v1/namespaces/default/statefulsets"
SC = "/apis/storage.k8s.io/v1/storageclasses"


def template(app, claim_name=None):
    spec = {"containers": [{"name": "app", "image": "busybox"}]}
    if claim_name:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


class WorkloadsTest(ServerTestCase):
    SERVER_OPTIONS = {"controller_delays": {"pod_termination": 0.3, "detach": 0.4}}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api.create("/api/v1/nodes", node("node-0"))
        cls.api.create("/api/v1/nodes", node("node-1"))

    def pods(self, selector):
        return self.api.get(PODS, labelSelector=selector)["items"]

    def test_deployment_scale_to_zero_waits_for_pods_and_detach_then_restores(self):
        self.api.create(PV, flex_pv("web-pv", storage_class="web"))
        self.api.create(PVC, claim("web", storage_class="web"))
        self.api.create(DEPLOY, {"metadata": {"name": "web"}, "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": template("web", "web")}})
        self.api.settle()
        pods = self.pods("app=web")
        self.assertEqual(len(pods), 2)
        for p in pods:
            self.assertEqual((p["spec"]["nodeName"], p["status"]["phase"]), ("node-1", "Running"))
            ref = p["metadata"]["ownerReferences"][0]
            self.assertEqual((ref["kind"], ref["controller"]), ("ReplicaSet", True))
        rs = self.api.get(RS, labelSelector="app=web")["items"][0]
        self.assertEqual(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment")
        self.assertEqual(self.api.get(DEPLOY + "/web")["status"]["readyReplicas"], 2)
        attached = self.api.get("/api/v1/nodes/node-1")["status"]
        self.assertEqual(attached["volumesAttached"],
                         [{"name": "flexvolume-flexcsi/loopback/web-pv", "devicePath": ""}])
        self.assertEqual(attached["volumesInUse"], ["flexvolume-flexcsi/loopback/web-pv"])

        seq = len(self.api.audit())
        self.api.patch(DEPLOY + "/web/scale", {"spec": {"replicas": 0}})
        self.wait_for(lambda: not self.pods("app=web"), what="pods gone")
        self.wait_for(lambda: not self.api.get("/api/v1/nodes/node-1")["status"]
                      .get("volumesAttached"), what="detach")
        # The audit log tells the order and timing, whatever the machine's load: the
        # ReplicaSet's deletes only mark the pods (graceful), the kubelet removes each one
        # --pod-termination-ms later, and the volume is detached --detach-ms after the last.
        entries = self.api.audit(since=seq)
        marks = {e["name"]: e["time"] for e in entries if e["resource"] == "pods" and
                 e["verb"] == "delete" and e["user"].endswith("replicaset-controller")}
        finals = {e["name"]: e["time"] for e in entries if e["resource"] == "pods" and
                  e["verb"] == "delete" and e["user"] == "system:node:kubelet"}
        self.assertEqual(sorted(marks), sorted(finals))
        self.assertEqual(len(marks), 2)
        for name in marks:
            self.assertGreaterEqual(finals[name] - marks[name], 0.3)
        detached = [e["time"] for e in entries if e["resource"] == "nodes" and
                    e["user"].endswith("attachdetach-controller") and
                    not (e["object"].get("status") or {}).get("volumesAttached")]
        self.assertGreaterEqual(detached[0] - max(finals.values()), 0.4)
        rs_status = [e["object"]["status"].get("replicas") for e in entries
                     if e["resource"] == "replicasets" and e["subresource"] == "status"]
        self.assertEqual(rs_status[0], 0)  # status.replicas dropped before pods were gone
        self.api.patch(DEPLOY + "/web/scale", {"spec": {"replicas": 2}})
        self.api.settle()
        self.assertEqual(len([p for p in self.pods("app=web")
                              if p["status"]["phase"] == "Running"]), 2)

    def test_statefulset_creates_claims_then_ordered_pods_and_scales_down_from_the_top(self):
        self.api.create(SC, {"metadata": {"name": "sts"}, "provisioner": "flexcsi.io/sts"})
        self.api.create(STS, {"metadata": {"name": "db"}, "spec": {
            "replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": template("db"),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "sts",
                "resources": {"requests": {"storage": "1Gi"}}}}]}})
        self.api.settle()
        claims = self.api.get(PVC, labelSelector="app=db")["items"]
        self.assertEqual([c["metadata"]["name"] for c in claims], ["data-db-0"])
        # The claim is unbound (Immediate class, no provisioner here): db-0 is not scheduled
        # and, OrderedReady, db-1 is not created.
        self.assertEqual([(p["metadata"]["name"], p["spec"].get("nodeName"))
                          for p in self.pods("app=db")], [("db-0", None)])
        for i in range(2):
            c = self.api.get(PVC + "/data-db-%d" % i)
            uid = c["metadata"]["uid"]
            self.api.create(PV, flex_pv("pvc-" + uid, storage_class="sts", claim_ref={
                "namespace": "default", "name": c["metadata"]["name"], "uid": uid}))
            self.api.settle()
        pods = sorted(p["metadata"]["name"] for p in self.pods("app=db"))
        self.assertEqual(pods, ["db-0", "db-1"])
        vols = self.api.get(PODS + "/db-1")["spec"]["volumes"]
        self.assertEqual(vols, [{"name": "data", "persistentVolumeClaim": {
            "claimName": "data-db-1"}}])
        seq = len(self.api.audit())
        self.api.patch(STS + "/db/scale", {"spec": {"replicas": 0}})
        self.wait_for(lambda: not self.pods("app=db"), what="all gone")
        # OrderedReady: db-1 is marked, and gone, before db-0 is touched.
        deletes = [(e["name"], e["user"].rsplit(":", 1)[-1]) for e in self.api.audit(since=seq)
                   if e["resource"] == "pods" and e["verb"] == "delete" and e["code"] < 300]
        self.assertEqual(deletes, [("db-1", "statefulset-controller"), ("db-1", "kubelet"),
                                   ("db-0", "statefulset-controller"), ("db-0", "kubelet")])
        # Claims stay (retention policy Retain).
        self.assertEqual(len(self.api.get(PVC, labelSelector="app=db")["items"]), 2)

    def test_flexvolume_expansion_is_a_no_op_expander_step(self):
        self.api.create(SC, {"metadata": {"name": "grow"}, "provisioner": "flexcsi.io/g",
                             "allowVolumeExpansion": True})
        self.api.create(PV, flex_pv("grow-pv", size="1Gi", storage_class="grow",
                                    driver="flexcsi/loopback"))
        self.api.create(PVC, claim("grow", size="1Gi", storage_class="grow"))
        # Reserved for its claim (claimRef), as an administrator pre-binds: otherwise a pass
        # that runs between these creates may bind claim "grow" to it, the smallest fit too.
        csi = flex_pv("grow-csi-pv", size="1Gi", storage_class="grow",
                      claim_ref={"namespace": "default", "name": "grow-csi"})
        del csi["spec"]["flexVolume"]
        csi["spec"]["csi"] = {"driver": "loop.csi", "volumeHandle": "h"}
        self.api.create(PV, csi)
        self.api.create(PVC, claim("grow-csi", size="1Gi", storage_class="grow",
                                   volume_name="grow-csi-pv"))
        self.api.settle()
        for name in ("grow", "grow-csi"):
            self.api.patch(PVC + "/" + name,
                           {"spec": {"resources": {"requests": {"storage": "3Gi"}}}})
        self.api.settle()
        c, v = self.api.get(PVC + "/grow"), self.api.get(PV + "/grow-pv")
        self.assertEqual(v["spec"]["capacity"]["storage"], "3Gi")
        self.assertEqual(c["metadata"]["annotations"]["volume.kubernetes.io/storage-resizer"],
                         "flexcsi/loopback")
        self.assertEqual([x["type"] for x in c["status"]["conditions"]],
                         ["FileSystemResizePending"])
        self.assertEqual(c["status"]["capacity"]["storage"], "1Gi")  # kubelet's job
        self.assertEqual(
            v["metadata"]["annotations"]["volume.alpha.kubernetes.io/pre-resize-capacity"], "1Gi")
        # kubelet's expandfs finishes: status.capacity and conditions; the annotation goes.
        c["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                       "capacity": {"storage": "3Gi"}}
        self.api.update(PVC + "/grow/status", c)
        self.api.settle()
        self.assertNotIn("volume.alpha.kubernetes.io/pre-resize-capacity",
                         self.api.get(PV + "/grow-pv")["metadata"].get("annotations") or {})
        c, v = self.api.get(PVC + "/grow-csi"), self.api.get(PV + "/grow-csi-pv")
        self.assertEqual(v["spec"]["capacity"]["storage"], "1Gi")
        self.assertNotIn("volume.kubernetes.io/storage-resizer", c["metadata"]["annotations"])
        reasons = [e["reason"] for e in self.api.get(ns_path("default", "events"),
                                                     fieldSelector="involvedObject.name=grow-csi")
                   ["items"]]
        self.assertIn("ExternalExpanding", reasons)

    def test_deleting_a_deployment_garbage_collects_its_replicasets_and_pods(self):
        self.api.create(DEPLOY, {"metadata": {"name": "gc"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "gc"}},
            "template": template("gc")}})
        self.api.settle()
        self.assertEqual(len(self.pods("app=gc")), 1)
        self.api.delete(DEPLOY + "/gc")
        self.wait_for(lambda: not self.pods("app=gc") and
                      not self.api.get(RS, labelSelector="app=gc")["items"], what="gc")

    def test_orphan_deletion_keeps_the_pods_and_drops_their_owner_reference(self):
        self.api.create(RS, {"metadata": {"name": "orph"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "orph"}},
            "template": template("orph")}})
        self.api.settle()
        self.api.delete(RS + "/orph", {"propagationPolicy": "Orphan"})
        self.wait_for(lambda: not self.api.get(RS, labelSelector="app=orph")["items"] and
                      self.api.get(RS, fieldSelector="metadata.name=orph")["items"] == [],
                      what="replicaset gone")
        pods = self.pods("app=orph")
        self.assertEqual(len(pods), 1)
        self.assertNotIn("ownerReferences", pods[0]["metadata"])

    def test_csi_driver_without_attach_is_never_in_volumes_attached(self):
        self.api.create("/apis/storage.k8s.io/v1/csidrivers",
                        {"metadata": {"name": "noattach.csi"}, "spec": {"attachRequired": False}})
        pv = flex_pv("noattach-pv", storage_class="noattach")
        del pv["spec"]["flexVolume"]
        pv["spec"]["csi"] = {"driver": "noattach.csi", "volumeHandle": "h-noattach"}
        self.api.create(PV, pv)
        self.api.create(PVC, claim("noattach", storage_class="noattach"))
        self.api.create(PODS, {"metadata": {"name": "noattach-user"}, "spec": {
            "nodeName": "node-0", "containers": [{"name": "c", "image": "i"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "noattach"}}]}})
        self.api.settle()
        self.assertEqual(self.api.get(PODS + "/noattach-user")["status"]["phase"], "Running")
        self.assertNotIn("volumesAttached",
                         self.api.get("/api/v1/nodes/node-0").get("status") or {})

    def test_pods_owned_by_unserved_kinds_are_not_collected(self):
        body = {"metadata": {"name": "job-pod", "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "0000-job",
             "controller": True}]}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        self.api.create(PODS, body)
        self.api.settle()
        self.assertEqual(self.api.get(PODS + "/job-pod")["status"]["phase"], "Running")

    def test_namespace_deletion_empties_it_first(self):
        self.api.create("/api/v1/namespaces", {"metadata": {"name": "doomed"}})
        self.api.create(ns_path("doomed", "configmaps"), {"metadata": {"name": "cm"},
                                                          "data": {"a": "b"}})
        self.api.request("POST", "/_fake/pause-controllers",
                         {"controllers": ["namespace-controller"]})
        code, body = self.api.delete("/api/v1/namespaces/doomed")
        self.assertEqual((code, body["status"]["phase"]), (200, "Terminating"))
        e = self.assertApiError(403, self.api.create, ns_path("doomed", "configmaps"),
                                {"metadata": {"name": "late"}})
        self.assertIn("because it is being terminated", e["message"])
        self.api.request("POST", "/_fake/resume-controllers")
        self.wait_for(lambda: self.api.get("/api/v1/namespaces",
                                           fieldSelector="metadata.name=doomed")["items"] == [],
                      what="namespace gone")


if __name__ == "__main__":
    unittest.main()
