#!/usr/bin/env python3
"""The real JuiceFS CSI driver (v0.24.6, `--by-process`, juicefs 1.1.6, metadata in redis-server)
behind flexcsi on a real Kubernetes v1.24, serving PersistentVolumes written for the classic
JuiceFS FlexVolume driver `juicedata/juicefs` unchanged, through drivers/profiles/juicefs.yaml
(its endpoint and the cache dir alone made to fit the test). JuiceFS comes from
$FLEXCSI_THIRD_PARTY_CSI (juicefs_backend.py); without it the suite is skipped with one line.

The classic setup is statically provisioned: PVs with `flexVolume: {driver: juicedata/juicefs,
options: {name: <file system>}, secretRef: {name}}` and a Secret of type juicedata/juicefs;
there is no StorageClass to move.

1. two pods on one such PV through flexexec -> flexcsi-bridge -> JuiceFS CSI: one writes, the
   other reads the same bytes, and so does an independent `juicefs mount` of the file system;
   once the pods are gone no mount of it and no juicefs process is left
2. flexcsi-bridge and juicefs-csi-driver killed with -9 while a pod has the volume: the pod
   keeps reading and writing it; both started again, the pod deleted: nothing left
3. `flexcsi migrate apply --scale-down` moves a Deployment's PV to a CSI PV of csi.juicefs.com
   (the driver registered with kubelet by csi-node-driver-registrar) that kubelet's own CSI
   plugin mounts, checksum unchanged; `migrate rollback --scale-down` takes it back to the
   FlexVolume PV, checksum unchanged
4. the metadata engine (redis-server) lost while a pod's volume is being mounted: kubelet
   reports the failed mount (its message without the Secret's meta URL) and retries; redis back,
   the pod runs and writes, one mount.juicefs serves it, and nothing is left once it is gone
"""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from cluster import NODE_IP  # noqa: E402
from clustertest import apply, busybox_pod, exec_in, get, wait_for  # noqa: E402
import juicefs_backend  # noqa: E402
import kubelet_csi  # noqa: E402
import migrate_run  # noqa: E402
from profile_bridge import ProfileBridge, load_profile, rules_of  # noqa: E402

NS = "jfs"
SECRET = "juicefs-secret"
CSI_DRIVER = "csi.juicefs.com"
JFS = None
BRIDGE = None
SIDECARS = []
RULES = None


def setUpModule():
    global JFS, BRIDGE, RULES
    # the suite's own network namespace (clustertest.main below): loopback only, down at first;
    # kubelet gives its node the addresses of --node-ip only when an interface has it, and the
    # API server reaches kubelet (exec) through them
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", NODE_IP + "/32", "dev", "lo"], check=True)
    c = clustertest.start_cluster(host_paths=juicefs_backend.HOST_PATHS)
    try:
        JFS = juicefs_backend.JuiceFs(c, c.node_name)
        JFS.start()
        entry = load_profile("juicefs")
        entry["csiEndpoint"] = "unix://" + JFS.socket
        # the cache of the driver's mounts under the test dir, not in the shared /var/jfsCache
        static = entry["rule"]["attributes"]["static"]
        static["mountOptions"] += ",cache-dir=" + os.path.join(JFS.dir, "cache-csi")
        BRIDGE = ProfileBridge(c, entry)
        BRIDGE.start()
        RULES = os.path.join(c.dir, "rules.json")
        with open(RULES, "w") as f:
            json.dump(rules_of(entry), f)
        apply(clustertest.namespace_object(NS))
        # `create`, not `apply`: apply would keep the data in an annotation
        c.kubectl("create", "-f", "-", input=json.dumps(classic_secret()))
        SIDECARS.append(kubelet_csi.registrar(c, JFS.socket))
        SIDECARS[-1].start()
        apply({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
               "metadata": {"name": CSI_DRIVER},
               "spec": {"attachRequired": False, "podInfoOnMount": True}})
        wait_for("kubelet to register %s (CSINode)" % CSI_DRIVER,
                 lambda: kubelet_csi.registered(c.node_name, CSI_DRIVER), 60)
    except BaseException:
        # unittest skips tearDownModule after a failed setUpModule; the start's error stays
        # the one reported
        try:
            tearDownModule()
        except BaseException as e:  # noqa: BLE001
            print("teardown after the failed start: %s" % e, flush=True)
        raise


def tearDownModule():
    clustertest.stop_cluster(*SIDECARS, BRIDGE, JFS)


def classic_secret():
    """The classic driver's Secret: typed with the driver's name, or kubelet will not hand it
    to the FlexVolume driver."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "juicedata/juicefs",
            "metadata": {"name": SECRET, "namespace": NS}, "stringData": JFS.secret_data()}


def classic_pv(name, claim):
    """A PersistentVolume as written for the classic JuiceFS FlexVolume driver."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "claimRef": {"namespace": NS, "name": claim},
                     "flexVolume": {"driver": "juicedata/juicefs",
                                    "secretRef": {"name": SECRET},
                                    "options": {"name": juicefs_backend.FS_NAME}}}}


def claim(name, pv):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                     "volumeName": pv, "resources": {"requests": {"storage": "10Gi"}}}}


def bound_pv_and_claim(pv, name):
    apply([classic_pv(pv, name), claim(name, pv)])
    wait_for("claim %s to bind" % name, lambda: clustertest.claims_bound(NS, [name]), 60)


def remove_later(test, kind, name):
    """Deletes the object after `test` whatever its verdict, so that the next test starts
    without its pods (delete_and_wait of something already gone returns at once)."""
    test.addCleanup(lambda: clustertest.get(kind, name, NS) is None
                    or clustertest.delete_and_wait(kind, name, NS))


def both_running():
    if not JFS.driver.alive():
        JFS.start_driver()
    if not BRIDGE.proc.alive():
        BRIDGE.start_bridge()


def pod_on(name, claim_name, command="sleep 3600"):
    return busybox_pod(NS, name, [{"name": "data",
                                   "persistentVolumeClaim": {"claimName": claim_name}}],
                       [{"name": "data", "mountPath": "/data"}], command=command)


def sha256_in(pod, path):
    return exec_in(NS, pod, "sha256sum", path).split()[0]


def volume_mounts(kind):
    """JuiceFS mounts kubelet made for pods through `kind` (FlexVolume: juicedata~juicefs, CSI:
    kubernetes.io~csi)."""
    return [m for m in JFS.mounts() if "/volumes/%s/" % kind in m]


def check_mount_options(test):
    """Every mount.juicefs the driver runs for the pods was told not to report usage and to
    cache under the test dir (the profile's mountOptions, through the volume context)."""
    options = JFS.mount_options()
    test.assertTrue(options, "no mount.juicefs runs")
    for pid, value in options.items():
        flags = value.split(",")
        test.assertIn("no-usage-report", flags, value)
        test.assertIn("cache-dir=" + os.path.join(JFS.dir, "cache-csi"), flags, value)


def wait_nothing_left():
    """No mount of the file system and no juicefs process of the suite (the driver's
    mount.juicefs children included), and no bridge record."""
    try:
        wait_for("no JuiceFS mount", lambda: not JFS.mounts(), 60)
        wait_for("no juicefs process of the suite", lambda: not JFS.processes(), 60)
        wait_for("the bridge to hold no record", lambda: not any(
            BRIDGE.records()[k] for k in ("attachments", "stagings", "publications")), 60)
    except AssertionError as e:
        raise AssertionError("%s: mounts %s, juicefs processes %s, bridge records %s" % (
            e, JFS.mounts(), JFS.processes(), BRIDGE.records())) from None


def in_file_system(relative):
    """sha256 of a file as an independent `juicefs mount` of the whole file system shows it."""
    target = os.path.join(JFS.dir, "by-hand")
    JFS.mount_by_hand(target)
    try:
        return clustertest.run(["sha256sum", os.path.join(target, relative)]).split()[0]
    finally:
        JFS.umount(target)


class JuiceFsSuite(unittest.TestCase):
    def test_1_classic_pv_is_written_and_read_through_juicefs_csi(self):
        bound_pv_and_claim("jfs-shared", "shared")
        for pod in ("writer", "reader"):
            remove_later(self, "pod", pod)
        apply(pod_on("writer", "shared", "head -c 4194304 /dev/urandom > /data/shared.bin && "
                                         "sleep 3600"))
        clustertest.wait_pod_running(NS, "writer")
        written = wait_for("the writer's file", lambda: sha256_in("writer", "/data/shared.bin"))
        apply(pod_on("reader", "shared"))
        clustertest.wait_pod_running(NS, "reader")
        self.assertEqual(sha256_in("reader", "/data/shared.bin"), written)
        self.assertEqual(len(volume_mounts("juicedata~juicefs")), 2, JFS.mounts())
        publications = BRIDGE.records()["publications"]
        self.assertEqual({p["csiDriver"] for p in publications}, {CSI_DRIVER}, publications)
        check_mount_options(self)
        # a static volume: the PV is the file system's root
        self.assertEqual(in_file_system("shared.bin"), written)
        for pod in ("writer", "reader"):
            clustertest.delete_and_wait("pod", pod, NS)
        wait_nothing_left()

    def test_2_pod_keeps_its_data_when_bridge_and_driver_die(self):
        bound_pv_and_claim("jfs-kill", "kill")
        remove_later(self, "pod", "survivor")
        self.addCleanup(both_running)  # runs first: the pod's unmount needs them
        apply(pod_on("survivor", "kill", "head -c 1048576 /dev/urandom > /data/survivor.bin "
                                         "&& sleep 3600"))
        clustertest.wait_pod_running(NS, "survivor")
        written = wait_for("the file", lambda: sha256_in("survivor", "/data/survivor.bin"))
        BRIDGE.kill()
        JFS.kill_driver()
        self.assertEqual(sha256_in("survivor", "/data/survivor.bin"), written)
        exec_in(NS, "survivor", "sh", "-c", "echo after > /data/after-kill")
        self.assertEqual(exec_in(NS, "survivor", "cat", "/data/after-kill"), "after\n")
        JFS.start_driver()
        BRIDGE.start_bridge()
        clustertest.delete_and_wait("pod", "survivor", NS)
        wait_nothing_left()

    def test_3_migrate_moves_the_pv_to_csi_and_back(self):
        c = clustertest.CLUSTER
        bound_pv_and_claim("jfs-moved", "moved")
        pod = pod_on("moved", "moved", "test -f /data/payload || head -c 2097152 /dev/urandom "
                                       "> /data/payload; sleep 3600")
        remove_later(self, "deployment", "moved")
        apply({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "moved", "namespace": NS},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "moved"}},
                        "template": {"metadata": {"labels": {"app": "moved"}},
                                     "spec": pod["spec"]}}})
        before = wait_for("the payload", lambda: self.payload_checksum())
        self.assertTrue(volume_mounts("juicedata~juicefs"))
        journal = os.path.join(c.dir, "journal")

        done = migrate_run.migrate(BRIDGE.flexcsi_bin, RULES, c.kubeconfig, "apply", "--pv",
                                   "jfs-moved", "--scale-down", journal=journal)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        csi = get("pv", "jfs-moved")["spec"]["csi"]
        self.assertEqual((csi["driver"], csi["volumeHandle"]),
                         (CSI_DRIVER, juicefs_backend.FS_NAME), csi)
        self.assertEqual(csi["nodePublishSecretRef"], {"name": SECRET, "namespace": NS})
        self.assertIn("no-usage-report", csi["volumeAttributes"]["mountOptions"].split(","))
        self.assertEqual(wait_for("the payload on the CSI PV", lambda: self.payload_checksum()),
                         before)
        self.assertTrue(volume_mounts("kubernetes.io~csi"), JFS.mounts())
        self.assertFalse(volume_mounts("juicedata~juicefs"), JFS.mounts())
        check_mount_options(self)

        done = migrate_run.migrate(BRIDGE.flexcsi_bin, RULES, c.kubeconfig, "rollback", "--pv",
                                   "jfs-moved", "--scale-down", journal=journal)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(get("pv", "jfs-moved")["spec"]["flexVolume"],
                         classic_pv("jfs-moved", "moved")["spec"]["flexVolume"])
        self.assertEqual(wait_for("the payload on the FlexVolume PV again",
                                  lambda: self.payload_checksum()), before)
        self.assertTrue(volume_mounts("juicedata~juicefs"), JFS.mounts())
        self.assertFalse(volume_mounts("kubernetes.io~csi"), JFS.mounts())
        clustertest.delete_and_wait("deployment", "moved", NS)
        wait_for("the Deployment's pods to go", lambda: not clustertest.CLUSTER.kubectl_json(
            "get", "pods", "-n", NS, "-l", "app=moved")["items"], 120)
        wait_nothing_left()

    def test_4_mount_waits_for_lost_metadata_engine_and_leaks_nothing(self):
        bound_pv_and_claim("jfs-redis", "redis-lost")
        remove_later(self, "pod", "patient")
        JFS.stop_redis()
        try:
            apply(pod_on("patient", "redis-lost", "echo mounted > /data/patient; sleep 3600"))
            events = wait_for("kubelet's failed mount in the pod's events", lambda: (
                lambda e: e if "FailedMount" in e else None)(clustertest.pod_events(NS, "patient")),
                180)
            print("\npod events with redis-server down:\n%s" % events, flush=True)
            # the meta URL is the Secret's `metaurl`: a credential where redis has a password
            self.assertNotIn(JFS.meta_url, events)
        finally:
            JFS.start_redis()
        began = time.monotonic()
        clustertest.wait_pod_running(NS, "patient", timeout=240)
        clustertest.timed("redis back to a running pod", time.monotonic() - began)
        self.assertEqual(exec_in(NS, "patient", "cat", "/data/patient"), "mounted\n")
        # the failed attempts left no mount.juicefs and no record behind
        self.assertEqual(len(JFS.mount_options()), 1, JFS.mount_options())
        self.assertEqual(len(BRIDGE.records()["publications"]), 1, BRIDGE.records())
        clustertest.delete_and_wait("pod", "patient", NS)
        wait_nothing_left()

    @staticmethod
    def payload_checksum():
        """sha256 of /data/payload in the Deployment's running pod, or None."""
        pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l", "app=moved")
        ready = [p["metadata"]["name"] for p in pods["items"]
                 if not p["metadata"].get("deletionTimestamp") and any(
                     c["type"] == "Ready" and c["status"] == "True"
                     for c in p.get("status", {}).get("conditions", []))]
        return sha256_in(ready[0], "/data/payload") if ready else None


if __name__ == "__main__":
    reason = juicefs_backend.missing_reason()
    if reason:
        print("SKIP: " + reason, flush=True)
        sys.exit(clustertest.SKIP)
    # a network namespace of its own: JuiceFS must reach nothing but loopback
    clustertest.main(pod_network=True, failfast=False)
