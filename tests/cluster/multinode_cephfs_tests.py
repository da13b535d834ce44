"""One CephFS volume, ReadWriteMany, used by a pod on each node at once, then one node drained.

Real ceph-csi v3.8.1 (`cephcsi --type=cephfs`, ceph-fuse) and a flexcsi-bridge run on each node,
in that node's namespaces (cephcsi_node.CephCsiNode(node=...)), against one real Ceph
(ceph_backend.py). A node's loopback is its own, so Ceph listens on the address every node
reaches: the suite's bridge (nodes.BRIDGE_ADDRESS), where the API server listens too. Each node
has its own copies of cephcsi's fixed paths /etc/ceph and /etc/ceph-csi-config (HOST_PATHS,
which multinode_suite_test.py adds to the cluster's) and its own /tmp/csi tmpfs.
flexcsi-controller provisions the claim through node 0's cephcsi (a controller beside the node
plugin, as ceph-csi's provisioner pod would sit on some node) with Opaque Secrets, as
cephfs_suite_test.py's test 2 does. Node 1 is the one drained.

Ceph starts in the background when the suite's cluster is up (start_ceph), so the tests before
this one hide its 16-45 s; the suite's tearDownModule stops it (BACKEND) even when this module
failed or never ran. Without FLEXCSI_THIRD_PARTY_CSI nothing starts and the test is skipped with
one line. Imported by multinode_suite_test.py: one cluster for the whole suite."""
import json
import os
import threading
import time
import unittest

import ceph_backend
from ceph_backend import CephCluster
from cephcsi_node import CSI_DRIVER, ETC_PATHS, CephCsiNode
import clustertest
from clustertest import apply, busybox_pod, exec_in, get, timed, wait_for, wait_pod_running
from cluster import Process
import nodes

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# cephcsi's fixed paths: every node of the suite's cluster gets its own copy
HOST_PATHS = list(ETC_PATHS)
NS = "cephfs-rwx"
APP = "cephfs-rwx"
SECRETS_NS = "cephfs-rwx-secrets"
CLASS = "cephfs-rwx"
CLUSTER_ID = "rook-ceph"
NODE_USER = "csi-cephfs-node"
PROVISIONER_USER = "csi-cephfs-provisioner"
DATA_MOUNT = [{"name": "data", "mountPath": "/data"}]
# each pod appends "<its node> <n>" to its own file every 0.2 s
WRITER = ("i=0; while true; do i=$((i+1)); echo \"$NODE $i\" >> /data/$NODE.log; "
          "sleep 0.2; done")


class Backend:
    """Ceph, started in the background, and what runs against it: the node plugins and
    flexcsi-controller. stop() takes all of it down, each step even when one before failed."""

    def __init__(self):
        self.thread = self.error = self.ceph = self.unpacked = None
        self.missing = "not started (multinode_suite_test.py starts it)"
        self.started_in = None
        self.node_plugins, self.controller = [], None

    def start_ceph(self, c):
        folder = ceph_backend.third_party_folder()  # Missing: nothing to start

        def run():
            try:
                began = time.monotonic()
                self.unpacked = ceph_backend.unpack(folder, os.path.join(c.dir, "third-party"))
                self.ceph = CephCluster(self.unpacked, os.path.join(c.dir, "ceph"),
                                        address=nodes.BRIDGE_ADDRESS)
                self.ceph.start()
                self.started_in = time.monotonic() - began
            except Exception as e:  # noqa: BLE001 - setUpClass raises it
                self.error = e
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def wait_ceph(self):
        self.thread.join(240)  # the start script's own bound is 180 s
        if self.thread.is_alive():
            raise AssertionError("Ceph did not start within 240 s")
        if self.error:
            raise self.error
        return self.ceph

    def stop(self):
        try:
            if self.controller is not None:
                self.controller.stop()
            for plugins in self.node_plugins:
                plugins.stop()
        finally:
            try:
                c = clustertest.CLUSTER
                for node in c.nodes if c else []:
                    stop_ceph_fuse(node)
            finally:
                if self.thread is not None:
                    self.thread.join(240)  # a start still under way would outlive stop()
                if self.ceph is not None:
                    began = time.monotonic()
                    self.ceph.stop()
                    self.ceph = None
                    timed("Ceph stopped", time.monotonic() - began)
                self.node_plugins, self.controller = [], None


BACKEND = Backend()


def start_ceph(c):
    """For the suite's setUpModule, once its cluster (and the bridge's address) is up."""
    try:
        BACKEND.start_ceph(c)
    except ceph_backend.Missing as e:
        BACKEND.missing = str(e)


def fuse_mounts(node):
    """The node's ceph-fuse mount points, as its mount namespace lists them."""
    return [line.split()[4] for line in node.in_node("cat", "/proc/self/mountinfo").stdout
            .splitlines() if " fuse.ceph-fuse " in line]


def ceph_fuse_on(node):
    """The pids of ceph-fuse processes in the node's network namespace (ceph-fuse
    daemonizes: its parent is no longer cephcsi)."""
    own = os.readlink("/proc/%d/ns/net" % node.pid)
    pids = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() != "ceph-fuse":
                    continue
            if os.readlink("/proc/%s/ns/net" % pid) == own:
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def stop_ceph_fuse(node):
    """Unmounts the node's ceph-fuse mounts (a kill alone would leave them dead) and kills any
    ceph-fuse still running there."""
    if node.holder is None or not node.holder.alive():
        return
    for target in sorted(fuse_mounts(node), key=lambda m: -m.count("/")):
        if node.in_node("umount", target, check=False).returncode != 0:
            node.in_node("umount", "-l", target, check=False)
    for pid in ceph_fuse_on(node):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def create_secret(ns, name, data):
    """An Opaque Secret from kubectl's stdin (never printed), created, not applied: apply would
    keep the keys in its last-applied-configuration annotation."""
    clustertest.CLUSTER.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
         "type": "Opaque", "stringData": data}))


def writer_pod(node):
    pod = busybox_pod(NS, "writer-" + node, [{"name": "data", "persistentVolumeClaim": {
        "claimName": "shared"}}], DATA_MOUNT, command=WRITER, node=node)
    pod["metadata"]["labels"] = {"app": APP}
    pod["spec"]["containers"][0]["env"] = [{"name": "NODE", "value": node}]
    return pod


def lines_of(reader, writer):
    """The numbers `writer`'s pod appended, as `reader`'s pod reads them on its node."""
    text = exec_in(NS, "writer-" + reader, "sh", "-c",
                   "cat /data/%s.log 2>/dev/null || true" % writer)
    numbers = []
    for line in text.split("\n")[:-1]:  # a last line without its newline is still written
        name, n = line.split()
        if name != writer:
            raise AssertionError("%s's file has a line of %s: %r" % (writer, name, line))
        numbers.append(int(n))
    return numbers


class SharedCephfsVolumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if BACKEND.thread is None:
            raise unittest.SkipTest("no Ceph: " + BACKEND.missing)
        try:
            cls.set_up()
        except BaseException:
            BACKEND.stop()  # unittest runs no tearDownClass after a failed setUpClass
            raise

    @classmethod
    def set_up(cls):
        c = clustertest.CLUSTER
        began = time.monotonic()
        ceph = BACKEND.wait_ceph()
        timed("Ceph's start, in the background", BACKEND.started_in)
        timed("Ceph's start, what this test still waited of it", time.monotonic() - began)
        # the node DaemonSet's account (the suite's) may read the Secrets the rule names
        c.kubectl("apply", "-k", os.path.join(REPO, "deploy/kubernetes/bridge-reads-secrets"))
        # the suite's (its token lasts 2 h): made again, it would be rewritten under the
        # suite's bridges
        kubeconfig = os.path.join(c.dir, "flexcsi-node.kubeconfig")
        if not os.path.exists(kubeconfig):
            kubeconfig = clustertest.service_account_kubeconfig(c, "flexcsi", "flexcsi-node")
        cephcsi = os.path.join(BACKEND.unpacked, "bin", "cephcsi")
        for node in c.nodes:
            BACKEND.node_plugins.append(CephCsiNode(c, ceph, cephcsi, CLUSTER_ID, ["cephfs"],
                                                    kubeconfig, node=node))
            BACKEND.node_plugins[-1].start()
        cls.plugins = {p.node_name: p for p in BACKEND.node_plugins}
        # flexcsi-controller in the control plane, on node 0's cephcsi's socket (its one
        # driver entry is flexcsi/cephfs)
        first = BACKEND.node_plugins[0]
        BACKEND.controller = Process("flexcsi-controller-cephfs", [
            os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
            "--kubeconfig", c.kubeconfig, "--bridge-config", first.config,
            "--journal", os.path.join(first.dir, "controller-journal.db"),
            "--resync-period", "10s"], os.path.join(c.logs, "flexcsi-controller-cephfs.log"))
        BACKEND.controller.start()
        apply([clustertest.namespace_object(SECRETS_NS), clustertest.namespace_object(NS)])
        create_secret(SECRETS_NS, "provisioner", {"adminID": PROVISIONER_USER,
                                                  "adminKey": ceph.user_key(PROVISIONER_USER)})
        create_secret(SECRETS_NS, "node-stage", {"adminID": NODE_USER,
                                                 "adminKey": ceph.user_key(NODE_USER)})
        prefix = "csi.storage.k8s.io/"
        apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": CLASS}, "provisioner": CSI_DRIVER,
               "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
               "parameters": {"clusterID": CLUSTER_ID, "fsName": "cephfs", "mounter": "fuse",
                              prefix + "provisioner-secret-name": "provisioner",
                              prefix + "provisioner-secret-namespace": SECRETS_NS,
                              prefix + "node-stage-secret-name": "node-stage",
                              prefix + "node-stage-secret-namespace": SECRETS_NS}})
        timed("CephFS on both nodes set up", time.monotonic() - began)

    @classmethod
    def tearDownClass(cls):
        c = clustertest.CLUSTER
        try:
            for node in c.nodes:
                c.kubectl("uncordon", node.name, check=False)
            c.kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true",
                      "--timeout=120s", check=False, timeout=150)
            c.kubectl("delete", "storageclass", CLASS, "--ignore-not-found", check=False)
            c.kubectl("delete", "namespace", SECRETS_NS, "--ignore-not-found", check=False)
        finally:
            BACKEND.stop()  # Ceph's 450 MiB are not kept for the tests after this one

    # ----- helpers ----------------------------------------------------------------------

    def assert_both_ways(self, a, b, more=5):
        """Each pod reads the other's file on its own node, and sees it grow: every line
        there, in order, none missing."""
        for reader, writer in ((a, b), (b, a)):
            seen = lines_of(reader, writer)
            wait_for("%s to read %d more lines of %s's" % (reader, more, writer),
                     lambda: len(lines_of(reader, writer)) >= len(seen) + more, 60)
            numbers = lines_of(reader, writer)
            self.assertEqual(numbers, list(range(1, len(numbers) + 1)), "%s's lines as %s "
                             "reads them" % (writer, reader))

    def assert_nothing_left_on(self, node):
        plugins = self.plugins[node.name]
        wait_for("%s's bridge to hold no record" % node.name, lambda: not any(
            plugins.records()[k] for k in ("attachments", "stagings", "publications")), 90)
        wait_for("no ceph-fuse mount on " + node.name, lambda: not fuse_mounts(node), 60)
        wait_for("no ceph-fuse process on " + node.name, lambda: not ceph_fuse_on(node), 60)

    # ----- the test ---------------------------------------------------------------------

    def test_one_volume_on_two_nodes_written_both_ways_through_a_drain(self):
        c = clustertest.CLUSTER
        a, b = c.nodes[0], c.nodes[1]
        ceph = BACKEND.ceph
        began = time.monotonic()
        apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "shared", "namespace": NS},
               "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": CLASS,
                        "resources": {"requests": {"storage": "1Gi"}}}})
        pvc = wait_for("the claim to be bound", lambda: (lambda p: p if p and p.get(
            "status", {}).get("phase") == "Bound" else None)(get("pvc", "shared", NS)), 120)
        pv = get("pv", pvc["spec"]["volumeName"])
        self.assertEqual(pv["spec"]["flexVolume"]["driver"], "flexcsi/cephfs")
        self.assertEqual(pv["spec"]["accessModes"], ["ReadWriteMany"])
        self.assertEqual(len(ceph.subvolumes()), 1)
        apply([writer_pod(a.name), writer_pod(b.name)])
        for node in (a, b):
            wait_pod_running(NS, "writer-" + node.name, timeout=180)
        timed("claim bound and a pod writing on each node", time.monotonic() - began)
        # each node staged the volume itself: its bridge's record, its own ceph-fuse
        for node in (a, b):
            records = self.plugins[node.name].records()
            self.assertEqual((len(records["stagings"]), len(records["publications"])), (1, 1),
                             records)
            self.assertEqual(len(ceph_fuse_on(node)), 1, node.name)
        self.assert_both_ways(a.name, b.name)

        drained = time.monotonic()
        try:
            # our pods only (bare pods: --force); the suite's other pods stay
            c.kubectl("drain", b.name, "--ignore-daemonsets", "--delete-emptydir-data",
                      "--force", "--pod-selector", "app=" + APP, "--timeout=120s",
                      timeout=150)
            wait_for("writer-%s to be gone" % b.name,
                     lambda: get("pod", "writer-" + b.name, NS) is None, 120)
            self.assert_nothing_left_on(b)
            timed("drain of %s, its volume unstaged" % b.name, time.monotonic() - drained)
            # the other node's pod writes and reads on: its own file grows, and it reads all
            # the drained pod wrote, which no longer grows
            last = lines_of(a.name, b.name)
            own = len(lines_of(a.name, a.name))
            wait_for("writer-%s to write 10 more lines" % a.name,
                     lambda: len(lines_of(a.name, a.name)) >= own + 10, 60)
            self.assertEqual(lines_of(a.name, b.name), last)
            self.assertEqual(last, list(range(1, len(last) + 1)))
            mine = lines_of(a.name, a.name)
            self.assertEqual(mine, list(range(1, len(mine) + 1)))
        finally:
            c.kubectl("uncordon", b.name)

        ended = time.monotonic()
        clustertest.delete_and_wait("pod", "writer-" + a.name, NS)
        for node in (a, b):
            self.assert_nothing_left_on(node)
        timed("last pod deleted, nothing left on either node", time.monotonic() - ended)
        clustertest.delete_and_wait("pvc", "shared", NS)
        wait_for("the PV to be deleted", lambda: get("pv", pv["metadata"]["name"]) is None, 120)
        wait_for("the subvolume to be deleted", lambda: ceph.subvolumes() == [], 60)
        timed("from the last pod's delete to the PV and subvolume gone", time.monotonic() - ended)
        timed("the whole story", time.monotonic() - began)
        self.assertEqual(keys_in_logs(ceph), [])


def keys_in_logs(ceph):
    """Where a cephx key of the test's users shows in a log: the cluster's, flexcsi's,
    cephcsi's, Ceph's (both nodes' ceph-fuse included)."""
    keys = {user: ceph.user_key(user) for user in ("admin", NODE_USER, PROVISIONER_USER)}
    folders = (clustertest.CLUSTER.logs, os.path.join(ceph.dir, "log"))
    found = []
    for path in [os.path.join(d, name) for d in folders for name in sorted(os.listdir(d))]:
        with open(path, "rb") as f:
            text = f.read()
        found += ["%s in %s" % (user, path) for user, key in keys.items()
                  if key.encode() in text]
    return found
