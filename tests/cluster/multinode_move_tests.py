"""Issue 25, tests 1 and 6: an RWO FlexVolume volume follows its pod from one node to the other,
moved by the real attach/detach controller, when the node is drained and when it is lost.

Storage: csi-loopback's network-block-storage imitation (`--shared-store`, one store for the
suite). kube-controller-manager's attach and detach go through flexexec in its plugin dir to a
control-plane bridge (`kubeletRoot: none`) with its own csi-loopback on that store, in the
suite's namespaces: it survives the loss of any node, as docs/operations.md's install step 4
has it. Each node runs a second flexcsi-bridge and csi-loopback of its own for this driver
(`flexcsi/shared`, installed into that node's kubelet plugin dir only), beside the suite's
registration set, which this module leaves alone.

Imported by multinode_suite_test.py: one cluster for the whole suite. FLEXCSI_SLOW_TESTS=1 adds
the node loss without the out-of-service taint (Kubernetes 1.24's 6-minute wait)."""
import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest

import clustertest
from clustertest import apply, exec_in, get, timed, wait_for
from node_plugins import NodePlugins

NS = "move"
SHAPE = "shared"
FLEX_DRIVER = "flexcsi/" + SHAPE
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
PAYLOAD_MIB = 4
SLOW = os.environ.get("FLEXCSI_SLOW_TESTS") == "1"
# kube-controller-manager flags this module needs (multinode_suite_test.py passes them): the
# out-of-service fast path (alpha in 1.24), and a node NotReady after 20 s without a heartbeat
# instead of 40 s (kubelets here report every 5 s), which the pod garbage collector waits for.
CONTROLLER_MANAGER_FLAGS = ["--feature-gates=NodeOutOfServiceVolumeDetach=true",
                            "--node-monitor-grace-period=20s"]


def deployment(name, claim):
    """One replica writing nothing by itself: the test writes through exec, so that a restart
    of the pod writes nothing behind its back."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "strategy": {"type": "Recreate"},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "hostNetwork": True, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "main", "image": clustertest.BUSYBOX,
                                         "imagePullPolicy": "Never",
                                         "command": ["sh", "-c", "sleep 3600"],
                                         "volumeMounts": [{"name": "data",
                                                           "mountPath": "/data"}]}],
                         "volumes": [{"name": "data",
                                      "persistentVolumeClaim": {"claimName": claim}}]}}}}


def volume_objects(name, volume_id):
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
             "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                      "flexVolume": {"driver": FLEX_DRIVER, "fsType": "ext4",
                                     "options": {"volumeID": volume_id}}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": name, "namespace": NS},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "volumeName": name, "resources": {"requests": {"storage": "64Mi"}}}}]


def running_pod(app):
    """The app's one Ready pod that is not being deleted, or None."""
    pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l", "app=" + app)
    for pod in pods["items"]:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions", [])):
            return pod
    return None


def attached_in_audit(events, pv_name):
    """[(time, node, attached?)] from kube-controller-manager's node status writes that carry
    volumesAttached (the attach/detach controller's record; a FlexVolume attach makes no
    VolumeAttachment), in the API server's order."""
    seen = []
    for e in events:
        ref = e.get("objectRef", {})
        if (ref.get("resource") != "nodes" or ref.get("subresource") != "status"
                or e.get("verb") not in ("patch", "update")
                or e.get("user", {}).get("username") != "admin"
                or e.get("responseStatus", {}).get("code", 500) >= 300):
            continue
        status = (e.get("requestObject") or {}).get("status") or {}
        if "volumesAttached" not in status:
            continue
        attached = any(pv_name in v.get("name", "") for v in status["volumesAttached"] or [])
        seen.append((e["stageTimestamp"], ref["name"], attached))
    return seen


def loop_devices_of(path):
    out = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", path], capture_output=True,
                         text=True).stdout
    return out.split()


def accepts(unix_socket):
    with socket.socket(socket.AF_UNIX) as s:
        return s.connect_ex(unix_socket) == 0


class VolumeMovesBetweenNodesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = clustertest.CLUSTER
        cls.store = os.path.join(c.dir, "shared-store")
        os.makedirs(cls.store, exist_ok=True)
        specs = {SHAPE: {"args": ["--shared-store", cls.store], "attach": True}}
        cls.control = NodePlugins(c, shapes=(SHAPE,), specs=specs, control_plane=True,
                                  name="flexcsi-controller")
        cls.on_node = {n.name: NodePlugins(c, shapes=(SHAPE,), specs=specs, node=n,
                                           name="flexcsi-shared", plugin_dirs=(n.plugin_dir,))
                       for n in c.nodes}
        for plugins in [cls.control, *cls.on_node.values()]:
            plugins.start()
        apply([clustertest.namespace_object(NS)])

    @classmethod
    def tearDownClass(cls):
        for plugins in [*cls.on_node.values(), cls.control]:
            plugins.stop()

    # ----- helpers ----------------------------------------------------------------------

    def start_on(self, name, node, other):
        """A volume of the store, its PV and claim, and a Deployment whose pod runs on `node`
        (the other node is cordoned until it does) with a payload written; returns (volume
        id, pod name, payload checksum)."""
        c = clustertest.CLUSTER
        volume_id = self.control.create_volume(SHAPE, name, size="64Mi", fs_type="ext4")
        apply(volume_objects(name, volume_id))
        c.kubectl("cordon", other)
        try:
            apply([deployment(name, name)])
            pod = wait_for("%s's pod to run" % name, lambda: running_pod(name), 180)
        finally:
            c.kubectl("uncordon", other)
        self.assertEqual(pod["spec"]["nodeName"], node)
        pod_name = pod["metadata"]["name"]
        exec_in(NS, pod_name, "sh", "-c", "dd if=/dev/urandom of=/data/payload bs=1M count=%d "
                "2>/dev/null && sync" % PAYLOAD_MIB)
        checksum = exec_in(NS, pod_name, "sha256sum", "/data/payload").split()[0]
        self.assertIn(volume_id, json.dumps(self.on_node[node].records()["stagings"]))
        return volume_id, pod_name, checksum

    def assert_moved(self, name, volume_id, checksum, old, new):
        """The pod runs on `new` with the payload intact; the volume is published to `new`
        alone in the store; nothing of it is left on `old` (bridge records, csi-loopback's
        record, mounts)."""
        pod = running_pod(name)
        self.assertEqual(pod["spec"]["nodeName"], new)
        self.assertEqual(exec_in(NS, pod["metadata"]["name"], "sha256sum",
                                 "/data/payload").split()[0], checksum)
        with open(os.path.join(self.store, "state.json")) as f:
            store = json.load(f)
        record = [v for v in store["volumes"] if v["id"] == volume_id]
        self.assertEqual(len(record), 1, store)
        self.assertNotIn(old, json.dumps(record[0]))
        self.assertIn(new, json.dumps(record[0]))
        self.assert_nothing_left_on(old, volume_id)
        devices = loop_devices_of(self.volume_file(volume_id))
        self.assertEqual(len(devices), 1, "one loop device, the new node's")
        # csi-loopback never asks for autoclear: set, the old node's driver detached it
        with open("/sys/block/%s/loop/autoclear" % os.path.basename(devices[0])) as f:
            self.assertEqual(f.read().strip(), "0", "the new node's device is being released")

    def assert_nothing_left_on(self, node, volume_id):
        plugins = self.on_node[node]
        wait_for("%s's bridge to hold no record of %s" % (node, volume_id),
                 lambda: not any(volume_id in json.dumps(plugins.records()[kind])
                                 for kind in ("attachments", "stagings", "publications")), 90)
        wait_for("%s's csi-loopback to keep no record of %s" % (node, volume_id),
                 lambda: volume_id not in json.dumps(plugins.driver_state(SHAPE)), 30)
        n = next(n for n in clustertest.CLUSTER.nodes if n.name == node)
        mounts = n.in_node("cat", "/proc/self/mountinfo").stdout
        self.assertNotIn(volume_id, mounts)
        self.assertNotIn("flexcsi~" + SHAPE, mounts)

    def controller_calls(self, volume_id):
        """[(ControllerPublishVolume or ControllerUnpublishVolume, node)] that the control
        plane's csi-loopback answered OK for the volume, in its log's order."""
        calls = []
        with open(self.control.procs[SHAPE].log, errors="replace") as f:
            for line in f:
                m = re.search(r"(Controller(?:Unp|P)ublishVolume) %s node=(\S+): OK"
                              % re.escape(volume_id), line)
                if m:
                    calls.append((m.group(1), m.group(2)))
        return calls

    def volume_file(self, volume_id):
        return os.path.join(self.store, "volumes", volume_id + ".img")

    def clean_up(self, name):
        c = clustertest.CLUSTER
        c.kubectl("delete", "deployment", name, "-n", NS, "--ignore-not-found")
        wait_for("%s's pods to be gone" % name, lambda: not c.kubectl_json(
            "get", "pods", "-n", NS, "-l", "app=" + name)["items"], 120)
        c.kubectl("delete", "pvc", name, "-n", NS, "--ignore-not-found")
        c.kubectl("delete", "pv", name, "--ignore-not-found")

    # ----- test 1: drain ----------------------------------------------------------------

    def test_drain_moves_the_volume_detached_before_attached(self):
        c = clustertest.CLUSTER
        a, b = c.nodes[0].name, c.nodes[1].name
        name = "drained"
        volume_id, _, checksum = self.start_on(name, a, b)
        seen = len(c.audit_events())
        began = time.monotonic()
        try:
            # only our app's pods are evicted: the suite's other tests keep theirs
            c.kubectl("drain", a, "--ignore-daemonsets", "--pod-selector", "app=" + name,
                      "--timeout=180s", timeout=200)
            drained = time.monotonic() - began
            wait_for("the pod to run on " + b,
                     lambda: (running_pod(name) or {}).get("spec", {}).get("nodeName") == b, 180)
            moved = time.monotonic() - began
        finally:
            c.kubectl("uncordon", a)
        timed("drain (evicted pod gone from %s)" % a, drained)
        timed("drain and move (drain start to pod Running on %s)" % b, moved)
        order = attached_in_audit(c.audit_events()[seen:], name)
        print("audit log, volumesAttached writes of kube-controller-manager: %s" % order,
              flush=True)
        detached = [t for t, node, on in order if node == a and not on]
        attached = [t for t, node, on in order if node == b and on]
        self.assertTrue(detached and attached, order)
        self.assertLess(detached[0], attached[0], "attached to %s before detached from %s: %s"
                        % (b, a, order))
        # the status write comes before the detach call; the driver's own log has the calls
        calls = self.controller_calls(volume_id)
        print("control-plane csi-loopback: %s" % calls, flush=True)
        self.assertLess(calls.index(("ControllerUnpublishVolume", a)),
                        calls.index(("ControllerPublishVolume", b)), calls)
        self.assert_moved(name, volume_id, checksum, a, b)
        self.clean_up(name)

    # ----- test 6: node loss ------------------------------------------------------------

    def power_off(self, node):
        """What a node that shuts down loses: every process of the node but the suite's
        registration set (kubelet, containerd, the containers, this driver's bridge and
        csi-loopback), killed -9; then its mounts under kubelet's root and the loop devices it
        had, gone with its kernel."""
        c = clustertest.CLUSTER
        mine = self.on_node[node.name]
        for proc in ("kubelet-" + node.name, "containerd-" + node.name):
            c.procs[proc].stop(signal.SIGKILL)
        mine.kill_bridge()
        mine.procs[SHAPE].stop(signal.SIGKILL)
        own_net = os.readlink("/proc/%d/ns/net" % node.pid)
        keep = os.path.join(node.dir, "flexcsi") + "/"  # the suite's registration set
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                if int(pid) == node.pid or os.readlink("/proc/%s/ns/net" % pid) != own_net:
                    continue
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if keep.encode() in f.read():
                        continue
                os.kill(int(pid), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        node.unmount_all(node.kubelet_root)

    def power_on(self, node):
        c = clustertest.CLUSTER
        c.procs["containerd-" + node.name].start()
        # the killed containerd left its socket file: wait until the new one answers
        wait_for("containerd on " + node.name, lambda: accepts(node.containerd_socket), 60)
        c.procs["kubelet-" + node.name].start()
        mine = self.on_node[node.name]
        mine.restart_driver(SHAPE)
        mine.start_bridge()
        wait_for(node.name + " Ready again", lambda: c.node_ready(node.name), 120)

    def lose_node(self, name, taint):
        """Node A is lost with the pod on it; returns (volume id, checksum, timings)."""
        c = clustertest.CLUSTER
        a, b = c.nodes[0], c.nodes[1]
        volume_id, old_pod, checksum = self.start_on(name, a.name, b.name)
        seen = len(c.audit_events())
        lost = time.monotonic()
        self.power_off(a)
        # the kernel of a node that is off holds no device of the volume
        for device in loop_devices_of(self.volume_file(volume_id)):
            subprocess.run(["losetup", "--detach", device], capture_output=True)
        times = {}
        if taint:
            c.kubectl("taint", "node", a.name, OUT_OF_SERVICE + "=nodeshutdown:NoExecute")
        wait_for(a.name + " NotReady", lambda: not c.node_ready(a.name), 120)
        times["NotReady"] = time.monotonic() - lost
        if not taint:
            # 1.24: the pod stays Terminating on the unreachable node until a person deletes it
            wait_for("the old pod to be evicted", lambda: (get("pod", old_pod, NS) or {}).get(
                "metadata", {}).get("deletionTimestamp"), 420)
            times["evicted"] = time.monotonic() - lost
            c.kubectl("delete", "pod", old_pod, "-n", NS, "--force", "--grace-period=0")
            times["force-deleted"] = time.monotonic() - lost
        wait_for("the volume detached from " + a.name, lambda: any(
            n == a.name and not on
            for _, n, on in attached_in_audit(c.audit_events()[seen:], name)),
            480 if not taint else 180, interval=1)
        times["detached"] = time.monotonic() - lost
        wait_for("the pod to run on " + b.name,
                 lambda: (running_pod(name) or {}).get("spec", {}).get("nodeName") == b.name,
                 180)
        times["Running on B"] = time.monotonic() - lost
        order = attached_in_audit(c.audit_events()[seen:], name)
        print("audit log, volumesAttached writes of kube-controller-manager: %s" % order,
              flush=True)
        for label, seconds in times.items():
            timed("node loss%s: %s" % (" with out-of-service taint" if taint else "", label),
                  seconds)
        return volume_id, checksum, a, b

    def come_back(self, name, volume_id, checksum, a, b):
        c = clustertest.CLUSTER
        back = time.monotonic()
        self.power_on(a)
        try:
            c.kubectl("taint", "node", a.name, OUT_OF_SERVICE + "-", check=False)
            self.assert_nothing_left_on(a.name, volume_id)
            timed("node back: its bridge holds nothing of the volume", time.monotonic() - back)
            self.assert_moved(name, volume_id, checksum, a.name, b.name)
        finally:
            c.kubectl("taint", "node", a.name, OUT_OF_SERVICE + "-", check=False)
        self.clean_up(name)

    def test_lost_node_with_out_of_service_taint(self):
        volume_id, checksum, a, b = self.lose_node("lost-fast", taint=True)
        self.come_back("lost-fast", volume_id, checksum, a, b)

    @unittest.skipUnless(SLOW, "FLEXCSI_SLOW_TESTS=1: Kubernetes 1.24's 6-minute wait after "
                         "the pod's eviction (300 s) and forced delete")
    def test_lost_node_without_taint(self):
        volume_id, checksum, a, b = self.lose_node("lost-slow", taint=False)
        self.come_back("lost-slow", volume_id, checksum, a, b)
