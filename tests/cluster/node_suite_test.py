#!/usr/bin/env python3
"""The node side on a real Kubernetes (v1.24, and v1.10.6 as cluster_node_suite_v1_10): kubelet
and kube-controller-manager exec our FlexVolume driver, flexcsi-bridge turns each call into CSI
for csi-loopback, in every driver shape csi-loopback imitates. The phases run in order on one
cluster, each for all shapes at once:

0. the bridge registers every driver on the Node (topology label, node-id annotation) and,
   where the API server serves CSINode (1.14 on), its CSINode, with exactly the RBAC of
   deploy/kubernetes/base/node/rbac.yaml: on 1.10, labels and annotation only, found out by
   discovery, never by asking for a CSINode
1. a PV used by two pods: one read-write with an fsGroup (the volume's files the group's,
   whichever side sets it: kubelet 1.10 always chowns a read-write FlexVolume itself), one
   read-only
2. kill -9 of the bridge, then of kubelet, with those pods running: they keep their data
3. both pods deleted: the volume is unmounted and detached; a new pod re-attaches it and
   finds the data intact
4. the claim grown while a pod uses it (xfs: grows online without CAP_SYS_RESOURCE); not on
   1.10, whose kubelet has no FlexVolume expansion
5. an inline FlexVolume (naming no fsType) shared by two pods
5a. on 1.10, `flexcsi migrate plan` lists those PVs with their drivers installed (known by the
   Node's node-id annotation: no CSINode there), and `apply` is refused before anything is
   written (the audit log shows no write): kubelet there cannot mount CSI PVs
6. everything deleted: no record, mount or loop device is left
"""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import wait_pod_running  # noqa: E402
import namespace  # noqa: E402
import pki  # noqa: E402
from node_plugins import SHAPES, NodePlugins, csi_driver, flex_driver  # noqa: E402

PLUGINS = None
FS_GROUP = 2345
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
BRIDGE_USER = "system:serviceaccount:flexcsi:flexcsi-node"
MIGRATE_USER = "flexcsi-migrate"  # an admin of its own, so the audit log tells its requests
# Written by the first pod, read back after restarts and re-attach.
PAYLOAD_COMMAND = "head -c 4194304 /dev/urandom > /data/payload && sha256sum /data/payload"


def setUpModule():
    global PLUGINS
    c = clustertest.start_cluster()
    # the bridge registers the drivers with the node DaemonSet's service account and RBAC
    apply(clustertest.namespace_object("flexcsi"))
    c.kubectl("apply", "-n", "flexcsi", "-f",
              os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
              "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
    # inline volumes allowed (issue #46: refused by default) for test 5's inline volume
    PLUGINS = NodePlugins(c, registration_kubeconfig=clustertest.service_account_kubeconfig(
        c, "flexcsi", "flexcsi-node"), specs={s: dict(v, inline=True) for s, v in SHAPES.items()})
    PLUGINS.start()


def tearDownModule():
    clustertest.stop_cluster(PLUGINS)


def for_each_shape(work):
    """Runs work(shape) for every shape at once; re-raises the first failure with its shape."""
    with concurrent.futures.ThreadPoolExecutor(len(SHAPES)) as pool:
        futures = {pool.submit(work, shape): shape for shape in SHAPES}
        for future in concurrent.futures.as_completed(futures):
            try:
                future.result()
            except BaseException as e:
                raise AssertionError("shape %s: %s" % (futures[future], e)) from e


def ns(shape):
    return "node-" + shape


def claim_volumes(shape, read_only=False):
    return [{"name": "data", "persistentVolumeClaim": {"claimName": "claim",
                                                       "readOnly": read_only}}]


DATA_MOUNT = [{"name": "data", "mountPath": "/data"}]
CHECKSUMS = {}


def pv_objects(shape, volume_id):
    return [
        clustertest.namespace_object(ns(shape)),
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "flex-" + shape}, "provisioner": "kubernetes.io/no-provisioner",
         "allowVolumeExpansion": True, "volumeBindingMode": "Immediate"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "flex-" + shape},
         "spec": {"capacity": {"storage": "320Mi"}, "accessModes": ["ReadWriteOnce"],
                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "flex-" + shape,
                  "flexVolume": {"driver": flex_driver(shape), "fsType": "xfs",
                                 "options": {"volumeID": volume_id}}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "claim", "namespace": ns(shape)},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "flex-" + shape,
                  "volumeName": "flex-" + shape, "resources": {"requests": {"storage": "320Mi"}}}},
    ]


def assert_fs_group(test, shape, pod, files):
    """The volume root is the fsGroup's, setgid and group-writable, as kubelet's
    SetVolumeOwnership leaves it; `files` ({path: group mode bits it must have}) are the
    group's too."""
    out = exec_in(ns(shape), pod, "stat", "-c", "%n %g %a", "/data", *files).split("\n")
    seen = {line.split()[0]: (int(line.split()[1]), int(line.split()[2], 8))
            for line in out if line.strip()}
    gid, mode = seen["/data"]
    test.assertEqual((gid, mode & 0o2070), (FS_GROUP, 0o2070),
                     "/data in %s: gid %d mode %o" % (pod, gid, mode))
    for path, bits in files.items():
        gid, mode = seen[path]
        test.assertEqual((gid, mode & bits), (FS_GROUP, bits),
                         "%s in %s: gid %d mode %o" % (path, pod, gid, mode))


def attached_volumes():
    node = get("node", clustertest.CLUSTER.node_name)
    return [v["name"] for v in node.get("status", {}).get("volumesAttached", [])]


def registered_node_ids():
    """{CSI driver: node id} as the Node's annotation has it, when the topology label is set."""
    meta = get("node", clustertest.CLUSTER.node_name)["metadata"]
    if meta.get("labels", {}).get(TOPOLOGY_KEY) != clustertest.CLUSTER.node_name:
        return {}
    return json.loads(meta.get("annotations", {}).get(NODE_ID_ANNOTATION, "{}"))


def start_again_once_unmounted(shape):
    """The pod "again" on the shape's claim, once nothing of the volume is mounted any more:
    kubelet mounts it anew (MountDevice and all)."""
    wait_for("no mount of %s's volume left" % shape,
             lambda: not [m for m in namespace.mount_points()
                          if "flex-" + shape in m or "pv-" + shape in m])
    apply(busybox_pod(ns(shape), "again", claim_volumes(shape), DATA_MOUNT, fs_group=FS_GROUP))
    wait_pod_running(ns(shape), "again")


class NodeSuite(unittest.TestCase):
    def test_0_drivers_registered_on_the_node(self):
        c = clustertest.CLUSTER
        want = {csi_driver(shape): c.node_name for shape in SHAPES}
        wait_for("every driver's label and node-id annotation",
                 lambda: registered_node_ids() == want, 60)
        served = "csinodes" in c.kubectl("api-resources", "--api-group", "storage.k8s.io",
                                         "-o", "name")
        self.assertEqual(served, c.version.serves_csinode)
        # by user: 1.10's audit events carry no userAgent
        bridge_requests = [e for e in c.audit_events()
                           if e["user"].get("username") == BRIDGE_USER]
        self.assertTrue(bridge_requests, "the audit log shows no request of the bridge")
        csinode_requests = [e["requestURI"] for e in bridge_requests
                            if "/csinodes" in e["requestURI"]]
        if served:
            wait_for("every driver's CSINode entry", lambda: sorted(
                d["name"] for d in (get("csinode", c.node_name) or {}).get("spec", {})
                .get("drivers") or []) == sorted(want), 60)
        else:
            # 1.10: discovery said no, so nothing asked for a CSINode (no 404, no RBAC need)
            self.assertEqual(csinode_requests, [])
            log = PLUGINS.procs["bridge"].tail(400)
            self.assertIn("labels and node-id annotation only", log)
            self.assertNotIn("cannot register", log)
        # the node's RBAC is enough; on 1.10 no request fails at all (a missing CSINode
        # object on a cluster that serves them is a 404 the bridge expects)
        failed = [(e["requestURI"], e["responseStatus"]["code"]) for e in bridge_requests
                  if e.get("responseStatus", {}).get("code", 200) in (401, 403)
                  or (not served and e.get("responseStatus", {}).get("code", 200) >= 400)]
        self.assertEqual(failed, [], "the bridge's requests that failed")

    def test_0_registration_edited_is_written_again(self):
        """The bridge watches its node's Node and CSINode (issue #36: no reads by the clock) and
        writes back what someone removed: the topology label and the node-id annotation, twice
        in a row. The watch is granted by the node's RBAC, so it is never refused; without it
        the bridge would read back every 60 s and restore each edit after up to a minute."""
        c = clustertest.CLUSTER
        want = {csi_driver(shape): c.node_name for shape in SHAPES}
        wait_for("every driver's label and node-id annotation",
                 lambda: registered_node_ids() == want, 60)
        restored_after = []
        for edit in ({"labels": {TOPOLOGY_KEY: None}}, {"annotations": {NODE_ID_ANNOTATION: None}}):
            c.kubectl("patch", "node", c.node_name, "--type", "merge",
                      "-p", json.dumps({"metadata": edit}))
            began = time.monotonic()
            wait_for("the registration written again after %s" % json.dumps(edit),
                     lambda: registered_node_ids() == want, 60)
            restored_after.append(time.monotonic() - began)
        print("    registration restored %s s after each edit" % ", ".join(
            "%.1f" % s for s in restored_after), flush=True)
        # both within 20 s: a 60 s timer would manage that for both edits one time in nine
        self.assertLess(max(restored_after), 20, "the bridge did not see the edits as they came")
        bridge_requests = [e for e in c.audit_events()
                           if e["user"].get("username") == BRIDGE_USER]
        watched = {e["objectRef"]["resource"] for e in bridge_requests
                   if e["verb"] == "watch" and e.get("responseStatus", {}).get("code", 200) < 400}
        self.assertIn("nodes", watched)
        self.assertEqual("csinodes" in watched, c.version.serves_csinode)

    def test_0_registration_kept_without_watch_rights(self):
        """A bridge of this release under the node Role of 0.1.0 (no list or watch: a rollout
        that has not applied the new RBAC yet) says once why it cannot watch, keeps its drivers
        registered and serves on; it reads them back by the clock (60 s) instead."""
        c = clustertest.CLUSTER
        role = get("clusterrole", "flexcsi-node")
        rules = [dict(rule, verbs=[v for v in rule["verbs"] if v not in ("list", "watch")])
                 for rule in role["rules"]]
        try:
            c.kubectl("replace", "-f", "-", input=json.dumps({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "flexcsi-node"}, "rules": rules}))
            PLUGINS.kill_bridge(signal.SIGTERM)
            PLUGINS.start_bridge()
            wait_for("the bridge saying it cannot watch", lambda: "cannot watch node" in
                     PLUGINS.procs["bridge"].tail(200), 60)
            want = {csi_driver(shape): c.node_name for shape in SHAPES}
            wait_for("the drivers registered", lambda: registered_node_ids() == want, 60)
            self.assertEqual(PLUGINS.procs["bridge"].tail(200).count("cannot watch node"), 1)
        finally:
            c.kubectl("apply", "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
            PLUGINS.kill_bridge(signal.SIGTERM)
            PLUGINS.start_bridge()

    def test_1_two_pods_rw_with_fsgroup_and_read_only(self):
        def run(shape):
            volume_id = PLUGINS.create_volume(shape, "pv-" + shape)
            apply(pv_objects(shape, volume_id))
            apply(busybox_pod(ns(shape), "writer", claim_volumes(shape), DATA_MOUNT,
                              fs_group=FS_GROUP))
            wait_pod_running(ns(shape), "writer")
            out = exec_in(ns(shape), "writer", "sh", "-c", PAYLOAD_COMMAND)
            CHECKSUMS[shape] = out.split()[0]
            # fsGroup: the volume root belongs to the group and the pod's new files get it
            assert_fs_group(self, shape, "writer", {"/data/payload": 0o040})
            apply(busybox_pod(ns(shape), "reader", claim_volumes(shape, read_only=True),
                              DATA_MOUNT))
            wait_pod_running(ns(shape), "reader")
            out = exec_in(ns(shape), "reader", "sha256sum", "/data/payload")
            self.assertEqual(out.split()[0], CHECKSUMS[shape])
            denied = exec_in(ns(shape), "reader", "sh", "-c", "echo x > /data/nope", check=False)
            self.assertFalse(exec_in(ns(shape), "reader", "sh", "-c",
                                     "test -e /data/nope && echo exists || true").strip(),
                             "a read-only pod could write: %s" % denied)
            # the writer still writes after the read-only pod joined
            exec_in(ns(shape), "writer", "sh", "-c", "echo more > /data/more")
        for_each_shape(run)

    def test_2_bridge_and_kubelet_killed_with_pods_running(self):
        PLUGINS.kill_bridge(signal.SIGKILL)
        PLUGINS.start_bridge()
        clustertest.CLUSTER.restart("kubelet", signal.SIGKILL)
        wait_for("node Ready after kubelet restart", clustertest.CLUSTER.node_ready, 120)

        def run(shape):
            for pod in ("writer", "reader"):
                wait_pod_running(ns(shape), pod)
                out = exec_in(ns(shape), pod, "sha256sum", "/data/payload")
                self.assertEqual(out.split()[0], CHECKSUMS[shape], pod)
            exec_in(ns(shape), "writer", "sh", "-c", "echo after-restart > /data/after")
        for_each_shape(run)

    def test_3_detach_then_reattach_with_data_intact(self):
        def run(shape):
            for pod in ("writer", "reader"):
                delete_and_wait("pod", pod, ns(shape))
            if SHAPES[shape]["attach"]:
                wait_for("volume of %s detached" % shape,
                         lambda: not any(flex_driver(shape) in v for v in attached_volumes()),
                         timeout=180)
            start_again_once_unmounted(shape)
            out = exec_in(ns(shape), "again", "sha256sum", "/data/payload")
            self.assertEqual(out.split()[0], CHECKSUMS[shape])
            self.assertEqual(exec_in(ns(shape), "again", "cat", "/data/after").strip(),
                             "after-restart")
            # mounted again for a pod with an fsGroup: every file is the group's, read-write
            assert_fs_group(self, shape, "again", {"/data/payload": 0o060, "/data/more": 0o060,
                                                   "/data/after": 0o060})
        for_each_shape(run)

    # in use from 1.15; on 1.13-1.14 at the pod's next mount
    @clustertest.needs("expands_flexvolume", "FlexVolume PVs expand from Kubernetes 1.13 on")
    def test_4_claim_grows_while_in_use(self):
        def run(shape):
            before = int(exec_in(ns(shape), "again", "df", "-k", "/data").split()[-5])
            clustertest.CLUSTER.kubectl("patch", "pvc", "claim", "-n", ns(shape), "--type",
                                        "merge", "-p",
                                        '{"spec":{"resources":{"requests":{"storage":"400Mi"}}}}')
            if not clustertest.CLUSTER.version.expands_in_use:
                # The expand controller grows the volume; kubelet grows its file system only
                # when it mounts the volume anew: the pod is made again once nothing of it is
                # mounted any more.
                wait_for("%s's PV to be grown" % shape,
                         lambda: get("pv", get("pvc", "claim", ns(shape))["spec"]["volumeName"])
                         ["spec"]["capacity"]["storage"] == "400Mi", timeout=180)
                delete_and_wait("pod", "again", ns(shape))
                start_again_once_unmounted(shape)
            wait_for("claim of %s to report 400Mi" % shape,
                     lambda: get("pvc", "claim", ns(shape))["status"]["capacity"]["storage"]
                     == "400Mi", timeout=180)
            after = wait_for("the file system in the pod to grow",
                             lambda: (lambda n: n if n > before else None)(
                                 int(exec_in(ns(shape), "again", "df", "-k",
                                             "/data").split()[-5])))
            self.assertGreater(after, before + 60 * 1024)
            out = exec_in(ns(shape), "again", "sha256sum", "/data/payload")
            self.assertEqual(out.split()[0], CHECKSUMS[shape])
        for_each_shape(run)

    def test_5_inline_volume_shared_by_two_pods(self):
        def run(shape):
            volume_id = PLUGINS.create_volume(shape, "inline-" + shape)
            # no fsType: kubelet sends an empty one, and the rule's default (xfs) applies
            inline = [{"name": "data", "flexVolume": {"driver": flex_driver(shape),
                                                      "options": {"volumeID": volume_id}}}]
            apply(busybox_pod(ns(shape), "inline-a", inline, DATA_MOUNT,
                              command="echo from-a > /data/a; sleep 3600"))
            wait_pod_running(ns(shape), "inline-a")
            if not SHAPES[shape]["attach"]:
                # issue #46: an attach:false inline volume is staged for each pod alone, and
                # csi-loopback stages a volume once: the second pod comes after the first
                wait_for("a's file", lambda: exec_in(ns(shape), "inline-a", "cat", "/data/a",
                                                     check=False).strip() == "from-a")
                delete_and_wait("pod", "inline-a", ns(shape))
            apply(busybox_pod(ns(shape), "inline-b", inline, DATA_MOUNT))
            wait_pod_running(ns(shape), "inline-b")
            self.assertEqual(exec_in(ns(shape), "inline-b", "cat", "/data/a").strip(), "from-a")
            for pod in ("inline-a", "inline-b"):
                delete_and_wait("pod", pod, ns(shape))
        for_each_shape(run)

    @clustertest.needs("refuses_csi_migration", "migrate apply moves PVs here "
                       "(cluster_migrate_suite)")
    def test_5a_migrate_apply_refused_where_kubelet_cannot_mount_csi(self):
        c = clustertest.CLUSTER
        rules = os.path.join(PLUGINS.dir, "migrate-rules.yaml")
        with open(rules, "w") as f:
            json.dump({"flexVolumeRules": [
                {"flexDriver": flex_driver(shape), "csiDriver": csi_driver(shape),
                 "volumeHandle": {"fromOption": "volumeID"}} for shape in SHAPES]}, f)
        journal = os.path.join(PLUGINS.dir, "migrate-journal")
        pvs = {shape: get("pv", "flex-" + shape) for shape in SHAPES}
        crt, key = c.pki.leaf("migrate", MIGRATE_USER, "system:masters")
        kubeconfig = pki.write_kubeconfig(os.path.join(PLUGINS.dir, "migrate.kubeconfig"),
                                          c.server, c.ca, crt, key, user=MIGRATE_USER)
        seen = len(c.audit_events())

        def migrate(*args):
            return subprocess.run([PLUGINS.flexcsi_bin, "migrate", *args, "--rules", rules,
                                   "--kubeconfig", kubeconfig], capture_output=True,
                                  text=True, timeout=120)
        plan = migrate("plan", "-o", "json")
        self.assertIn(plan.returncode, (0, 3), plan.stderr)
        verdicts = {v["pv"]: (v["verdict"], v["reason"])
                    for v in json.loads(plan.stdout)["volumes"]}
        for shape in SHAPES:
            # No CSINode before 1.14: the drivers count as installed by the Node's node-id
            # annotation (the bridge's here, kubelet's on a cluster with node-driver-registrar).
            self.assertIn(verdicts["flex-" + shape][0], ("can-move", "in-use"),
                          verdicts["flex-" + shape])
        self.assertIn("apply will refuse", plan.stderr)
        for args in (["--all"], ["--pv", "flex-default", "--dry-run"]):
            applied = migrate("apply", *args, "--journal", journal, "--yes")
            print("\nflexcsi migrate apply %s: exit %d: %s" % (
                " ".join(args), applied.returncode, applied.stderr.strip()), flush=True)
            self.assertEqual(applied.returncode, 3, applied.stdout + applied.stderr)
            self.assertIn("refused", applied.stderr)
            self.assertIn("cannot mount CSI PVs", applied.stderr)
            self.assertIn(str(c.version), applied.stderr)
        self.assertFalse(os.path.exists(journal), "the refused apply opened a journal")
        events = [e for e in c.audit_events()[seen:] if e["user"].get("username") == MIGRATE_USER]
        writes = [(e["verb"], e["requestURI"]) for e in events
                  if e["verb"] in ("create", "update", "patch", "delete", "deletecollection")]
        self.assertEqual(writes, [], "the refused apply wrote")
        self.assertIn("/version", [e["requestURI"] for e in events],
                      "the refusal came from the server's version")
        for shape, pv in pvs.items():
            now = get("pv", "flex-" + shape)
            self.assertEqual(now["metadata"]["resourceVersion"],
                             pv["metadata"]["resourceVersion"], shape)

    def test_6_nothing_left_afterwards(self):
        def run(shape):
            delete_and_wait("pod", "again", ns(shape))
            delete_and_wait("pvc", "claim", ns(shape))
            delete_and_wait("pv", "flex-" + shape)
            if SHAPES[shape]["attach"]:
                wait_for("every volume of %s detached" % shape,
                         lambda: not any(flex_driver(shape) in v for v in attached_volumes()),
                         timeout=180)
        for_each_shape(run)
        PLUGINS.wait_nothing_left()


if __name__ == "__main__":
    clustertest.main()
