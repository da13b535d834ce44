"""Issue 25, test 5: `flexcsi migrate apply --all --scale-down --parallel` moves workloads whose
pods run on both nodes from FlexVolume to CSI, is killed with -9 once on the way, and resumes.

Storage: csi-loopback's network-block-storage imitation (`--shared-store`, a store of this
module's own, shape `migrated`). Before the move, the FlexVolume path of
multinode_move_tests.py: kube-controller-manager attaches through a control-plane bridge and its
csi-loopback, each node's kubelet mounts through that node's bridge and csi-loopback. After it,
the same drivers behind kubelet's own CSI plugin: csi-node-driver-registrar on each node (in the
node's namespaces, against its kubelet) registers the node's csi-loopback, and one csi-attacher
turns VolumeAttachments into ControllerPublish calls of the control-plane csi-loopback.

Workloads: a StatefulSet of 2 replicas spread over both nodes (required pod anti-affinity) and a
Deployment pinned to the second node, each pod writing a payload once to its RWO FlexVolume PV.

Imported by multinode_suite_test.py: one cluster for the whole suite."""
import json
import os
import random
import time
import unittest

import clustertest
from clustertest import apply, exec_in, get, wait_for
import kubelet_csi
import migrate_run
from multinode_move_tests import loop_devices_of
from node_plugins import NodePlugins, flex_driver

NS = "migrate-nodes"
SHAPE = "migrated"
# kubelet's plugin registration socket is <kubelet root>/plugins_registry/<driver>-reg.sock,
# and a node's kubelet root here is long: a longer name passes the 107 bytes of a socket path
CSI_DRIVER = "mig.flexcsi.io"
STATEFULSET, DEPLOYMENT = "spread", "pinned"
PAYLOAD = 2 << 20
# Where the first run kills itself (FLEXCSI_MIGRATE_CRASH_AFTER; FLEXCSI_FAULT_SEED picks one):
# every point is after the scale-down was written, so that the resume must not scale again.
CRASH_POINTS = ["group-scaling-down+", "group-moving", "releasing", "binding",
                "restoring-replicas+", "group-restoring-replicas"]


def flex_volume(name, volume_id):
    """An RWO FlexVolume PV of the attachable shared-store driver, and its claim bound to it."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
             "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                      "claimRef": {"namespace": NS, "name": name},
                      "flexVolume": {"driver": flex_driver(SHAPE), "fsType": "ext4",
                                     "options": {"volumeID": volume_id}}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": name, "namespace": NS},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "volumeName": name, "resources": {"requests": {"storage": "64Mi"}}}}]


def pod_spec(app, claim=None):
    """Writes the payload once (a later pod finds the file and keeps it), then sleeps."""
    spec = {"hostNetwork": True, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": clustertest.BUSYBOX,
                            "imagePullPolicy": "Never",
                            "command": ["sh", "-c", "test -f /data/payload || head -c %d "
                                        "/dev/urandom > /data/payload; sync; sleep 3600"
                                        % PAYLOAD],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def workloads(pinned_node):
    spread = pod_spec(STATEFULSET)
    spread["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": STATEFULSET}},
            "topologyKey": "kubernetes.io/hostname"}]}}
    pinned = pod_spec(DEPLOYMENT, claim=DEPLOYMENT)
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": pinned_node}
    return [{"apiVersion": "apps/v1", "kind": "StatefulSet",
             "metadata": {"name": STATEFULSET, "namespace": NS},
             "spec": {"replicas": 2, "serviceName": STATEFULSET,
                      "podManagementPolicy": "Parallel",
                      "selector": {"matchLabels": {"app": STATEFULSET}}, "template": spread,
                      "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                          "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                          "resources": {"requests": {"storage": "64Mi"}}}}]}},
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": DEPLOYMENT, "namespace": NS},
             "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                      "selector": {"matchLabels": {"app": DEPLOYMENT}}, "template": pinned}}]


def ready_pods():
    """{pod name: (node, claim)} of the namespace's Ready pods that are not being deleted."""
    found = {}
    for pod in clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS)["items"]:
        if pod["metadata"].get("deletionTimestamp") or not any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in pod.get("status", {}).get("conditions", [])):
            continue
        claim = next(v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]
                     if "persistentVolumeClaim" in v)
        found[pod["metadata"]["name"]] = (pod["spec"]["nodeName"], claim)
    return found


def all_ready(count):
    pods = ready_pods()
    return pods if len(pods) == count else None


class MigrateAcrossNodesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = clustertest.CLUSTER
        began = time.monotonic()
        cls.store = os.path.join(c.dir, "migrate-store")
        os.makedirs(cls.store, exist_ok=True)
        specs = {SHAPE: {"args": ["--shared-store", cls.store], "attach": True,
                         "driver": CSI_DRIVER}}
        cls.control = NodePlugins(c, shapes=(SHAPE,), specs=specs, control_plane=True,
                                  name="flexcsi-migrate-controller")
        cls.on_node = {n.name: NodePlugins(c, shapes=(SHAPE,), specs=specs, node=n,
                                           name="flexcsi-migrate", plugin_dirs=(n.plugin_dir,))
                       for n in c.nodes}
        cls.sidecars = []
        try:
            for plugins in [cls.control, *cls.on_node.values()]:
                plugins.start()
            # the CSI side of the same drivers: kubelet's CSI plugin on each node, csi-attacher
            cls.sidecars = kubelet_csi.start(
                c, CSI_DRIVER, {n: cls.on_node[n.name].csi_socket(SHAPE) for n in c.nodes},
                cls.control.csi_socket(SHAPE), attacher_name="csi-attacher-migrate")
        except BaseException:
            cls.tearDownClass()  # unittest skips it when setUpClass fails
            raise
        cls.rules = migrate_run.write_rules(os.path.join(cls.control.dir, "rules.json"),
                                            flex_driver(SHAPE), CSI_DRIVER)
        apply([clustertest.namespace_object(NS)])
        print("\nmigrate across nodes: bridges, drivers and CSI sidecars up in %.1f s"
              % (time.monotonic() - began), flush=True)

    @classmethod
    def tearDownClass(cls):
        for proc in [*cls.sidecars, *cls.on_node.values(), cls.control]:
            proc.stop()

    def migrate(self, *args, crash_after=None):
        return migrate_run.migrate(self.control.flexcsi_bin, self.rules,
                                   clustertest.CLUSTER.kubeconfig, *args, crash_after=crash_after,
                                   journal=os.path.join(self.control.dir, "journal"))

    def volume_file(self, volume_id):
        return os.path.join(self.store, "volumes", volume_id + ".img")

    def test_parallel_apply_across_both_nodes_killed_and_resumed(self):
        c = clustertest.CLUSTER
        began = time.monotonic()
        nodes = [n.name for n in c.nodes]
        claims = ["data-%s-0" % STATEFULSET, "data-%s-1" % STATEFULSET, DEPLOYMENT]
        volume_ids, objects = {}, []
        for claim in claims:
            volume_ids[claim] = self.control.create_volume(SHAPE, claim, size="64Mi",
                                                           fs_type="ext4")
            objects += flex_volume(claim, volume_ids[claim])
        apply(objects)
        listed = wait_for("the claims to bind", lambda: clustertest.claims_bound(NS, claims), 60)
        uids = {claim: listed[claim]["metadata"]["uid"] for claim in claims}
        apply(workloads(pinned_node=nodes[1]))
        before = wait_for("3 pods on FlexVolume", lambda: all_ready(3), 180)
        print("\n3 pods Ready on their FlexVolume PVs after %.1f s" % (time.monotonic() - began),
              flush=True)
        self.assertEqual({node for node, _ in before.values()}, set(nodes),
                         "the pods do not run on both nodes: %s" % before)
        checksums = {claim: exec_in(NS, pod, "sha256sum", "/data/payload").split()[0]
                     for pod, (_, claim) in before.items()}
        for pod, (node, claim) in before.items():
            self.assertIn(volume_ids[claim],
                          json.dumps(self.on_node[node].records()["stagings"]),
                          "%s's volume is not staged by %s's bridge" % (pod, node))

        seen = len(c.audit_events())
        point = random.Random(os.environ.get("FLEXCSI_FAULT_SEED", "1")).choice(CRASH_POINTS)
        args = ("apply", "--all", "-n", NS, "--scale-down", "--parallel", "3")
        started = time.monotonic()
        crashed = self.migrate(*args, crash_after=point)
        self.assertEqual(crashed.returncode, -9, "killed after %s?\n%s%s"
                         % (point, crashed.stdout, crashed.stderr))
        resumed = self.migrate(*args)
        moved = time.monotonic() - started
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
        after = wait_for("3 pods back on CSI", lambda: all_ready(3), 180)
        back = time.monotonic() - started
        print("\nMEASURED migrate across 2 nodes (3 PVs, 2 workloads, killed after %s, resumed): "
              "%.1f s to exit 0, %.1f s to every pod Ready again" % (point, moved, back),
              flush=True)

        events = c.audit_events()[seen:]
        for resource, name, replicas in (("statefulsets", STATEFULSET, 2),
                                         ("deployments", DEPLOYMENT, 1)):
            written = migrate_run.scale_writes(events, resource, NS, name)
            print("%s/%s scale writes: %s" % (resource, name, written), flush=True)
            self.assertEqual(written, [("flexcsi", 0), ("flexcsi", replicas)],
                             "%s/%s was not scaled to 0 once and back once by flexcsi alone"
                             % (resource, name))

        self.assertEqual({node for node, _ in after.values()}, set(nodes),
                         "the pods do not run on both nodes again: %s" % after)
        for claim in claims:
            pv = get("pv", claim)
            self.assertEqual(pv["spec"]["csi"]["driver"], CSI_DRIVER, claim)
            self.assertEqual(pv["spec"]["csi"]["volumeHandle"], volume_ids[claim], claim)
            self.assertEqual(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain", claim)
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uids[claim], claim)
            self.assertEqual(get("pvc", claim, NS)["metadata"]["uid"], uids[claim], claim)
        attached = {va["spec"]["source"].get("persistentVolumeName"): va["spec"]["nodeName"]
                    for va in c.kubectl_json("get", "volumeattachments")["items"]
                    if va["spec"]["attacher"] == CSI_DRIVER
                    and va.get("status", {}).get("attached")}
        for pod, (node, claim) in after.items():
            self.assertEqual(exec_in(NS, pod, "sha256sum", "/data/payload").split()[0],
                             checksums[claim], "%s: %s's payload changed" % (pod, claim))
            self.assertEqual(attached.get(claim), node,
                             "csi-attacher did not attach %s to %s: %s" % (claim, node, attached))
            mounts = next(n for n in c.nodes if n.name == node).in_node(
                "cat", "/proc/self/mountinfo").stdout
            self.assertIn("kubernetes.io~csi/%s/mount" % claim, mounts,
                          "%s's volume is not mounted by kubelet's CSI plugin on %s" % (pod, node))
        self.assert_nothing_left_on_flexvolume(volume_ids)
        cleaning = time.monotonic()
        self.clean_up(claims, volume_ids)
        print("workloads, CSI attachments, claims and PVs gone in %.1f s"
              % (time.monotonic() - cleaning), flush=True)

    def assert_nothing_left_on_flexvolume(self, volume_ids):
        """No bridge record (control plane or node), no FlexVolume mount on any node, no node
        listing a FlexVolume of the driver as attached or in use; each volume's file bound to
        one loop device, its CSI staging's."""
        c = clustertest.CLUSTER
        for plugins in [self.control, *self.on_node.values()]:
            records = plugins.records()
            self.assertFalse(any(records[kind] for kind in
                                 ("attachments", "stagings", "publications")),
                             "%s's bridge keeps %s" % (plugins.node_name, records))
        for n in c.nodes:
            self.assertNotIn("flexcsi~" + SHAPE, n.in_node("cat", "/proc/self/mountinfo").stdout,
                             "a FlexVolume mount is left on " + n.name)
            status = get("node", n.name)["status"]
            listed = json.dumps([status.get("volumesAttached"), status.get("volumesInUse")])
            self.assertNotIn("flexvolume-" + flex_driver(SHAPE), listed, n.name)
        for claim, volume_id in volume_ids.items():
            devices = loop_devices_of(self.volume_file(volume_id))
            self.assertEqual(len(devices), 1, "%s: loop devices %s" % (claim, devices))

    def clean_up(self, claims, volume_ids):
        c = clustertest.CLUSTER
        c.kubectl("delete", "statefulset", STATEFULSET, "-n", NS)
        c.kubectl("delete", "deployment", DEPLOYMENT, "-n", NS)
        wait_for("the pods to be gone",
                 lambda: not c.kubectl_json("get", "pods", "-n", NS)["items"], 120)
        wait_for("csi-attacher to detach the volumes", lambda: not [
            va for va in c.kubectl_json("get", "volumeattachments")["items"]
            if va["spec"]["attacher"] == CSI_DRIVER], 120)
        c.kubectl("delete", "pvc", *claims, "-n", NS)
        c.kubectl("delete", "pv", *claims)
        for claim, volume_id in volume_ids.items():
            wait_for("no loop device of " + claim,
                     lambda: not loop_devices_of(self.volume_file(volume_id)), 60)

