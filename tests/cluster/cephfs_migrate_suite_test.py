#!/usr/bin/env python3
"""`flexcsi migrate` to a real third-party CSI driver on Kubernetes v1.24
(cluster_cephfs_migrate_suite): ceph-csi v3.8.1's CephFS driver against a real Ceph, both from
the folder FLEXCSI_THIRD_PARTY_CSI names (without it the suite skips with one line). The same
cephcsi serves both sides: the bridge (profiles drivers/profiles/rook-cephfs.yaml and cephfs.yaml)
for the FlexVolume PVs, and kubelet's own CSI plugin (csi-node-driver-registrar, CSIDriver
`attachRequired: false`) for the CSI PVs migrate makes.

1. a rook CephFS FlexVolume PV (one-key mountSecret in the pod's namespace, mountUser) and a
   flexcsi/cephfs PV flexcsi-controller provisions (Opaque node-stage Secret named in options),
   each under a Deployment that wrote a payload; `migrate apply --scale-down` moves both to
   ceph-csi CSI PVs mounted by kubelet's CSI plugin, same checksums. The rook PV's rule derives
   userID/userKey, so migrate writes `<pv>-flexcsi-secret` (Opaque, userID/userKey) and the CSI
   PV names it; `plan` said so, without the key. `migrate rollback` of the rook PV: the
   FlexVolume PV again through the bridge, same checksum, the written Secret gone, the user's
   kept
2. provisioning handed over (docs/migration.md): flexcsi-controller stopped, the real
   csi-provisioner started for cephfs.csi.ceph.com, `migrate apply --storage-class` swaps the
   class for its twin; a new claim of it is provisioned by csi-provisioner through cephcsi's
   CreateVolume (a CSI PV, a new subvolume), deleted with its claim
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
from cephcsi_node import CSI_DRIVER, ETC_PATHS, CephCsiNode, profile  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from cluster import Process  # noqa: E402
import kubelet_csi  # noqa: E402
import migrate_run  # noqa: E402
import namespace  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLUSTER_ID = "rook-ceph"
SECRETS_NS = "ceph-csi"
NS = "moving"
NODE_USER = "csi-cephfs-node"
PROVISIONER_USER = "csi-cephfs-provisioner"
ROOK_PATH = "/rook/moving"

CEPH = None
NODE = None
CONTROLLER = None
SIDECARS = []
RULES = None
JOURNAL = None
CHECKSUMS = {}  # claim -> the payload's sha256 as first read


def setUpModule():
    c = clustertest.start_cluster(host_paths=ETC_PATHS)
    try:
        set_up(c)
    except BaseException:
        # unittest runs no tearDownModule after a failed setUpModule
        try:
            tearDownModule()
        except Exception as e:  # noqa: BLE001 - the set-up's own error is the one to report
            print("teardown after the failed set-up: %s" % e, flush=True)
        raise


def set_up(c):
    global CEPH, NODE, CONTROLLER, RULES, JOURNAL
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
        started.result()
    clustertest.timed("Ceph up beside the cluster's setup", time.monotonic() - began)
    NODE = CephCsiNode(c, CEPH, os.path.join(unpacked, "bin", "cephcsi"), CLUSTER_ID,
                       ["rook-cephfs", "cephfs"], kubeconfig)
    NODE.start()
    # kubelet's own CSI plugin reaches the same cephcsi
    SIDECARS.append(kubelet_csi.registrar(c, NODE.csi_socket))
    SIDECARS[-1].start()
    apply({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
           "metadata": {"name": CSI_DRIVER}, "spec": {"attachRequired": False}})
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
    # migrate's rules: the provisioned profile first (the class's twin takes the first entry
    # that maps to the CSI driver)
    RULES = os.path.join(NODE.dir, "rules.json")
    with open(RULES, "w") as f:
        json.dump({"flexVolumeRules": [{"flexDriver": p["flexDriver"], **p["rule"]}
                                       for p in (profile("cephfs"), profile("rook-cephfs"))]}, f)
    JOURNAL = os.path.join(NODE.dir, "journal")
    set_up_provisioning()
    wait_for("kubelet to register %s (CSINode)" % CSI_DRIVER,
             lambda: kubelet_csi.registered(c.node_name, CSI_DRIVER), 60)


class _Backend:
    """Stops the sidecars, flexcsi-controller, the bridge and cephcsi, every ceph-fuse of the
    test, then Ceph, each step even when one before it failed."""

    def stop(self):
        try:
            for component in (*SIDECARS, CONTROLLER, NODE):
                if component is not None:
                    try:
                        component.stop()
                    except Exception as e:  # noqa: BLE001 - the others still stop
                        print("stopping %s: %s" % (component, e), flush=True)
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
    """An Opaque Secret from `data`, on kubectl's stdin (never printed, never in an annotation)."""
    clustertest.CLUSTER.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
         "type": "Opaque", "stringData": data}))


def set_up_provisioning():
    """The class flexcsi-controller serves, with its provisioner and node-stage Secrets as
    external-provisioner's users write them."""
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


def claim(ns, name, storage_class="cephfs", volume=None):
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def claim_bound(ns, name):
    pvc = get("pvc", name, ns)
    return pvc if pvc and pvc.get("status", {}).get("phase") == "Bound" else None


def payload_deployment(ns, name):
    """One pod writing 2 MiB to /data/payload on claim `name` once (a later pod keeps it)."""
    pod = busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim": {"claimName": name}}],
                      [{"name": "data", "mountPath": "/data"}],
                      command="test -f /data/payload || head -c 2097152 /dev/urandom "
                              "> /data/payload.tmp && mv /data/payload.tmp /data/payload; "
                              "sleep 3600")
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]}}}


def running_pod(ns, app):
    pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", ns, "-l", "app=" + app)["items"]
    ready = [p for p in pods if not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in p.get("status", {}).get("conditions", []))]
    return ready[0]["metadata"]["name"] if ready else None


def checksum(app):
    pod = wait_for("a running pod of %s" % app, lambda: running_pod(NS, app), 180)
    return wait_for("the payload of %s" % app, lambda: exec_in(
        NS, pod, "sh", "-c", "test -f /data/payload && sha256sum /data/payload || true")
        .split()[:1], 60)[0]


def migrate(*args):
    c = clustertest.CLUSTER
    return migrate_run.migrate(NODE.flexcsi_bin, RULES, c.kubeconfig, *args, journal=JOURNAL)


def csi_mounts():
    """Mounts under the kubelet root made for kubelet's CSI plugin (staging and publication)."""
    root = clustertest.CLUSTER.kubelet_root + "/"
    return [m for m in namespace.mount_points() if m.startswith(root) and (
        "/kubernetes.io~csi/" in m or "/plugins/kubernetes.io/csi/" in m)]


class CephfsMigrateSuite(unittest.TestCase):
    def test_1_rook_and_provisioned_pvs_move_to_ceph_csi_and_back(self):
        CEPH.mkdir(ROOK_PATH)  # a static volume's rootPath exists, as under rook
        apply(clustertest.namespace_object(NS))
        create_secret(NS, "rook-user", {"mykey": CEPH.user_key(NODE_USER)})
        apply([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "rook-moving"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                         "flexVolume": {"driver": "ceph.rook.io/rook", "fsType": "ceph",
                                        "options": {"fsName": "cephfs",
                                                    "clusterNamespace": CLUSTER_ID,
                                                    "path": ROOK_PATH, "mountUser": NODE_USER,
                                                    "mountSecret": "rook-user"}}}},
               claim(NS, "rook", "", "rook-moving"), claim(NS, "dyn")])
        wait_for("both claims bound", lambda: claim_bound(NS, "rook") and claim_bound(NS, "dyn"),
                 120)
        dyn_pv = get("pvc", "dyn", NS)["spec"]["volumeName"]
        self.assertEqual(get("pv", dyn_pv)["spec"]["flexVolume"]["driver"], "flexcsi/cephfs")
        apply([payload_deployment(NS, "rook"), payload_deployment(NS, "dyn")])
        for app in ("rook", "dyn"):
            CHECKSUMS[app] = checksum(app)

        plan = subprocess.run(
            [NODE.flexcsi_bin, "migrate", "plan", "-n", NS, "--rules", RULES, "--kubeconfig",
             clustertest.CLUSTER.kubeconfig], capture_output=True, text=True)
        print("\n" + plan.stdout, flush=True)
        self.assertIn("%s/rook-moving-flexcsi-secret" % NS, plan.stdout)
        self.assertNotIn(CEPH.user_key(NODE_USER), plan.stdout + plan.stderr)

        moved = migrate("apply", "--pv", "rook-moving", "--pv", dyn_pv, "--scale-down")
        self.assertEqual(moved.returncode, 0, moved.stdout + moved.stderr)
        rook_csi = get("pv", "rook-moving")["spec"]["csi"]
        self.assertEqual((rook_csi["driver"], rook_csi["volumeHandle"]),
                         (CSI_DRIVER, "rook-moving"))
        self.assertEqual(rook_csi["nodeStageSecretRef"],
                         {"name": "rook-moving-flexcsi-secret", "namespace": NS})
        written = get("secret", "rook-moving-flexcsi-secret", NS)
        self.assertEqual((written["type"], sorted(written["data"])),
                         ("Opaque", ["userID", "userKey"]))
        self.assertEqual(written["metadata"]["labels"]["app.kubernetes.io/managed-by"],
                         "flexcsi-migrate")
        dyn_csi = get("pv", dyn_pv)["spec"]["csi"]
        self.assertEqual(dyn_csi["nodeStageSecretRef"], {"name": "node-stage",
                                                         "namespace": SECRETS_NS})
        for app in ("rook", "dyn"):
            self.assertEqual(checksum(app), CHECKSUMS[app], app)
        # mounted by kubelet's CSI plugin, not through the bridge
        self.assertTrue(csi_mounts())
        wait_for("the bridge to hold no record", lambda: not any(
            NODE.records()[k] for k in ("stagings", "publications")), 90)

        back = migrate("rollback", "--pv", "rook-moving", "--scale-down")
        self.assertEqual(back.returncode, 0, back.stdout + back.stderr)
        self.assertEqual(get("pv", "rook-moving")["spec"]["flexVolume"]["driver"],
                         "ceph.rook.io/rook")
        self.assertIsNone(get("secret", "rook-moving-flexcsi-secret", NS))
        self.assertIsNotNone(get("secret", "rook-user", NS))
        self.assertEqual(checksum("rook"), CHECKSUMS["rook"])
        wait_for("the bridge to stage the rook PV again", lambda: NODE.records()["stagings"], 60)
        for out in (moved, back):
            self.assertNotIn(CEPH.user_key(NODE_USER), out.stdout + out.stderr)

    def test_2_provisioning_handed_over_to_csi_provisioner(self):
        c = clustertest.CLUSTER
        CONTROLLER.stop()
        provisioner = Process("csi-provisioner", [
            os.path.join(c.bin, "csi-provisioner"), "--csi-address", NODE.csi_socket,
            "--kubeconfig", c.kubeconfig, *c.version.csi_provisioner_without_leader_election,
            "--timeout", "60s"], os.path.join(c.logs, "csi-provisioner.log"))
        provisioner.start()
        SIDECARS.append(provisioner)
        swapped = migrate("apply", "--storage-class", "cephfs")
        self.assertEqual(swapped.returncode, 0, swapped.stdout + swapped.stderr)
        sc = get("storageclass", "cephfs")
        self.assertEqual(sc["metadata"]["annotations"]["flexcsi.io/migrated-from-provisioner"],
                         CSI_DRIVER)
        before = set(CEPH.subvolumes())
        apply(claim(NS, "fresh"))
        pvc = wait_for("csi-provisioner to provision the claim",
                       lambda: claim_bound(NS, "fresh"), 120)
        pv = get("pv", pvc["spec"]["volumeName"])
        self.assertEqual(pv["spec"]["csi"]["driver"], CSI_DRIVER)
        self.assertEqual(pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
                         CSI_DRIVER)
        made = set(CEPH.subvolumes()) - before
        self.assertEqual(len(made), 1, made)
        self.assertIn(pv["spec"]["csi"]["volumeAttributes"]["subvolumeName"], made)
        delete_and_wait("pvc", "fresh", NS)
        wait_for("csi-provisioner to delete the subvolume",
                 lambda: set(CEPH.subvolumes()) == before, 120)


if __name__ == "__main__":
    try:
        ceph_backend.third_party_folder()
    except ceph_backend.Missing as e:
        print("SKIP: " + str(e), flush=True)
        sys.exit(clustertest.SKIP)
    clustertest.main(failfast=True)
