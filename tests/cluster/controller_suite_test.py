#!/usr/bin/env python3
"""flexcsi-controller and the bridge's node registration on a real Kubernetes v1.24, and
(cluster_controller_suite_v1_10) on v1.10.6.

The bridge registers csi-loopback on the node as kubelet's CSI plugin would (topology label,
csi.volume.kubernetes.io/nodeid annotation, CSINode entry), with exactly the RBAC rights of
deploy/kubernetes/base/node/rbac.yaml, through a service-account token. flexcsi-controller then
provisions FlexVolume PVs whose pods really run:

1. the registration, as the API server stores it
2. a WaitForFirstConsumer and an Immediate claim: each binds, its pod runs, writes and reads;
   a WaitForFirstConsumer claim is provisioned once the scheduler placed it, with
   kube-controller-manager stopped (its annotation is not waited for), and bound once it is back
3. `flexcsi uninstall-driver --config` removes the registration; a bridge restart writes it again
4. the driver restarted with another node id: the registration follows
5. a clone of a claim, the clone grown while its pod uses it (xfs)
6. a snapshot with the community snapshot-controller and the snapshot CRDs present, restored
   into a new claim whose pod reads the data
7. a claim that cannot be provisioned: its ProvisioningFailed tries come at backoff spacing
8. flexcsi-controller and the real csi-provisioner v3.4.1 (v1.2.2 with --leader-election-type=
   leases on 1.14), both with leader election, for one driver: they share external-provisioner's
   Lease, so 70 claims get 70 PVs and 70 CSI volumes while each is killed with -9 in turn and
   the other takes over (skipped before 1.14: no Lease)

On v1.10.6 (no CSINode, Lease or snapshot API; docs/controller.md "Old clusters") the same
suite shows what that release can do and how the rest is refused: the Immediate claim is served
with its topology from the node label the bridge registered, and deleting it deletes the PV; the
WaitForFirstConsumer claim (1.10's scheduler never asks a provisioner), the clone and the
restore (1.10's API server drops spec.dataSource) each get one ProvisioningFailed event from
flexcsi-controller, however many resyncs pass; growing a claim is refused by the API server
itself (the request is immutable while the alpha ExpandPersistentVolumes gate is off; the
controller's own refusal of a grown claim is in tests/controller/old_cluster_test.cc). The tests
of the CSINode registration are skipped there with their reason.
"""
import datetime
import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import controller_events, wait_pod_running  # noqa: E402
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
    global SNAPSHOT_CONTROLLER
    # 1.10 resyncs every 3 s, so that each refusal is seen to stay one event over several.
    resync = "10s" if c.version.at_least(24) else "3s"
    CONTROLLER = Process("flexcsi-controller", [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", PLUGINS.config,
        "--journal", os.path.join(PLUGINS.dir, "controller-journal.db"),
        "--resync-period", resync], os.path.join(c.logs, "flexcsi-controller.log"))
    if not serves_snapshots():
        # The snapshot CRDs are apiextensions.k8s.io/v1 (1.16+), snapshot-controller v6 needs
        # 1.20+: on 1.10 there is no snapshot API, which flexcsi-controller finds by discovery.
        CONTROLLER.start()
        return
    # Real clusters that serve the snapshot CRDs run the community snapshot-controller.
    crds = assets.crds_dir(c.bin)
    c.kubectl("apply", *sum((["-f", os.path.join(crds, f)] for f in sorted(os.listdir(crds))), []))
    wait_for("the snapshot CRDs to be served",
             lambda: c.can_get("volumesnapshotclasses"), 60)
    SNAPSHOT_CONTROLLER = Process("snapshot-controller", [
        os.path.join(c.bin, "snapshot-controller"), "--kubeconfig", c.kubeconfig,
        "--leader-election=false"], os.path.join(c.logs, "snapshot-controller.log"))
    SNAPSHOT_CONTROLLER.start()
    CONTROLLER.start()


def serves_snapshots():
    return clustertest.CLUSTER.version.at_least(20)


def provisions_wait_for_first_consumer():
    """The scheduler asks a provisioner for such claims from 1.11 on (1.10: static PVs only)."""
    return clustertest.CLUSTER.version.at_least(11)


def keeps_clone_source():
    """A claim's dataSource naming a claim is kept from 1.16 (VolumePVCDataSource beta); before,
    the API server drops it (the field itself is in the schema from 1.12)."""
    return clustertest.CLUSTER.version.at_least(16)


def keeps_snapshot_source():
    """A dataSource naming a VolumeSnapshot is kept from 1.17 (VolumeSnapshotDataSource beta)."""
    return clustertest.CLUSTER.version.at_least(17)


def grows_claims():
    """A claim's request may grow from 1.11 (ExpandPersistentVolumes beta); before, it is
    immutable."""
    return clustertest.CLUSTER.version.at_least(11)


def assert_refused_once(test, ns, name, message_part, reason="ProvisioningFailed"):
    """One event of flexcsi-controller's naming the reason, still one after more than two
    resyncs (3 s apart on 1.10), and one log line of its own."""
    wait_for("the refusal of %s/%s" % (ns, name),
             lambda: any(message_part in m for _, m in controller_events(ns, name, reason)), 60)
    began = time.monotonic()
    while time.monotonic() - began < 8:
        events = controller_events(ns, name, reason)
        test.assertEqual([c for c, _ in events], [1], events)
        time.sleep(0.5)
    print("\n%s/%s: %s" % (ns, name, events[0][1]), flush=True)
    with open(os.path.join(clustertest.CLUSTER.logs, "flexcsi-controller.log")) as f:
        lines = [line for line in f if "%s/%s" % (ns, name) in line and message_part in line]
    # the event's own line and the refusal's
    test.assertEqual(len(lines), 2, lines)


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


def registration_label():
    node = get("node", clustertest.CLUSTER.node_name)
    return node["metadata"].get("labels", {}).get(TOPOLOGY_KEY)


def apply_dropping_data_source(test, obj):
    """Applies a claim with a dataSource to a release that does not know the field (before
    1.12), as a user would: kubectl 1.32 validates against the server's schema and refuses the
    unknown field; a client that does not validate (--validate=false) gets the claim stored
    without it, with the field still in kubectl's last-applied-configuration."""
    name = obj["metadata"]["name"]
    doc = json.dumps(obj)
    try:
        said = clustertest.CLUSTER.kubectl("apply", "-f", "-", input=doc).strip()
    except clustertest.kube_cluster.ClusterError as e:
        said = str(e)
    print("\nkubectl apply of %s with spec.dataSource: %s" % (name, said), flush=True)
    if get("pvc", name, obj["metadata"]["namespace"]) is None:
        clustertest.CLUSTER.kubectl("apply", "--validate=false", "-f", "-", input=doc)
    stored = get("pvc", name, obj["metadata"]["namespace"])
    test.assertNotIn("dataSource", stored["spec"])


def registered_as(node_id):
    label, annotated, entry = registration()
    return (label == node_id and annotated == node_id and entry is not None
            and entry.get("nodeID") == node_id)


class ControllerSuite(unittest.TestCase):
    @clustertest.needs("serves_csinode", "no CSINode: the labels-only registration is the "
                       "registration suite's")
    def test_1_bridge_registers_the_driver_like_kubelet(self):
        node = clustertest.CLUSTER.node_name
        wait_for("the driver's registration on the node", lambda: registered_as(node), 60)
        label, annotated, entry = registration()
        expected = {"name": DRIVER, "nodeID": node, "topologyKeys": [TOPOLOGY_KEY]}
        if clustertest.CLUSTER.version.csinode_has_allocatable:
            expected["allocatable"] = {"count": 64}
        self.assertEqual(entry, expected)
        csinode = get("csinode", node)
        self.assertEqual(csinode["metadata"]["ownerReferences"][0]["kind"], "Node")
        n = get("node", node)["metadata"]
        print("\nNode labels: %s\nNode annotation %s: %s\nCSINode: %s" % (
            json.dumps(n["labels"], sort_keys=True), NODE_ID_ANNOTATION,
            n["annotations"][NODE_ID_ANNOTATION], json.dumps(csinode["spec"], sort_keys=True)),
            flush=True)

    def test_2_wait_for_first_consumer_and_immediate_claims_run(self):
        ns = "provisioned"
        # Immediate claims go where the driver is registered: its topology label on the node.
        wait_for("the driver's topology label on the node",
                 lambda: registration_label() == clustertest.CLUSTER.node_name, 60)
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
        served = ["immediate"]
        if provisions_wait_for_first_consumer():
            served.append("waitforfirstconsumer")
        else:
            assert_refused_once(self, ns, "waitforfirstconsumer",
                                "volumeBindingMode WaitForFirstConsumer cannot be served on "
                                "Kubernetes %s" % clustertest.CLUSTER.version)
            self.assertEqual(get("pvc", "waitforfirstconsumer", ns)["status"]["phase"], "Pending")
            # What 1.10 itself says: the PV controller waits, the scheduler finds no PV.
            wait_for("1.10's scheduler to give up on the claim's pod",
                     lambda: "didn't find available persistent volumes to bind" in
                     clustertest.pod_events(ns, "waitforfirstconsumer"), 60)
        for mode in served:
            wait_pod_running(ns, mode, timeout=180)
            self.assertEqual(exec_in(ns, mode, "cat", "/data/file").strip(), "written-by-" + mode)
            pv = get("pv", get("pvc", mode, ns)["spec"]["volumeName"])
            self.assertEqual(pv["spec"]["flexVolume"]["driver"], flex_driver(SHAPE))
            terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            self.assertEqual(terms[0]["matchExpressions"][0]["key"], TOPOLOGY_KEY)
            self.assertEqual(terms[0]["matchExpressions"][0]["values"],
                             [clustertest.CLUSTER.node_name])
        for mode in ("waitforfirstconsumer", "immediate"):
            delete_and_wait("pod", mode, ns)
            if mode in served:
                delete_claim_and_its_pv(ns, mode)
            else:
                delete_and_wait("pvc", mode, ns)

    def test_2b_a_placed_claim_is_provisioned_before_the_pv_controller_hands_it_over(self):
        """The scheduler's selected node is the decision to provision: flexcsi-controller
        provisions then, without the PV controller's storage-provisioner annotation (one claim
        worker at 20 requests/s; waiting for it was most of every claim's time at 300 claims).
        kube-controller-manager is stopped meanwhile, so nobody else can write it; once it is
        back, it binds the claim to that PV and the pod runs."""
        if not provisions_wait_for_first_consumer():
            self.skipTest("1.10's scheduler selects no node for provisioning")
        ns, name = "placed", "placed"
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name}, "provisioner": DRIVER,
                "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"}])
        # the pod needs the namespace's default service account, which the stopped
        # kube-controller-manager would not make
        wait_for("the default service account of " + ns,
                 lambda: get("serviceaccount", "default", ns), 60)
        manager = clustertest.CLUSTER.procs["kube-controller-manager"]
        manager.stop()
        try:
            apply([{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": name,
                             "resources": {"requests": {"storage": "64Mi"}}}},
                   busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim":
                                           {"claimName": name}}],
                               [{"name": "data", "mountPath": "/data"}])])
            uid = get("pvc", name, ns)["metadata"]["uid"]
            pv = wait_for("the PV of the placed claim", lambda: get("pv", "pvc-" + uid), 120)
            claim = get("pvc", name, ns)
            annotations = claim["metadata"].get("annotations", {})
            self.assertEqual(annotations.get("volume.kubernetes.io/selected-node"),
                             clustertest.CLUSTER.node_name)
            self.assertNotIn("volume.kubernetes.io/storage-provisioner", annotations)
            self.assertNotIn("volume.beta.kubernetes.io/storage-provisioner", annotations)
            self.assertEqual(claim["status"].get("phase"), "Pending")
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uid)
        finally:
            manager.start()
        wait_pod_running(ns, name, timeout=180)
        self.assertEqual(get("pvc", name, ns)["spec"]["volumeName"], "pvc-" + uid)
        delete_and_wait("pod", name, ns)
        delete_claim_and_its_pv(ns, name)

    @clustertest.needs("serves_csinode", "no CSINode: the labels-only registration is the "
                       "registration suite's")
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

    @clustertest.needs("serves_csinode", "no CSINode: the labels-only registration is the "
                       "registration suite's")
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
        source_kib = df_kib(ns, "source")
        delete_and_wait("pod", "source", ns)
        clone = claim(ns, "clone", "expandable",
                      data_source={"kind": "PersistentVolumeClaim", "name": "source"})
        if not keeps_clone_source():
            apply_dropping_data_source(self, clone)
            assert_refused_once(self, ns, "clone",
                                'spec.dataSource PersistentVolumeClaim "source", which the API '
                                "server (Kubernetes %s) dropped" % clustertest.CLUSTER.version)
            self.assertEqual(get("pvc", "clone", ns)["status"]["phase"], "Pending")
            delete_and_wait("pvc", "clone", ns)
            if grows_claims():
                self.grow_at_the_next_mount(ns, "source", source_kib)
                return
            # Growing a claim: the request is immutable while ExpandPersistentVolumes (alpha,
            # off) is off, so the API server refuses it and nothing reaches the controller.
            try:
                clustertest.CLUSTER.kubectl(
                    "patch", "pvc", "source", "-n", ns, "--type", "merge", "-p",
                    '{"spec":{"resources":{"requests":{"storage":"400Mi"}}}}')
                self.fail("Kubernetes %s grew a claim" % clustertest.CLUSTER.version)
            except clustertest.kube_cluster.ClusterError as e:
                print("\ngrowing a claim: %s" % e, flush=True)
                self.assertIn("immutable", str(e))
            delete_claim_and_its_pv(ns, "source")
            return
        apply([clone, busybox_pod(ns, "clone", claim_volume("clone"), DATA)])
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

    def grow_at_the_next_mount(self, ns, name, before_kib):
        """A claim with no pod grown (no clone to grow before 1.16): flexcsi-controller grows
        the volume, and kubelet its file system when a pod mounts it next (before 1.15 that is
        the only time it does)."""
        clustertest.CLUSTER.kubectl("patch", "pvc", name, "-n", ns, "--type", "merge", "-p",
                                    '{"spec":{"resources":{"requests":{"storage":"400Mi"}}}}')
        wait_for("the PV of %s to be grown" % name,
                 lambda: get("pv", get("pvc", name, ns)["spec"]["volumeName"])["spec"]
                 ["capacity"]["storage"] == "400Mi", 180)
        apply([busybox_pod(ns, name, claim_volume(name), DATA)])
        wait_pod_running(ns, name, timeout=180)
        wait_for("the claim %s to report 400Mi" % name,
                 lambda: get("pvc", name, ns)["status"]["capacity"]["storage"] == "400Mi", 180)
        self.assertGreater(df_kib(ns, name), before_kib + 60 * 1024)  # 320Mi to 400Mi
        self.assertEqual(exec_in(ns, name, "cat", "/data/file").strip(), "original")
        delete_and_wait("pod", name, ns)
        delete_claim_and_its_pv(ns, name)

    def test_6_snapshot_and_restore_beside_snapshot_controller(self):
        ns = "snapshots"
        if not serves_snapshots():
            self.restore_without_the_snapshot_api(ns)
            return
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

    def restore_without_the_snapshot_api(self, ns):
        """No snapshot API: no VolumeSnapshot can exist, and a claim restoring from one is
        refused with one event, never provisioned empty."""
        c = clustertest.CLUSTER
        self.assertFalse(c.can_get("volumesnapshots", "-A"))
        with open(os.path.join(c.logs, "flexcsi-controller.log")) as f:
            self.assertIn("snapshot.storage.k8s.io/v1 not served", f.read())
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "immediate-xfs"}, "provisioner": DRIVER,
                "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
                "parameters": {"csi.storage.k8s.io/fstype": "xfs"}}])
        restored = claim(ns, "restored", "immediate-xfs",
                         data_source={"apiGroup": "snapshot.storage.k8s.io",
                                      "kind": "VolumeSnapshot", "name": "snap"})
        if keeps_snapshot_source():
            apply(restored)
            refusal = 'dataSource VolumeSnapshot "snap" needs snapshot.storage.k8s.io/v1'
        else:
            apply_dropping_data_source(self, restored)
            refusal = ('spec.dataSource VolumeSnapshot "snap", which the API server '
                       "(Kubernetes %s) dropped" % c.version)
        assert_refused_once(self, ns, "restored", refusal)
        self.assertEqual(get("pvc", "restored", ns)["status"]["phase"], "Pending")
        delete_and_wait("pvc", "restored", ns)

    def test_7_a_failing_claim_is_retried_at_backoff_spacing(self):
        ns = "failing"
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "refused"}, "provisioner": DRIVER,
                "volumeBindingMode": "Immediate",
                # an unknown csi.storage.k8s.io/ key is refused: a typo would drop a secret
                "parameters": {"csi.storage.k8s.io/provisioner-secret-nmae": "typo"}},
               claim(ns, "refused", "refused")])
        # The tries' times come from flexcsi-controller's log (milliseconds, written as each
        # event is recorded): sampling events with kubectl takes seconds on a busy machine. The
        # API's event count must agree with the log.
        log = os.path.join(clustertest.CLUSTER.logs, "flexcsi-controller.log")

        def logged_tries():
            stamps = []
            with open(log) as f:
                for line in f:
                    if "ProvisioningFailed on %s/refused:" % ns in line:
                        stamps.append(datetime.datetime.strptime(line.split()[0],
                                                                 "%Y-%m-%dT%H:%M:%S.%fZ"))
            return [round((t - stamps[0]).total_seconds(), 1) for t in stamps]

        wait_for("the first ProvisioningFailed", logged_tries, 60)
        began = time.monotonic()
        while time.monotonic() - began < 15:  # the window the backoff 1, 2, 4, 8 s fills
            time.sleep(0.5)
        seen = logged_tries()
        print("\nProvisioningFailed tries at (s): %s" % seen, flush=True)
        wait_for("the events' count to match the log", lambda: sum(
            e.get("count", 1) for e in clustertest.CLUSTER.kubectl_json(
                "get", "events", "-n", ns, "--field-selector",
                "reason=ProvisioningFailed,involvedObject.name=refused")["items"])
            >= len(seen), 30)
        tries = seen
        self.assertGreaterEqual(len(tries), 3, tries)
        self.assertLessEqual(len(tries), 6, "a burst: %s" % tries)
        gaps = [b - a for a, b in zip(tries, tries[1:])]
        self.assertTrue(all(g >= 0.6 for g in gaps), "tries closer than backoff: %s" % tries)
        self.assertGreaterEqual(gaps[-1], 3.0, "the backoff does not grow: %s" % tries)

    def test_8_one_provisioner_per_driver_beside_external_provisioner(self):
        """flexcsi-controller and the real csi-provisioner of the release's era (v3.4.1; v1.2.2
        on 1.14), both with leader election on a Lease, for one driver: each claim gets exactly
        one PV and one CSI volume, whichever holds the lock, and each takes over when the other
        is killed with -9."""
        c = clustertest.CLUSTER
        if not c.version.serves_lease:
            self.skipTest("Kubernetes %s: no Lease API (coordination.k8s.io/v1 is 1.14's), and "
                          "no csi-provisioner of its era" % c.version)
        # external-provisioner's lock: the driver's name with what a name may not hold as '-'
        ns, lock = "handover", re.sub("[^a-zA-Z0-9-]", "-", DRIVER)
        if c.version.csi_provisioner_lock == "Lease":
            lease = "8s"
            election = ["--leader-election", "--leader-election-namespace", ns,
                        "--leader-election-lease-duration", lease,
                        "--leader-election-renew-deadline", "5s",
                        "--leader-election-retry-period", "1s"]
            ours_election = theirs_election = election
        else:
            # v1.2.2 takes a Lease when told to, with its fixed 15 s (our defaults match)
            lease = "15s"
            ours_election = ["--leader-election", "--leader-election-lock", "lease",
                             "--leader-election-namespace", ns]
            theirs_election = ["--enable-leader-election", "--leader-election-type=leases",
                               "--leader-election-namespace", ns]
        apply([clustertest.namespace_object(ns),
               {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": ns}, "provisioner": DRIVER, "reclaimPolicy": "Retain",
                "volumeBindingMode": "Immediate"}])
        CONTROLLER.stop()  # the suite's own runs without leader election
        ours = Process("flexcsi-controller-le", [
            os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
            "--kubeconfig", c.kubeconfig, "--bridge-config", PLUGINS.config,
            "--journal", os.path.join(PLUGINS.dir, "controller-le-journal.db"),
            "--identity", "flexcsi-controller", *ours_election],
            os.path.join(c.logs, "flexcsi-controller-le.log"))
        theirs = Process("csi-provisioner", [
            os.path.join(c.bin, "csi-provisioner"), "--csi-address", PLUGINS.csi_socket(SHAPE),
            "--kubeconfig", c.kubeconfig, "--timeout", "30s", "--feature-gates=Topology=true",
            *theirs_election], os.path.join(c.logs, "csi-provisioner.log"))
        volumes_before = {v["id"] for v in PLUGINS.driver_state(SHAPE)["volumes"]}

        def holder():
            lease = get("lease", lock, ns)
            return lease["spec"].get("holderIdentity", "") if lease else ""

        def claims(prefix, count):
            apply([claim(ns, "%s-%d" % (prefix, i), ns, size="16Mi") for i in range(count)])
            return ["%s-%d" % (prefix, i) for i in range(count)]

        def provisioned(names, kind):
            """Waits until every claim is bound; checks that their PVs are `kind`."""
            listed = wait_for("%d claims bound" % len(names),
                              lambda: clustertest.claims_bound(ns, names), 300)
            volumes = clustertest.pvs_by_name()
            pvs = [volumes[listed[n]["spec"]["volumeName"]] for n in names]
            self.assertTrue(all(kind in pv["spec"] for pv in pvs),
                            "not all %s: %s" % (kind, [list(pv["spec"]) for pv in pvs]))

        def counts():
            pvs = [pv for pv in c.kubectl_json("get", "pv")["items"]
                   if pv["spec"].get("claimRef", {}).get("namespace") == ns]
            per_claim = {}
            for pv in pvs:
                name = pv["spec"]["claimRef"]["name"]
                per_claim[name] = per_claim.get(name, 0) + 1
            volumes = {v["id"] for v in PLUGINS.driver_state(SHAPE)["volumes"]} - volumes_before
            return pvs, per_claim, volumes

        def provisioners():
            """Per claim, the components that reported provisioning it (events Provisioning,
            ProvisioningSucceeded, ProvisioningFailed). Both name a claim's PV and CSI volume
            pvc-<claim uid>, so a claim provisioned by both would still show one PV and one
            volume: these events are what shows that the one not holding the lock kept out."""
            out = {}
            for e in c.kubectl_json("get", "events", "-n", ns)["items"]:
                if (e["involvedObject"].get("kind") == "PersistentVolumeClaim" and e.get("reason")
                        in ("Provisioning", "ProvisioningSucceeded", "ProvisioningFailed")):
                    component = (e.get("source") or {}).get("component") or \
                        e.get("reportingComponent", "")
                    out.setdefault(e["involvedObject"]["name"], set()).add(component)
            return out

        def recorded(names):
            """Waits for every claim's provisioning events: a provisioner sends them on its own
            time, possibly after the claim is bound, and one killed with -9 before they went
            out leaves a claim without any."""
            wait_for("the provisioning events of %d claims" % len(names),
                     lambda: not set(names) - set(provisioners()), 60)

        def takeover(killed, by):
            began = time.monotonic()
            killed.stop(signal.SIGKILL)
            wait_for("%s to take the lock" % by, lambda: holder() not in ("", held), 120)
            return time.monotonic() - began

        try:
            ours.start()
            wait_for("flexcsi-controller to hold the lock", lambda: holder() == "flexcsi-controller",
                     60)
            theirs.start()
            first = claims("a", 50)
            provisioned(first, "flexVolume")
            recorded(first)
            held = holder()
            self.assertEqual(held, "flexcsi-controller")
            taken = takeover(ours, "csi-provisioner")
            second = claims("b", 10)
            provisioned(second, "csi")
            recorded(second)
            held = holder()
            ours.start()
            taken_back = takeover(theirs, "flexcsi-controller")
            self.assertEqual(holder(), "flexcsi-controller")
            third = claims("c", 10)
            provisioned(third, "flexVolume")
            recorded(third)
            # Nothing more comes afterwards: a second PV or volume for a claim would show here.
            began = time.monotonic()
            while time.monotonic() - began < 10:
                time.sleep(1)
            pvs, per_claim, volumes = counts()
            print("\nhand-over: %d claims, %d PVs (%d FlexVolume, %d CSI), %d CSI volumes; "
                  "csi-provisioner took the lock %.1f s after flexcsi-controller's kill -9, "
                  "flexcsi-controller took it back %.1f s after csi-provisioner's (lease %s)"
                  % (len(first + second + third), len(pvs),
                     sum("flexVolume" in pv["spec"] for pv in pvs),
                     sum("csi" in pv["spec"] for pv in pvs), len(volumes), taken, taken_back,
                     lease),
                  flush=True)
            by = provisioners()
            ours_by = {frozenset(by.get(n, ())) for n in first + third}
            theirs_by = {frozenset(by.get(n, ())) for n in second}
            print("provisioning events by: FlexVolume claims %s, CSI claims %s"
                  % (sorted(map(sorted, ours_by)), sorted(map(sorted, theirs_by))), flush=True)
            self.assertEqual(len(ours_by), 1, by)
            self.assertEqual(len(theirs_by), 1, by)
            self.assertEqual([len(x) for x in ours_by | theirs_by], [1, 1], by)
            self.assertEqual(set(per_claim), set(first + second + third))
            self.assertEqual(set(per_claim.values()), {1}, per_claim)
            self.assertEqual(len(volumes), len(pvs), "orphaned or duplicate CSI volumes")
            self.assertLess(taken, 60)
            self.assertLess(taken_back, 60)
        finally:
            theirs.stop()
            ours.stop()
            CONTROLLER.start()


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
