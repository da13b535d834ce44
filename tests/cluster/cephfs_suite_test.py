#!/usr/bin/env python3
"""A real third-party CSI driver behind flexcsi on Kubernetes v1.10.6 (cluster_cephfs_suite_v1_10,
FlexVolume only): ceph-csi v3.8.1's CephFS driver (`cephcsi --type=cephfs`, mounting with
ceph-fuse) against a real single-host Ceph cluster, both from the folder FLEXCSI_THIRD_PARTY_CSI
names; without it the suite skips with one line. kubelet 1.10 execs flexexec, the bridge turns
each call into ceph-csi's CSI calls; the driver entries are the shipped profiles
drivers/profiles/rook-cephfs.yaml and cephfs.yaml, both of whose rules name Secrets the bridge
reads with its own credentials (the node RBAC plus deploy/kubernetes/bridge-reads-secrets).

1. a CephFS PV written exactly as rook's FlexVolume agent (v0.9/v1.0) had it: driver
   ceph.rook.io/rook, fsType ceph, options fsName/clusterNamespace/path/mountUser/mountSecret,
   the user's key in a one-key Secret of the pod's namespace that the bridge reads itself; a
   pod writes, a second pod reads, and an independent ceph-fuse mount of that path sees it. A
   second PV with the defaults (path /, mountUser admin) shows the whole file system; a
   mountSecret with two keys is refused, naming the Secret, in the pod's events
2. a claim flexcsi-controller provisions through ceph-csi's real CreateVolume with the
   StorageClass's provisioner secret; its Opaque node-stage Secret is named in the PV's
   options, which the bridge reads it by; a pod writes and reads; deleting the claim (reclaim
   Delete) deletes the subvolume
3. kill -9 of the bridge and cephcsi while a pod has its volume mounted: the pod keeps reading
   and writing; both restarted, the pod deleted: no ceph-fuse of the test, no mount under the
   kubelet root and no bridge record remain
4. no cephx key of the test's users in any log: the cluster's, flexcsi's, cephcsi's, Ceph's
   (ceph-fuse's included)
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ceph_backend  # noqa: E402
from ceph_backend import CephCluster  # noqa: E402
from cephcsi_node import CSI_DRIVER, ETC_PATHS, CephCsiNode  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, run  # noqa: E402
from clustertest import wait_for, wait_pod_running  # noqa: E402
from cluster import Process  # noqa: E402
import namespace  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# rook named the ceph-csi cluster entry after the namespace of its CephCluster
CLUSTER_ID = "rook-ceph"
SECRETS_NS = "ceph-csi"
NODE_USER = "csi-cephfs-node"
PROVISIONER_USER = "csi-cephfs-provisioner"
PAYLOAD = "head -c 1048576 /dev/urandom > /data/payload && sha256sum /data/payload | cut -c1-64"
DATA_MOUNT = [{"name": "data", "mountPath": "/data"}]

CEPH = None
NODE = None
CONTROLLER = None


def setUpModule():
    c = clustertest.start_cluster(host_paths=ETC_PATHS)
    try:
        set_up(c)
    except BaseException:
        # unittest runs no tearDownModule after a failed setUpModule: Ceph's daemons would run
        # on until the next suite swept this one's cgroup
        try:
            tearDownModule()
        except Exception as e:  # noqa: BLE001 - the set-up's own error is the one to report
            print("teardown after the failed set-up: %s" % e, flush=True)
        raise


def set_up(c):
    global CEPH, NODE, CONTROLLER
    unpacked = ceph_backend.unpack(ceph_backend.third_party_folder(),
                                   os.path.join(c.dir, "third-party"))
    CEPH = CephCluster(unpacked, os.path.join(c.dir, "ceph"))
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        started = pool.submit(CEPH.start)  # 15-19 s: beside the cluster's own setup
        apply(clustertest.namespace_object("flexcsi"))
        # the node DaemonSet's account and RBAC, with the component that lets the bridge read
        # the Secrets both profiles' rules name
        c.kubectl("apply", "-n", "flexcsi", "-f",
                  os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
                  "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"), "-f",
                  os.path.join(REPO, "deploy/kubernetes/bridge-reads-secrets/rbac.yaml"))
        kubeconfig = clustertest.service_account_kubeconfig(c, "flexcsi", "flexcsi-node")
        started.result()
    clustertest.timed("Ceph up beside the cluster's setup", time.monotonic() - began)
    NODE = CephCsiNode(c, CEPH, os.path.join(unpacked, "bin", "cephcsi"), CLUSTER_ID,
                       ["rook-cephfs", "cephfs"], kubeconfig)
    NODE.start()
    # flexcsi-controller serves the provisioned profile alone: a rook PV is static, and both
    # entries name the same CSI driver, hence the same default provisioner name.
    controller_config = os.path.join(NODE.dir, "controller.yaml")
    with open(NODE.config) as f:
        config = json.load(f)
    config["drivers"] = [d for d in config["drivers"] if d["flexDriver"] == "flexcsi/cephfs"]
    with open(controller_config, "w") as f:
        json.dump(config, f, indent=2)
    CONTROLLER = Process("flexcsi-controller", [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", controller_config,
        "--journal", os.path.join(NODE.dir, "controller-journal.db"), "--resync-period", "10s"],
        os.path.join(c.logs, "flexcsi-controller.log"))
    CONTROLLER.start()
    set_up_provisioning()


class _Backend:
    """Stops flexcsi-controller, the bridge and cephcsi, every ceph-fuse of the test, then Ceph,
    each step even when one before it failed (clustertest.stop_cluster then stops the
    cluster)."""

    def stop(self):
        try:
            for component in (CONTROLLER, NODE):
                if component is not None:
                    component.stop()
        finally:
            try:
                if clustertest.CLUSTER is not None:
                    stop_ceph_fuse(clustertest.CLUSTER.dir)
            finally:
                if CEPH is not None:
                    began = time.monotonic()
                    CEPH.stop()
                    clustertest.timed("Ceph stopped", time.monotonic() - began)


def stop_ceph_fuse(below):
    """Unmounts the test's ceph-fuse mounts (a kill alone would leave them dead) and kills
    any ceph-fuse of the test still running."""
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


def claim_volume(claim, name="data"):
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def create_secret(ns, name, data):
    """An Opaque Secret with `data` as stringData, read from kubectl's stdin (never printed).
    Created, not applied: apply would also keep the keys in the Secret's
    last-applied-configuration annotation."""
    clustertest.CLUSTER.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
         "type": "Opaque", "stringData": data}))


def kubelet_ceph_mounts():
    """Mounts under the kubelet root of this suite's volumes: the bridge's stagings under
    plugins/ and the pods' FlexVolume mounts."""
    root = clustertest.CLUSTER.kubelet_root + "/"
    return [m for m in namespace.mount_points() if m.startswith(root) and (
        "/plugins/" in m or "/volumes/flexcsi~cephfs/" in m or "/volumes/ceph.rook.io~rook/" in m)]


def wait_nothing_left(test):
    """No bridge record, no volume mount under the kubelet root, no ceph-fuse of the test."""
    wait_for("the bridge to hold no record",
             lambda: not any(NODE.records()[k] for k in ("attachments", "stagings",
                                                         "publications")), 90)
    wait_for("no volume mount under the kubelet root", lambda: not kubelet_ceph_mounts(), 60)
    wait_for("no ceph-fuse process of the test",
             lambda: not ceph_backend.ceph_fuse_pids(clustertest.CLUSTER.dir), 60)


class CephfsSuite(unittest.TestCase):
    def test_1_rook_flexvolume_pv_mounts_through_ceph_csi(self):
        ns = "rook-app"
        path = "/rook/app-data"
        CEPH.mkdir(path)  # a static volume's rootPath must exist, as under rook
        node_key = CEPH.user_key(NODE_USER)
        admin_key = CEPH.user_key("admin")
        pvs = {  # rook v1.0's CephFS FlexVolume options, and one with every default
            "rook-data": {"fsName": "cephfs", "clusterNamespace": CLUSTER_ID, "path": path,
                          "mountUser": NODE_USER, "mountSecret": "rook-user"},
            "rook-root": {"fsName": "cephfs", "clusterNamespace": CLUSTER_ID,
                          "mountSecret": "rook-admin"},
            # refused as rook's agent refused it: which of two keys would be the user's?
            "rook-two-keys": {"fsName": "cephfs", "clusterNamespace": CLUSTER_ID,
                              "mountSecret": "rook-two-keys"},
        }
        apply(clustertest.namespace_object(ns))
        # one key each, named as the user liked: rook read the single value
        create_secret(ns, "rook-user", {"mykey": node_key})
        create_secret(ns, "rook-admin", {"admin-key": admin_key})
        create_secret(ns, "rook-two-keys", {"key": admin_key, "user": "admin"})
        objects = []
        for name, options in pvs.items():
            objects += [
                {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                 "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                          "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                          "flexVolume": {"driver": "ceph.rook.io/rook", "fsType": "ceph",
                                         "options": options}}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                          "volumeName": name, "resources": {"requests": {"storage": "1Gi"}}}}]
        objects.append(busybox_pod(ns, "writer", [claim_volume("rook-data")], DATA_MOUNT,
                                   command=PAYLOAD + " > /tmp/sum; sleep 3600"))
        objects.append(busybox_pod(ns, "refused", [claim_volume("rook-two-keys")], DATA_MOUNT))
        apply(objects)
        wait_for("the refusal of a mountSecret with two keys", lambda: (
            "secret %s/rook-two-keys holds 2 keys; the mapping rule (secrets.singleKeyAs) takes "
            "exactly one" % ns) in clustertest.pod_events(ns, "refused"), 120)
        wait_pod_running(ns, "writer", timeout=180)
        written = wait_for("the writer's checksum", lambda: exec_in(
            ns, "writer", "cat", "/tmp/sum").strip(), 60)
        apply(busybox_pod(ns, "reader", [claim_volume("rook-data"),
                                         claim_volume("rook-root", "root")],
                          DATA_MOUNT + [{"name": "root", "mountPath": "/root-fs"}]))
        wait_pod_running(ns, "reader", timeout=180)
        read = exec_in(ns, "reader", "sha256sum", "/data/payload",
                       "/root-fs" + path + "/payload").split()
        self.assertEqual((read[0], read[2]), (written, written))
        # without any CSI driver: the file is in the file system at the PV's path
        check = os.path.join(CEPH.dir, "check-rook")
        with CEPH.admin_mount(path, check) as mnt:
            seen = run(["sha256sum", os.path.join(mnt, "payload")]).split()[0]
        self.assertEqual(seen, written)
        for pod in ("writer", "reader", "refused"):
            delete_and_wait("pod", pod, ns)
        wait_nothing_left(self)

    def test_2_provisioned_claim_is_a_ceph_csi_subvolume_deleted_with_its_claim(self):
        ns = "cephfs-dyn"
        apply([clustertest.namespace_object(ns), claim(ns, "data")])
        pvc = wait_for("the claim to be bound", lambda: claim_bound(ns, "data"), 120)
        pv = get("pv", pvc["spec"]["volumeName"])
        options = pv["spec"]["flexVolume"]["options"]
        self.assertEqual(pv["spec"]["flexVolume"]["driver"], "flexcsi/cephfs")
        # the node-stage Secret is Opaque: named in options the bridge reads it by, since
        # kubelet would refuse it as a secretRef
        self.assertNotIn("secretRef", pv["spec"]["flexVolume"])
        self.assertEqual((options["nodeStageSecretName"], options["nodeStageSecretNamespace"]),
                         ("node-stage", SECRETS_NS))
        self.assertEqual((options["clusterID"], options["fsName"], options["mounter"]),
                         (CLUSTER_ID, "cephfs", "fuse"))
        self.assertEqual(CEPH.subvolumes(), [options["subvolumeName"]])
        # ceph-csi states VOLUME_ACCESSIBILITY_CONSTRAINTS but no topology key: a figure
        print("\nPV nodeAffinity: %s" % json.dumps(pv["spec"].get("nodeAffinity")), flush=True)
        # DeleteVolume's secret, as external-provisioner records it
        annotations = pv["metadata"]["annotations"]
        self.assertEqual(
            (annotations["volume.kubernetes.io/provisioner-deletion-secret-name"],
             annotations["volume.kubernetes.io/provisioner-deletion-secret-namespace"]),
            ("provisioner", SECRETS_NS))
        apply(busybox_pod(ns, "app", [claim_volume("data")], DATA_MOUNT,
                          command=PAYLOAD + " > /tmp/sum; sleep 3600"))
        wait_pod_running(ns, "app", timeout=180)
        written = wait_for("the pod's checksum",
                           lambda: exec_in(ns, "app", "cat", "/tmp/sum").strip(), 60)
        self.assertEqual(exec_in(ns, "app", "sha256sum", "/data/payload").split()[0], written)
        check = os.path.join(CEPH.dir, "check-dyn")
        with CEPH.admin_mount(options["subvolumePath"], check) as mnt:
            self.assertEqual(run(["sha256sum", os.path.join(mnt, "payload")]).split()[0],
                             written)
        delete_and_wait("pod", "app", ns)
        delete_and_wait("pvc", "data", ns)
        wait_for("the PV to be deleted", lambda: get("pv", pv["metadata"]["name"]) is None, 120)
        wait_for("the subvolume to be deleted", lambda: CEPH.subvolumes() == [], 60)
        wait_nothing_left(self)

    def test_3_pod_keeps_its_data_through_kill_9_of_bridge_and_cephcsi(self):
        ns = "cephfs-kill"
        counter = ("i=0; while true; do i=$((i+1)); echo $i >> /data/counter; "
                   "sleep 0.2; done")
        apply([
            clustertest.namespace_object(ns), claim(ns, "data"),
            busybox_pod(ns, "app", [claim_volume("data")], DATA_MOUNT,
                        command=PAYLOAD + " > /tmp/sum; " + counter)])
        wait_pod_running(ns, "app", timeout=180)
        written = wait_for("the pod's checksum",
                           lambda: exec_in(ns, "app", "cat", "/tmp/sum").strip(), 60)
        fuse = ceph_backend.ceph_fuse_pids(clustertest.CLUSTER.dir)
        self.assertEqual(len(fuse), 1, fuse)
        NODE.kill()
        lines = self.counter_lines(ns)
        # the pod goes on writing and reading through ceph-fuse, which outlives both daemons
        wait_for("the pod to write 10 more lines",
                 lambda: self.counter_lines(ns) >= lines + 10, 60)
        self.assertEqual(exec_in(ns, "app", "sha256sum", "/data/payload").split()[0], written)
        self.assertEqual(ceph_backend.ceph_fuse_pids(clustertest.CLUSTER.dir), fuse)
        NODE.start_cephcsi()
        NODE.start_bridge()
        records = NODE.records()  # the restarted bridge found its volume again
        self.assertEqual((len(records["stagings"]), len(records["publications"])), (1, 1),
                         records)
        delete_and_wait("pod", "app", ns)
        wait_nothing_left(self)
        delete_and_wait("pvc", "data", ns)
        wait_for("the subvolume to be deleted", lambda: CEPH.subvolumes() == [], 120)

    def test_4_no_cephx_key_in_any_log(self):
        keys = {user: CEPH.user_key(user) for user in ("admin", NODE_USER, PROVISIONER_USER)}
        logs = [os.path.join(clustertest.CLUSTER.logs, name)
                for name in sorted(os.listdir(clustertest.CLUSTER.logs))]
        logs += [os.path.join(CEPH.dir, "log", name)
                 for name in sorted(os.listdir(os.path.join(CEPH.dir, "log")))]
        found = []
        for path in logs:
            with open(path, "rb") as f:
                text = f.read()
            found += ["%s in %s" % (user, path) for user, key in keys.items()
                      if key.encode() in text]
        self.assertEqual(found, [])

    @staticmethod
    def counter_lines(ns):
        return int(exec_in(ns, "app", "sh", "-c", "wc -l < /data/counter").strip())


def set_up_provisioning():
    """The StorageClass served by flexcsi-controller and its two Secrets: the provisioner's
    (CreateVolume, DeleteVolume) and the node's (NodeStageVolume), read as external-provisioner
    reads them from the class's csi.storage.k8s.io/* parameters."""
    apply(clustertest.namespace_object(SECRETS_NS))
    create_secret(SECRETS_NS, "provisioner", {"adminID": PROVISIONER_USER,
                                              "adminKey": CEPH.user_key(PROVISIONER_USER)})
    create_secret(SECRETS_NS, "node-stage", {"adminID": NODE_USER,
                                             "adminKey": CEPH.user_key(NODE_USER)})
    prefix = "csi.storage.k8s.io/"
    apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": "cephfs"}, "provisioner": CSI_DRIVER,
           "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
           "parameters": {"clusterID": CLUSTER_ID, "fsName": "cephfs", "mounter": "fuse",
                          prefix + "provisioner-secret-name": "provisioner",
                          prefix + "provisioner-secret-namespace": SECRETS_NS,
                          prefix + "node-stage-secret-name": "node-stage",
                          prefix + "node-stage-secret-namespace": SECRETS_NS}})


def claim(ns, name):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "cephfs",
                     "resources": {"requests": {"storage": "1Gi"}}}}


def claim_bound(ns, name):
    pvc = get("pvc", name, ns)
    return pvc if pvc and pvc.get("status", {}).get("phase") == "Bound" else None


if __name__ == "__main__":
    try:
        ceph_backend.third_party_folder()
    except ceph_backend.Missing as e:
        print("SKIP: " + str(e), flush=True)
        sys.exit(clustertest.SKIP)
    clustertest.main(failfast=False)
