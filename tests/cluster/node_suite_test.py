#!/usr/bin/env python3
"""The node side on a real Kubernetes v1.24: kubelet and kube-controller-manager exec our
FlexVolume driver, flexcsi-bridge turns each call into CSI for csi-loopback, in every driver
shape csi-loopback imitates. The phases run in order on one cluster, each for all shapes at once:

1. a PV used by two pods: one read-write with an fsGroup, one read-only
2. kill -9 of the bridge, then of kubelet, with those pods running: they keep their data
3. both pods deleted: the volume is unmounted and detached; a new pod re-attaches it and
   finds the data intact
4. the claim grown while a pod uses it (xfs: grows online without CAP_SYS_RESOURCE)
5. an inline FlexVolume shared by two pods
6. everything deleted: no record, mount or loop device is left
"""
import concurrent.futures
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import wait_pod_running  # noqa: E402
import namespace  # noqa: E402
from node_plugins import SHAPES, NodePlugins, flex_driver  # noqa: E402

PLUGINS = None
FS_GROUP = 2345
# Written by the first pod, read back after restarts and re-attach.
PAYLOAD_COMMAND = "head -c 4194304 /dev/urandom > /data/payload && sha256sum /data/payload"


def setUpModule():
    global PLUGINS
    c = clustertest.start_cluster()
    PLUGINS = NodePlugins(c)
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


def attached_volumes():
    node = get("node", clustertest.CLUSTER.node_name)
    return [v["name"] for v in node.get("status", {}).get("volumesAttached", [])]


class NodeSuite(unittest.TestCase):
    def test_1_two_pods_rw_with_fsgroup_and_read_only(self):
        def run(shape):
            volume_id = PLUGINS.create_volume(shape, "pv-" + shape)
            apply(pv_objects(shape, volume_id))
            apply(busybox_pod(ns(shape), "writer", claim_volumes(shape), DATA_MOUNT,
                              fs_group=FS_GROUP))
            wait_pod_running(ns(shape), "writer")
            out = exec_in(ns(shape), "writer", "sh", "-c", PAYLOAD_COMMAND)
            CHECKSUMS[shape] = out.split()[0]
            # fsGroup: the volume root belongs to the group and the pod's files get it
            self.assertEqual(exec_in(ns(shape), "writer", "stat", "-c", "%g", "/data").strip(),
                             str(FS_GROUP))
            self.assertEqual(exec_in(ns(shape), "writer", "stat", "-c", "%g",
                                     "/data/payload").strip(), str(FS_GROUP))
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
            wait_for("no mount of %s's volume left" % shape,
                     lambda: not [m for m in namespace.mount_points()
                                  if "flex-" + shape in m or "pv-" + shape in m])
            apply(busybox_pod(ns(shape), "again", claim_volumes(shape), DATA_MOUNT,
                              fs_group=FS_GROUP))
            wait_pod_running(ns(shape), "again")
            out = exec_in(ns(shape), "again", "sha256sum", "/data/payload")
            self.assertEqual(out.split()[0], CHECKSUMS[shape])
            self.assertEqual(exec_in(ns(shape), "again", "cat", "/data/after").strip(),
                             "after-restart")
        for_each_shape(run)

    def test_4_claim_grows_while_in_use(self):
        def run(shape):
            before = int(exec_in(ns(shape), "again", "df", "-k", "/data").split()[-5])
            clustertest.CLUSTER.kubectl("patch", "pvc", "claim", "-n", ns(shape), "--type",
                                        "merge", "-p",
                                        '{"spec":{"resources":{"requests":{"storage":"400Mi"}}}}')
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
            inline = [{"name": "data", "flexVolume": {"driver": flex_driver(shape),
                                                      "fsType": "xfs",
                                                      "options": {"volumeID": volume_id}}}]
            apply(busybox_pod(ns(shape), "inline-a", inline, DATA_MOUNT,
                              command="echo from-a > /data/a; sleep 3600"))
            wait_pod_running(ns(shape), "inline-a")
            apply(busybox_pod(ns(shape), "inline-b", inline, DATA_MOUNT))
            wait_pod_running(ns(shape), "inline-b")
            self.assertEqual(exec_in(ns(shape), "inline-b", "cat", "/data/a").strip(), "from-a")
            for pod in ("inline-a", "inline-b"):
                delete_and_wait("pod", pod, ns(shape))
        for_each_shape(run)

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
