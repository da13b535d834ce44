#!/usr/bin/env python3
"""Day-two operations on a real third-party CSI driver behind flexcsi, Kubernetes v1.24
(cluster_cephfs_ops_suite): ceph-csi v3.8.1's CephFS driver against a real single-host Ceph,
both from the folder FLEXCSI_THIRD_PARTY_CSI names (without it the suite skips with one line),
with the harness of cephfs_suite_test.py (ceph_backend.py, cephcsi_node.py) and the shipped
profile drivers/profiles/cephfs.yaml. One cluster and one Ceph for every test; each test cleans
up what it made and checks that nothing is left.

1. expansion: a claim of a class with allowVolumeExpansion, mounted by a pod, grown:
   flexcsi-controller calls ControllerExpandVolume (the class's controller-expand secret), the
   subvolume's quota grows, the pod's `df` shows it (ceph-fuse reports the quota as the size)
   and the claim's status.capacity says it
2. snapshot, restore and clone: a written volume's VolumeSnapshot (beside the community
   snapshot-controller), restored into a new claim and cloned from its claim. CephFS clones are
   asynchronous: CreateVolume answers `Aborted: clone from snapshot is pending` until the copy is
   done (the mgr is told to wait before each clone, longer than flexcsi-controller's per-call
   timeout): the restore is retried until ready, with no ProvisioningFailed event, exactly one
   subvolume more per claim, and the same bytes as the snapshot
3. the monitor lost while a pod's volume is mounted: the pod's events show kubelet's mount
   failing (ceph-fuse's own error, through NodeStageVolume) and retried; the monitor back, the
   pod runs; then one ceph-fuse, one staging and one publication, and after the pod nothing
4. a node-stage Secret with a wrong key: the pod's events say the stage failed and name no key;
   no key of the test (right or wrong) in any log: the cluster's, flexcsi's, cephcsi's, Ceph's
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import ceph_backend  # noqa: E402
from ceph_backend import CephCluster  # noqa: E402
from cephcsi_node import CSI_DRIVER, ETC_CEPH, ETC_PATHS, CephCsiNode  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, run  # noqa: E402
from clustertest import wait_for, wait_pod_running  # noqa: E402
from cluster import Process  # noqa: E402
import namespace  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLUSTER_ID = "rook-ceph"
SECRETS_NS = "ceph-csi"
NODE_USER = "csi-cephfs-node"
PROVISIONER_USER = "csi-cephfs-provisioner"
DATA_MOUNT = [{"name": "data", "mountPath": "/data"}]
GIB = 1 << 30
# flexcsi-controller's per-call timeout, and how long the mgr waits before it starts a clone:
# longer, so that a restore sees `Aborted ... pending` past one CreateVolume's deadline.
CONTROLLER_CALL_TIMEOUT = "8s"
CLONE_DELAY_SECONDS = 12
# How long a Ceph client (ceph-fuse, cephcsi's rados connections) waits to authenticate with the
# monitors. Ceph's default (300 s) is longer than the bridge's deadline for kubelet's mount
# (120 s): with it, a mount with a wrong key ended in DEADLINE_EXCEEDED after 120 s, ceph-fuse
# still trying, and the bridge's rollback of the staging waited for that ceph-fuse (cephcsi
# answered ABORTED for the volume meanwhile). 15 s: kubelet sees ceph-fuse's own error. It does
# not bound ceph-fuse's wait for an active mds: with the mds killed, NodeStageVolume hung until
# the bridge's 120 s deadline (one measured run), which is why test 3 stops the monitor.
CLIENT_MOUNT_TIMEOUT_SECONDS = 15

CEPH = None
NODE = None
CONTROLLER = None
SNAPSHOT_CONTROLLER = None
WRONG_KEY = None  # test 4's key, looked for in every log


def setUpModule():
    global CEPH, NODE, CONTROLLER, SNAPSHOT_CONTROLLER
    c = clustertest.start_cluster(host_paths=ETC_PATHS)
    unpacked = ceph_backend.unpack(ceph_backend.third_party_folder(),
                                   os.path.join(c.dir, "third-party"))
    CEPH = CephCluster(unpacked, os.path.join(c.dir, "ceph"))
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        started = pool.submit(CEPH.start)  # beside the cluster's own setup
        apply(clustertest.namespace_object("flexcsi"))
        c.kubectl("apply", "-n", "flexcsi", "-f",
                  os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
                  "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"), "-f",
                  os.path.join(REPO, "deploy/kubernetes/bridge-reads-secrets/rbac.yaml"))
        kubeconfig = clustertest.service_account_kubeconfig(c, "flexcsi", "flexcsi-node")
        crds = assets.crds_dir(c.bin)
        c.kubectl("apply", *sum((["-f", os.path.join(crds, f)]
                                 for f in sorted(os.listdir(crds))), []))
        started.result()
    clustertest.timed("Ceph up beside the cluster's setup", time.monotonic() - began)
    wait_for("the snapshot CRDs to be served", lambda: c.can_get("volumesnapshotclasses"), 60)
    # every clone waits this long in the mgr's queue before it copies (test 2)
    run(["ceph", "-c", CEPH.conf, "config", "set", "mgr", "mgr/volumes/snapshot_clone_delay",
         str(CLONE_DELAY_SECONDS)])
    NODE = CephCsiNode(c, CEPH, os.path.join(unpacked, "bin", "cephcsi"), CLUSTER_ID,
                       ["cephfs"], kubeconfig)
    NODE.start()
    # in cephcsi's ceph.conf, not the monitors' configuration database: test 3 stops the monitor
    with open(os.path.join(c.dir, "host", ETC_CEPH.lstrip("/"), "ceph.conf"), "a") as f:
        f.write("[client]\nclient_mount_timeout = %d\n" % CLIENT_MOUNT_TIMEOUT_SECONDS)
    SNAPSHOT_CONTROLLER = Process("snapshot-controller", [
        os.path.join(c.bin, "snapshot-controller"), "--kubeconfig", c.kubeconfig,
        "--leader-election=false"], os.path.join(c.logs, "snapshot-controller.log"))
    SNAPSHOT_CONTROLLER.start()
    CONTROLLER = Process("flexcsi-controller", [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", NODE.config,
        "--journal", os.path.join(NODE.dir, "controller-journal.db"), "--resync-period", "10s",
        "--timeout", CONTROLLER_CALL_TIMEOUT], os.path.join(c.logs, "flexcsi-controller.log"))
    CONTROLLER.start()
    set_up_classes()


class _Backend:
    """Stops flexcsi-controller, snapshot-controller, the bridge and cephcsi, every ceph-fuse
    of the test, then Ceph, each step even when one before it failed."""

    def stop(self):
        try:
            for component in (CONTROLLER, SNAPSHOT_CONTROLLER, NODE):
                if component is not None:
                    component.stop()
        finally:
            try:
                if clustertest.CLUSTER is not None:
                    stop_ceph_fuse(clustertest.CLUSTER.dir)
            finally:
                if CEPH is not None:
                    CEPH.stop()


def stop_ceph_fuse(below):
    """Unmounts the test's ceph-fuse mounts and kills any ceph-fuse of the test still running."""
    with open("/proc/self/mountinfo") as f:
        fuse = [line.split()[4] for line in f
                if " fuse.ceph-fuse " in line and line.split()[4].startswith(below + "/")]
    for target in sorted(fuse, key=lambda m: -m.count("/")):
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)
    for pid in ceph_backend.ceph_fuse_pids(below):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def tearDownModule():
    clustertest.stop_cluster(_Backend())


def create_secret(ns, name, data):
    """An Opaque Secret from kubectl's stdin: its values are never printed, and never kept in a
    last-applied-configuration annotation."""
    clustertest.CLUSTER.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
         "type": "Opaque", "stringData": data}))


def storage_class(name, node_stage_secret):
    prefix = "csi.storage.k8s.io/"
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": CSI_DRIVER,
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
            "parameters": {"clusterID": CLUSTER_ID, "fsName": "cephfs", "mounter": "fuse",
                           prefix + "provisioner-secret-name": "provisioner",
                           prefix + "provisioner-secret-namespace": SECRETS_NS,
                           prefix + "controller-expand-secret-name": "provisioner",
                           prefix + "controller-expand-secret-namespace": SECRETS_NS,
                           prefix + "node-stage-secret-name": node_stage_secret,
                           prefix + "node-stage-secret-namespace": SECRETS_NS}}


def set_up_classes():
    """The classes every test uses and their Secrets: the provisioner's (CreateVolume,
    DeleteVolume, ControllerExpandVolume, CreateSnapshot, DeleteSnapshot: ceph-csi's provisioner
    user) and the node's (NodeStageVolume)."""
    apply(clustertest.namespace_object(SECRETS_NS))
    create_secret(SECRETS_NS, "provisioner", {"adminID": PROVISIONER_USER,
                                              "adminKey": CEPH.user_key(PROVISIONER_USER)})
    create_secret(SECRETS_NS, "node-stage", {"adminID": NODE_USER,
                                             "adminKey": CEPH.user_key(NODE_USER)})
    prefix = "csi.storage.k8s.io/"
    apply([storage_class("cephfs", "node-stage"),
           {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": "cephfs"}, "driver": CSI_DRIVER, "deletionPolicy": "Delete",
            "parameters": {"clusterID": CLUSTER_ID,
                           prefix + "snapshotter-secret-name": "provisioner",
                           prefix + "snapshotter-secret-namespace": SECRETS_NS}}])


def claim(ns, name, size="1Gi", storage_class_name="cephfs", data_source=None):
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class_name,
            "resources": {"requests": {"storage": size}}}
    if data_source:
        spec["dataSource"] = data_source
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def claim_volume(name):
    return {"name": "data", "persistentVolumeClaim": {"claimName": name}}


def claim_bound(ns, name):
    pvc = get("pvc", name, ns)
    return pvc if pvc and pvc.get("status", {}).get("phase") == "Bound" else None


def df_bytes(ns, pod):
    """The size of the pod's /data as `df` in the pod shows it."""
    line = exec_in(ns, pod, "df", "-k", "/data").splitlines()[-1]
    return int(line.split()[1]) * 1024


def subvolume_quota(name):
    info = json.loads(run(["ceph", "-c", CEPH.conf, "fs", "subvolume", "info", "cephfs", name,
                           ceph_backend.SUBVOLUME_GROUP, "-f", "json"]))
    return info["bytes_quota"]


def kubelet_ceph_mounts():
    """Mounts under the kubelet root of this driver's volumes: stagings and pods' mounts."""
    root = clustertest.CLUSTER.kubelet_root + "/"
    return [m for m in namespace.mount_points()
            if m.startswith(root) and ("/plugins/" in m or "/volumes/flexcsi~cephfs/" in m)]


def bridge_records():
    records = NODE.records()
    return {k: records[k] for k in ("attachments", "stagings", "publications")}


def wait_nothing_left():
    """No bridge record, no volume mount under the kubelet root, no ceph-fuse of the test."""
    wait_for("the bridge to hold no record", lambda: not any(bridge_records().values()), 90)
    wait_for("no volume mount under the kubelet root", lambda: not kubelet_ceph_mounts(), 60)
    wait_for("no ceph-fuse process of the test",
             lambda: not ceph_backend.ceph_fuse_pids(clustertest.CLUSTER.dir), 60)


def delete_claims(ns, names):
    """Deletes the claims and waits for their PVs (reclaim Delete: and subvolumes) to go."""
    pvs = [get("pvc", n, ns)["spec"].get("volumeName") for n in names]
    for name in names:
        delete_and_wait("pvc", name, ns)
    for pv in pvs:
        if pv:
            wait_for("PV %s to be deleted" % pv, lambda: get("pv", pv) is None, 120)


def start_test_namespace(test, ns):
    """Makes the namespace; a failing test's leftovers go with it (pods, claims, snapshots, and
    through flexcsi-controller their PVs and subvolumes), so that the next test starts clean.
    Returns the subvolumes there before, which the test must leave as it found them."""
    apply(clustertest.namespace_object(ns))
    test.addCleanup(lambda: clustertest.CLUSTER.kubectl(
        "delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False))
    return set(CEPH.subvolumes())


def wait_subvolumes(before):
    """None of the test's own subvolumes left (a failed test before it may still be deleting
    its own: those may go meanwhile)."""
    wait_for("the test's subvolumes to be deleted", lambda: set(CEPH.subvolumes()) <= before, 90)


def controller_log():
    with open(CONTROLLER.log, errors="replace") as f:
        return f.read()


class CephfsOpsSuite(unittest.TestCase):
    def test_1_claim_grown_in_use_grows_the_subvolume_quota(self):
        ns = "cephfs-grow"
        before = start_test_namespace(self, ns)
        apply([claim(ns, "data"),
               busybox_pod(ns, "app", [claim_volume("data")], DATA_MOUNT,
                           command="echo kept > /data/file; sleep 3600")])
        wait_pod_running(ns, "app", timeout=180)
        pv_name = claim_bound(ns, "data")["spec"]["volumeName"]
        subvolume = get("pv", pv_name)["spec"]["flexVolume"]["options"]["subvolumeName"]
        self.assertEqual((df_bytes(ns, "app"), subvolume_quota(subvolume)), (GIB, GIB))
        began = time.monotonic()
        clustertest.CLUSTER.kubectl("patch", "pvc", "data", "-n", ns, "--type", "merge", "-p",
                                    '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}')
        wait_for("the claim to report 2Gi", lambda: (get("pvc", "data", ns)["status"].get(
            "capacity", {}).get("storage") == "2Gi"), 120)
        self.assertEqual(subvolume_quota(subvolume), 2 * GIB)
        # ceph-fuse reports the quota of the mounted directory as the file system's size
        wait_for("df in the pod to show 2 GiB", lambda: df_bytes(ns, "app") == 2 * GIB, 60)
        clustertest.timed("claim grown to what the pod sees", time.monotonic() - began)
        self.assertEqual(exec_in(ns, "app", "cat", "/data/file").strip(), "kept")
        pvc = get("pvc", "data", ns)
        self.assertEqual(pvc["status"].get("conditions", []), [], pvc["status"])
        self.assertEqual(get("pv", pv_name)["spec"]["capacity"]["storage"], "2Gi")
        resizes = clustertest.controller_events(ns, "data", "VolumeResizeFailed")
        self.assertEqual(resizes, [])
        delete_and_wait("pod", "app", ns)
        wait_nothing_left()
        delete_claims(ns, ["data"])
        wait_subvolumes(before)

    def test_2_snapshot_restore_and_clone_wait_for_cephfs_clones(self):
        ns = "cephfs-snap"
        at_start = start_test_namespace(self, ns)
        payload = ("head -c 4194304 /dev/urandom > /data/payload && sync && "
                   "sha256sum /data/payload | cut -c1-64 > /tmp/sum; sleep 3600")
        apply([claim(ns, "source"),
               busybox_pod(ns, "writer", [claim_volume("source")], DATA_MOUNT,
                           command=payload)])
        wait_pod_running(ns, "writer", timeout=180)
        written = wait_for("the writer's checksum",
                           lambda: exec_in(ns, "writer", "cat", "/tmp/sum").strip(), 60)
        delete_and_wait("pod", "writer", ns)
        self.assertEqual(len(CEPH.subvolumes()), len(at_start) + 1)
        apply({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
               "metadata": {"name": "snap", "namespace": ns},
               "spec": {"volumeSnapshotClassName": "cephfs",
                        "source": {"persistentVolumeClaimName": "source"}}})
        wait_for("the snapshot to be ready", lambda: (get("volumesnapshot", "snap", ns).get(
            "status") or {}).get("readyToUse"), 120)
        sources = {
            "restored": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                         "name": "snap"},
            "clone": {"kind": "PersistentVolumeClaim", "name": "source"},
        }
        # One after the other: made at once, one clone's CreateVolume once took longer than the
        # 8 s --timeout in cephcsi (no ABORTED in that call), a DEADLINE_EXCEEDED that
        # flexcsi-controller reports as ProvisioningFailed (the default timeout is 60 s)
        for name, source in sources.items():
            before = CEPH.subvolumes()
            began = time.monotonic()
            apply([claim(ns, name, data_source=source),
                   busybox_pod(ns, name, [claim_volume(name)], DATA_MOUNT)])
            wait_pod_running(ns, name, timeout=240)
            clustertest.timed("%s claim to a running pod" % name, time.monotonic() - began)
            self.assertEqual(exec_in(ns, name, "sha256sum", "/data/payload").split()[0],
                             written)
            after = CEPH.subvolumes()
            self.assertEqual(len(after), len(before) + 1, (before, after))
            self.assertEqual(clustertest.controller_events(ns, name, "ProvisioningFailed"), [])
            # the mgr held the clone past one CreateVolume's deadline: the controller saw it
            # pending, and waited for it
            uid = get("pvc", name, ns)["metadata"]["uid"]
            self.assertIn("pvc-%s still pending in the driver" % uid, controller_log())
        for name in sources:
            delete_and_wait("pod", name, ns)
        wait_nothing_left()
        delete_claims(ns, list(sources))
        delete_and_wait("volumesnapshot", "snap", ns, timeout=120)
        delete_claims(ns, ["source"])
        wait_subvolumes(at_start)

    def test_3_mount_waits_for_a_lost_monitor_and_leaks_nothing(self):
        ns = "cephfs-mon"
        before = start_test_namespace(self, ns)
        apply(claim(ns, "data"))
        wait_for("the claim to be bound", lambda: claim_bound(ns, "data"), 120)
        CEPH.kill_daemon("mon.a")
        try:
            apply(busybox_pod(ns, "app", [claim_volume("data")], DATA_MOUNT,
                              command="echo mounted > /data/file; sleep 3600"))
            events = wait_for("kubelet's failed mount in the pod's events", lambda: (
                lambda e: e if "FailedMount" in e else None)(clustertest.pod_events(ns, "app")),
                120)
            print("\npod events with the monitor down:\n%s" % events, flush=True)
            self.assertIn("NodeStageVolume", events)
        finally:
            CEPH.start_daemon("mon.a", ["ceph-mon", "-i", "a"])
        began = time.monotonic()
        wait_pod_running(ns, "app", timeout=240)
        clustertest.timed("monitor back to a running pod", time.monotonic() - began)
        self.assertEqual(exec_in(ns, "app", "cat", "/data/file").strip(), "mounted")
        # one staging, one publication, one ceph-fuse: the failed attempts left nothing
        records = bridge_records()
        self.assertEqual((len(records["stagings"]), len(records["publications"])), (1, 1),
                         records)
        self.assertEqual(len(ceph_backend.ceph_fuse_pids(clustertest.CLUSTER.dir)), 1)
        stagings = [m for m in kubelet_ceph_mounts() if "/plugins/" in m]
        self.assertEqual(len(stagings), 1, kubelet_ceph_mounts())
        delete_and_wait("pod", "app", ns)
        wait_nothing_left()
        delete_claims(ns, ["data"])
        wait_subvolumes(before)

    def test_4_wrong_node_stage_key_is_named_never_shown(self):
        global WRONG_KEY
        ns = "cephfs-wrong"
        before = start_test_namespace(self, ns)
        WRONG_KEY = run(["ceph-authtool", "--gen-print-key"]).strip()
        create_secret(SECRETS_NS, "wrong-stage", {"adminID": NODE_USER, "adminKey": WRONG_KEY})
        apply([storage_class("cephfs-wrong-key", "wrong-stage"),
               claim(ns, "data", storage_class_name="cephfs-wrong-key"),
               busybox_pod(ns, "app", [claim_volume("data")], DATA_MOUNT)])
        events = wait_for("the failed stage in the pod's events", lambda: (
            lambda e: e if "FailedMount" in e else None)(clustertest.pod_events(ns, "app")), 180)
        print("\npod events with a wrong key:\n%s" % events, flush=True)
        self.assertNotIn(WRONG_KEY, events)
        self.assertRegex(events, re.compile("NodeStageVolume|wrong-stage"))
        delete_and_wait("pod", "app", ns)
        wait_nothing_left()
        delete_claims(ns, ["data"])
        wait_subvolumes(before)

    def test_5_no_key_in_any_log(self):
        keys = {user: CEPH.user_key(user) for user in ("admin", NODE_USER, PROVISIONER_USER)}
        if WRONG_KEY:
            keys["the wrong key"] = WRONG_KEY
        logs = [os.path.join(clustertest.CLUSTER.logs, name)
                for name in sorted(os.listdir(clustertest.CLUSTER.logs))]
        logs += [os.path.join(CEPH.dir, "log", name)
                 for name in sorted(os.listdir(os.path.join(CEPH.dir, "log")))]
        found = []
        for path in logs:
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                text = f.read()
            found += ["%s in %s" % (user, path) for user, key in keys.items()
                      if key.encode() in text]
        self.assertEqual(found, [])


if __name__ == "__main__":
    try:
        ceph_backend.third_party_folder()
    except ceph_backend.Missing as e:
        print("SKIP: " + str(e), flush=True)
        sys.exit(clustertest.SKIP)
    clustertest.main(failfast=False)
