#!/usr/bin/env python3
"""flexcsi-controller and the bridge's node registration on a real Kubernetes v1.24.

The bridge registers csi-loopback on the node as kubelet's CSI plugin would (topology label,
csi.volume.kubernetes.io/nodeid annotation, CSINode entry), with exactly the RBAC rights of
deploy/kubernetes/base/node/rbac.yaml, through a service-account token. flexcsi-controller then
provisions FlexVolume PVs whose pods really run:

1. the registration, as the API server stores it
2. a WaitForFirstConsumer and an Immediate claim: each binds, its pod runs, writes and reads
3. `flexcsi uninstall-driver --config` removes the registration; a bridge restart writes it again
4. the driver restarted with another node id: the registration follows
5. a clone of a claim, the clone grown while its pod uses it (xfs)
6. a snapshot with the community snapshot-controller and the snapshot CRDs present, restored
   into a new claim whose pod reads the data
7. a claim that cannot be provisioned: its ProvisioningFailed tries come at backoff spacing
"""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import wait_pod_running  # noqa: E402
from cluster import Process  # noqa: E402
from node_plugins import NodePlugins, csi_driver, flex_driver  # noqa: E402

SHAPE = "default"
DRIVER = csi_driver(SHAPE)
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PLUGINS = None
CONTROLLER = None
SNAPSHOT_CONTROLLER = None


def setUpModule():
    global PLUGINS, CONTROLLER
    c = clustertest.start_cluster()
    apply(clustertest.namespace_object("flexcsi"))
    c.kubectl("apply", "-n", "flexcsi", "-f",
              os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
              "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
    PLUGINS = NodePlugins(c, shapes=[SHAPE],
                          registration_kubeconfig=clustertest.service_account_kubeconfig(c, "flexcsi",
                                                                             "flexcsi-node"))
    PLUGINS.start()
    # Real clusters that serve the snapshot CRDs run the community snapshot-controller.
    global SNAPSHOT_CONTROLLER
    crds = assets.crds_dir(c.bin)
    c.kubectl("apply", *sum((["-f", os.path.join(crds, f)] for f in sorted(os.listdir(crds))), []))
    wait_for("the snapshot CRDs to be served",
             lambda: c._kubectl_ok("get", "volumesnapshotclasses"), 60)
    SNAPSHOT_CONTROLLER = Process("snapshot-controller", [
        os.path.join(c.bin, "snapshot-controller"), "--kubeconfig", c.kubeconfig,
        "--leader-election=false"], os.path.join(c.logs, "snapshot-controller.log"))
    SNAPSHOT_CONTROLLER.start()
    CONTROLLER = Process("flexcsi-controller", [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", PLUGINS.config,
        "--journal", os.path.join(PLUGINS.dir, "controller-journal.db"),
        "--resync-period", "10s"], os.path.join(c.logs, "flexcsi-controller.log"))
    CONTROLLER.start()


def tearDownModule():
    clustertest.stop_cluster(CONTROLLER, SNAPSHOT_CONTROLLER, PLUGINS)


def registration():
    """(label value, node id in the annotation, CSINode entry) for our driver."""
    node = get("node", clustertest.CLUSTER.node_name)
    labels = node["metadata"].get("labels", {})
    ids = json.loads(node["metadata"].get("annotations", {}).get(NODE_ID_ANNOTATION, "{}"))
    csinode = get("csinode", clustertest.CLUSTER.node_name) or {}
    entries = [d for d in csinode.get("spec", {}).get("drivers") or [] if d["name"] == DRIVER]
    return labels.get(TOPOLOGY_KEY), ids.get(DRIVER), entries[0] if entries else None


def registered_as(node_id):
    label, annotated, entry = registration()
    return (label == node_id and annotated == node_id and entry is not None
            and entry.get("nodeID") == node_id)


class ControllerSuite(unittest.TestCase):
    def test_1_bridge_registers_the_driver_like_kubelet(self):
        node = clustertest.CLUSTER.node_name
        wait_for("the driver's registration on the node", lambda: registered_as(node), 60)
        label, annotated, entry = registration()
        self.assertEqual(entry, {"name": DRIVER, "nodeID": node, "topologyKeys": [TOPOLOGY_KEY],
                                 "allocatable": {"count": 64}})
        csinode = get("csinode", node)
        self.assertEqual(csinode["metadata"]["ownerReferences"][0]["kind"], "Node")
        n = get("node", node)["metadata"]
        print("\nNode labels: %s\nNode annotation %s: %s\nCSINode: %s" % (
            json.dumps(n["labels"], sort_keys=True), NODE_ID_ANNOTATION,
            n["annotations"][NODE_ID_ANNOTATION], json.dumps(csinode["spec"], sort_keys=True)),
            flush=True)

    def test_2_wait_for_first_consumer_and_immediate_claims_run(self):
        ns = "provisioned"
        objects = [clustertest.namespace_object(ns)]
        for mode in ("WaitForFirstConsumer", "Immediate"):
            name = mode.lower()
            objects += [
                {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                 "metadata": {"name": name}, "provisioner": DRIVER,
                 "volumeBindingMode": mode, "reclaimPolicy": "Delete",
                 "parameters": {"csi.storage.k8s.io/fstype": "xfs"}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": name,
                          "resources": {"requests": {"storage": "320Mi"}}}},
                busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim":
                                        {"claimName": name}}],
                            [{"name": "data", "mountPath": "/data"}],
                            command="echo written-by-%s > /data/file; sleep 3600" % name)]
        apply(objects)
        for mode in ("waitforfirstconsumer", "immediate"):
            wait_pod_running(ns, mode, timeout=180)
            self.assertEqual(exec_in(ns, mode, "cat", "/data/file").strip(), "written-by-" + mode)
            pv = get("pv", get("pvc", mode, ns)["spec"]["volumeName"])
            self.assertEqual(pv["spec"]["flexVolume"]["driver"], flex_driver(SHAPE))
            terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            self.assertEqual(terms[0]["matchExpressions"][0]["key"], TOPOLOGY_KEY)
        for mode in ("waitforfirstconsumer", "immediate"):
            delete_and_wait("pod", mode, ns)
            delete_claim_and_its_pv(ns, mode)

    def test_3_uninstall_removes_the_registration_and_a_restart_writes_it_again(self):
        node = clustertest.CLUSTER.node_name
        wait_for("registration", lambda: registered_as(node), 60)
        PLUGINS.kill_bridge()  # the bridge would register its configured driver again
        r = PLUGINS.flexcsi("uninstall-driver", "--driver", flex_driver(SHAPE), "--plugin-dir",
                            clustertest.CLUSTER.plugin_dir, "--config", PLUGINS.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed from node " + node, r.stdout)
        self.assertEqual(registration(), (None, None, None))
        PLUGINS.install_drivers()
        PLUGINS.start_bridge()
        wait_for("registration after the bridge restarted", lambda: registered_as(node), 60)

    def test_4_a_driver_restarted_with_another_node_id_moves_its_registration(self):
        node = clustertest.CLUSTER.node_name
        PLUGINS.restart_driver(SHAPE, nodeid="renamed-node-id")
        wait_for("the registration to follow the new node id",
                 lambda: registered_as("renamed-node-id"), 60)
        PLUGINS.restart_driver(SHAPE)
        wait_for("the registration to come back", lambda: registered_as(node), 60)

    def test_5_clone_grown_while_in_use(self):
        ns = "clones"
        sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": {"name": "expandable"}, "provisioner": DRIVER,
              "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
              "allowVolumeExpansion": True, "parameters": {"csi.storage.k8s.io/fstype": "xfs"}}
        apply([clustertest.namespace_object(ns), sc,
               claim(ns, "source", "expandable"),
               busybox_pod(ns, "source", claim_volume("source"), DATA,
                           command="echo original > /data/file; sync; sleep 3600")])
        wait_pod_running(ns, "source", timeout=180)
        delete_and_wait("pod", "source", ns)
        apply([claim(ns, "clone", "expandable",
                     data_source={"kind": "PersistentVolumeClaim", "name": "source"}),
               busybox_pod(ns, "clone", claim_volume("clone"), DATA)])
        wait_pod_running(ns, "clone", timeout=180)
        self.assertEqual(exec_in(ns, "clone", "cat", "/data/file").strip(), "original")
        before = df_kib(ns, "clone")
        clustertest.CLUSTER.kubectl("patch", "pvc", "clone", "-n", ns, "--type", "merge", "-p",
                                    '{"spec":{"resources":{"requests":{"storage":"400Mi"}}}}')
        wait_for("the clone's claim to report 400Mi",
                 lambda: get("pvc", "clone", ns)["status"]["capacity"]["storage"] == "400Mi", 180)
        wait_for("the file system in the pod to grow", lambda: df_kib(ns, "clone") > before, 60)
        for name in ("clone", "source"):
            delete_and_wait("pod", name, ns)
            delete_claim_and_its_pv(ns, name)

    def test_6_snapshot_and_restore_beside_snapshot_controller(self):
        ns = "snapshots"
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
                "metadata": {"name": "loopback"}, "driver": DRIVER, "deletionPolicy": "Delete"},
               claim(ns, "data", "immediate-xfs"),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "immediate-xfs"}, "provisioner": DRIVER,
                "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
                "parameters": {"csi.storage.k8s.io/fstype": "xfs"}},
               busybox_pod(ns, "writer", claim_volume("data"), DATA,
                           command="echo snapshotted > /data/file; sync; sleep 3600")])
        wait_pod_running(ns, "writer", timeout=180)
        delete_and_wait("pod", "writer", ns)
        apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
               "metadata": {"name": "snap", "namespace": ns},
               "spec": {"volumeSnapshotClassName": "loopback",
                        "source": {"persistentVolumeClaimName": "data"}}})
        wait_for("the snapshot to be ready",
                 lambda: (get("volumesnapshot", "snap", ns).get("status") or {}).get("readyToUse"),
                 120)
        apply([claim(ns, "restored", "immediate-xfs",
                     data_source={"apiGroup": "snapshot.storage.k8s.io",
                                  "kind": "VolumeSnapshot", "name": "snap"}),
               busybox_pod(ns, "reader", claim_volume("restored"), DATA)])
        wait_pod_running(ns, "reader", timeout=180)
        self.assertEqual(exec_in(ns, "reader", "cat", "/data/file").strip(), "snapshotted")
        warnings = clustertest.CLUSTER.kubectl(
            "get", "events", "-n", ns, "--field-selector",
            "type=Warning,involvedObject.kind=VolumeSnapshot", "-o",
            "custom-columns=REASON:.reason,COUNT:.count,MESSAGE:.message", "--no-headers")
        print("\nsnapshot warnings with snapshot-controller running: %s"
              % (warnings.strip() or "none"), flush=True)
        # snapshot-controller syncs a new snapshot at the moment we do; when it is first, it
        # cannot make the content itself (a FlexVolume PV has no CSI source), warns once, and
        # on its retry binds the content we made. More than one would be a fight.
        counts = [int(line.split()[1]) for line in warnings.splitlines()
                  if "SnapshotContentCreationFailed" in line]
        self.assertLessEqual(sum(counts), 1, warnings)
        snapshot = get("volumesnapshot", "snap", ns)
        self.assertNotIn("error", snapshot["status"], "a stale error left on a ready snapshot")
        version = snapshot["metadata"]["resourceVersion"]
        time.sleep(3)
        self.assertEqual(get("volumesnapshot", "snap", ns)["metadata"]["resourceVersion"],
                         version, "the snapshot's status is being rewritten back and forth")
        delete_and_wait("pod", "reader", ns)
        delete_and_wait("volumesnapshot", "snap", ns, timeout=120)
        for name in ("restored", "data"):
            delete_claim_and_its_pv(ns, name)

    def test_7_a_failing_claim_is_retried_at_backoff_spacing(self):
        ns = "failing"
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "refused"}, "provisioner": DRIVER,
                "volumeBindingMode": "Immediate",
                # an unknown csi.storage.k8s.io/ key is refused: a typo would drop a secret
                "parameters": {"csi.storage.k8s.io/provisioner-secret-nmae": "typo"}},
               claim(ns, "refused", "refused")])
        tries, last, began = [], 0, time.monotonic()
        while time.monotonic() - began < 16:
            count = sum(e.get("count", 1) for e in clustertest.CLUSTER.kubectl_json(
                "get", "events", "-n", ns, "--field-selector",
                "reason=ProvisioningFailed,involvedObject.name=refused")["items"])
            if count > last:
                tries += [round(time.monotonic() - began, 1)] * (count - last)
                last = count
            time.sleep(0.2)
        print("\nProvisioningFailed tries at (s): %s" % tries, flush=True)
        self.assertGreaterEqual(len(tries), 3, tries)
        self.assertLessEqual(len(tries), 6, "a burst: %s" % tries)
        gaps = [b - a for a, b in zip(tries, tries[1:])]
        self.assertTrue(all(g >= 0.6 for g in gaps), "tries closer than backoff: %s" % tries)
        self.assertGreaterEqual(gaps[-1], 3.0, "the backoff does not grow: %s" % tries)


DATA = [{"name": "data", "mountPath": "/data"}]


def claim_volume(name):
    return [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]


def claim(ns, name, storage_class, data_source=None, size="320Mi"):
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}}}
    if data_source:
        spec["dataSource"] = data_source
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def delete_claim_and_its_pv(ns, name):
    """Reclaim policy Delete: flexcsi-controller calls DeleteVolume, then deletes the PV."""
    pv = get("pvc", name, ns)["spec"]["volumeName"]
    delete_and_wait("pvc", name, ns)
    delete_and_wait("pv", pv, timeout=180)


def df_kib(ns, pod):
    return int(exec_in(ns, pod, "df", "-k", "/data").split()[-5])


if __name__ == "__main__":
    clustertest.main()
