#!/usr/bin/env python3
"""Chaos life cycles on a real Kubernetes (issue #18; v1.24, and v1.10.6 as
cluster_chaos_suite_v1_10, which CI runs with fewer life cycles): whole FlexVolume volume life cycles
driven by the real kube-controller-manager (attach, detach) and kubelet (mount, unmount), while
kill -9 hits flexcsi-bridge, a csi-loopback or a flexexec process in the middle of their calls.

Twelve cells: csi-loopback's three node shapes (staging that mounts, --stage-without-mount,
--no-stage-unstage), each with and without --no-attach, each behind an attachable and a
non-attachable FlexVolume driver. A life cycle takes a random cell, a PV or an inline volume,
ext4 or xfs, and one pod or two (the second read-only): the pods write and check a file, are
deleted, and then the volume must be gone from the node: unmounted, detached, no bridge record,
nothing staged, published or attached in csi-loopback, no loop device. The same holds for the
whole node at the end.

A watcher sees flexexec calls in flight (processes running a driver installed in kubelet's or
kube-controller-manager's plugin dir) and, after a random delay, kills that call, the bridge or
the call's csi-loopback with SIGKILL. The bridge and the driver are started again at once, as
their DaemonSet would; kubelet and the attach/detach controller retry the failed calls with their
own backoff. Every kill point is `<target>@<FlexVolume call in flight>`.

Seeded and sized by the environment, like tests/chaos (bench/README.md, "Chaos life cycles"):
  FLEXCSI_CHAOS_SEED=N        the seed (printed at the end)
  FLEXCSI_CHAOS_LIFECYCLES=N  how many life cycles (default 12; CI runs 8 at once)
  FLEXCSI_CHAOS_WORKERS=N     life cycles at once (default 6)
"""
import collections
import concurrent.futures
import json
import os
import random
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import wait_pod_running  # noqa: E402
import namespace  # noqa: E402
from node_plugins import NodePlugins, flex_driver  # noqa: E402

SEED = int(os.environ.get("FLEXCSI_CHAOS_SEED") or 20261126)
LIFECYCLES = int(os.environ.get("FLEXCSI_CHAOS_LIFECYCLES") or 12)
WORKERS = int(os.environ.get("FLEXCSI_CHAOS_WORKERS") or 6)
NS = "chaos"
# Generous: a call failed by a kill is retried with kubelet's or the attach/detach controller's
# exponential backoff, which reaches minutes after several failures in a row.
STEP_TIMEOUT = 420


def _cells():
    node_shapes = {"mount": [], "nomount": ["--stage-without-mount"],
                   "nostage": ["--no-stage-unstage"]}
    cells = {}
    for shape, args in node_shapes.items():
        for csi_attach in (True, False):
            for flex_attach in (True, False):
                name = "%s-%s-%s" % (shape, "ca" if csi_attach else "cn",
                                     "fa" if flex_attach else "fn")
                # inline: the life cycles' inline volumes (issue #46: refused by default)
                cells[name] = {"args": args + ([] if csi_attach else ["--no-attach"]),
                               "attach": flex_attach, "inline": True}
    return cells


CELLS = _cells()
PLUGINS = None


def setUpModule():
    global PLUGINS
    c = clustertest.start_cluster()
    PLUGINS = NodePlugins(c, shapes=CELLS, specs=CELLS)
    PLUGINS.start()
    apply(clustertest.namespace_object(NS))


def tearDownModule():
    clustertest.stop_cluster(PLUGINS)


class Killer(threading.Thread):
    """Watches for flexexec calls in flight and kills one of them, the bridge or the call's
    driver, then lets the node work undisturbed for a moment so that life cycles go on."""

    def __init__(self, plugins, rng):
        super().__init__(daemon=True)
        self.plugins, self.rng = plugins, rng
        self.stopping = threading.Event()
        self.kills = collections.Counter()
        self.points = collections.Counter()
        self.missed = 0  # a chosen flexexec call ended before its kill
        self.error = None
        self.plugin_dirs = (plugins.cluster.plugin_dir, plugins.cluster.controller_plugin_dir)

    def calls_in_flight(self):
        """[(pid, cell, FlexVolume call)] of every driver process running now."""
        calls = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                exe = os.readlink("/proc/%s/exe" % entry)
                if not exe.startswith(self.plugin_dirs):
                    continue
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            cell = os.path.basename(exe)
            if cell in CELLS and len(argv) > 1:
                calls.append((int(entry), cell, argv[1].decode(errors="replace")))
        return calls

    def run(self):
        try:
            while not self.stopping.is_set():
                calls = self.calls_in_flight()
                if not calls:
                    time.sleep(0.01)
                    continue
                pid, cell, call = self.rng.choice(calls)
                target = self.rng.choice(("bridge", "driver", "flexexec"))
                # most calls last milliseconds: kill at once, or a little or a while later
                time.sleep(self.rng.choice((0, self.rng.uniform(0, 0.03),
                                            self.rng.uniform(0, 0.3))))
                if not self.kill(target, pid, cell, call):
                    continue
                self.stopping.wait(self.rng.uniform(0.5, 3.0))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def kill(self, target, pid, cell, call):
        alive = any(p == pid for p, _, _ in self.calls_in_flight())
        if target == "flexexec":
            if not alive:
                self.missed += 1
                return False
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                self.missed += 1
                return False
        elif target == "bridge":
            self.plugins.kill_bridge(signal.SIGKILL)
            self.plugins.start_bridge()
        else:
            self.plugins.kill_driver(cell)
        self.kills[target] += 1
        # a bridge or driver kill that came after the call ended lands between calls
        self.points["%s@%s" % (target, call if alive else "after-" + call)] += 1
        return True


def retry(what, action, attempts=30):
    """For our own direct calls to csi-loopback, which the killer may have just stopped."""
    for attempt in range(attempts):
        try:
            return action()
        except Exception:  # noqa: BLE001 - the last failure is raised
            if attempt == attempts - 1:
                raise AssertionError("%s failed %d times" % (what, attempts)) from None
            time.sleep(1)


def records_of(volume_id):
    state = PLUGINS.records()
    return [r for kind in ("attachments", "stagings", "publications") for r in state[kind]
            if volume_id in json.dumps(r)]


def driver_leftovers(cell, volume_id):
    """What csi-loopback still holds of the volume: staged, published, attached or a device."""
    for v in PLUGINS.driver_state(cell)["volumes"]:
        if v["id"] == volume_id:
            return {k: v[k] for k in ("staging_path", "device", "node_publications",
                                      "controller_publications") if v[k]}
    return {}


def attached_volumes():
    node = get("node", clustertest.CLUSTER.node_name)
    return [v["name"] for v in node.get("status", {}).get("volumesAttached", [])]


def volume_still_on_node(name, cell, volume_id):
    """'' when nothing of the volume is left on the node, else what is."""
    left = []

    def names_it(path):
        return volume_id in path or path.endswith("/" + name) or "/" + name + "/" in path
    mounts = [m for m in namespace.mount_points() if names_it(m)]
    if mounts:
        left.append("mounts %s" % mounts)
    loops = [d for d, b in namespace.loop_devices() if volume_id in b]
    if loops:
        left.append("loop devices %s" % loops)
    records = records_of(volume_id)
    if records:
        left.append("bridge records %s" % records)
    driver = driver_leftovers(cell, volume_id)
    if driver:
        left.append("csi-loopback %s" % driver)
    if any(flex_driver(cell) in v and names_it(v) for v in attached_volumes()):
        left.append("node.status.volumesAttached")
    return "; ".join(left)


WRITE = ("head -c 1048576 /dev/urandom > /data/f && sha256sum /data/f > /data/f.sum"
         " && sleep 3600")


def lifecycle(index, rng):
    """One volume from creation to deletion; returns its cell."""
    cell = rng.choice(sorted(CELLS))
    inline = rng.random() < 0.4
    fs_type = rng.choice(("ext4", "ext4", "xfs"))
    size = "320Mi" if fs_type == "xfs" else "64Mi"  # mkfs.xfs wants 300 MiB
    two_pods = rng.random() < 0.3
    name = "c%d" % index
    volume_id = retry("create volume %s" % name,
                      lambda: PLUGINS.create_volume(cell, name, size, fs_type))
    flex = {"driver": flex_driver(cell), "fsType": fs_type, "options": {"volumeID": volume_id}}

    def volumes(read_only):
        if inline:
            return [{"name": name, "flexVolume": dict(flex, readOnly=read_only)}]
        return [{"name": name, "persistentVolumeClaim": {"claimName": name,
                                                         "readOnly": read_only}}]
    if not inline:
        apply([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "chaos",
                         "flexVolume": flex}},
               {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "chaos",
                         "volumeName": name, "resources": {"requests": {"storage": size}}}}])
    mounts = [{"name": name, "mountPath": "/data"}]
    pods = [name + "-w"]
    apply(busybox_pod(NS, pods[0], volumes(False), mounts, command=WRITE))
    wait_pod_running(NS, pods[0], STEP_TIMEOUT)
    wait_for("%s's file written" % name,
             lambda: exec_in(NS, pods[0], "sh", "-c", "test -s /data/f.sum && echo ok",
                             check=False).strip() == "ok", STEP_TIMEOUT)
    def read_back(pod):
        # check=False: a mismatch prints "FAILED" and is reported below. An empty answer is
        # kubectl's, not the pod's: under load kubectl exec at times exits 0 with no output.
        out = wait_for("%s's checksum read back" % pod, lambda: exec_in(
            NS, pod, "sh", "-c", "cd /data && sha256sum -c f.sum", check=False).strip(), 60)
        if "f: OK" not in out:
            raise AssertionError("%s read back other data: %s" % (pod, out))
    if two_pods:
        if (inline and not CELLS[cell]["attach"]
                and "--no-stage-unstage" not in CELLS[cell]["args"]):
            # issue #46: an attach:false inline volume is staged for each pod alone, and
            # csi-loopback stages a volume once: the reader mounts it after the writer is gone
            read_back(pods[0])
            delete_and_wait("pod", pods.pop(0), NS, STEP_TIMEOUT)
        pods.append(name + "-r")
        apply(busybox_pod(NS, pods[-1], volumes(True), mounts))
        wait_pod_running(NS, pods[-1], STEP_TIMEOUT)
    for pod in pods:
        read_back(pod)
    for pod in pods:
        delete_and_wait("pod", pod, NS, STEP_TIMEOUT)
    if not inline:
        delete_and_wait("pvc", name, NS)
        delete_and_wait("pv", name)
    try:
        wait_for("%s (%s) gone from the node" % (name, cell),
                 lambda: not volume_still_on_node(name, cell, volume_id), STEP_TIMEOUT)
    except AssertionError as e:
        raise AssertionError("%s: %s" % (e, volume_still_on_node(name, cell, volume_id))) from None
    retry("delete volume %s" % name, lambda: PLUGINS.flexcsi(
        "volume", "delete", "--endpoint", "unix://" + PLUGINS.csi_socket(cell),
        "--id", volume_id).check_returncode())
    return cell


class ChaosSuite(unittest.TestCase):
    def test_1_lifecycles_under_kill_9_leave_nothing(self):
        rng = random.Random(SEED)
        killer = Killer(PLUGINS, random.Random(rng.random()))
        started = time.monotonic()
        done = collections.Counter()
        killer.start()
        try:
            with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
                futures = {pool.submit(lifecycle, i, random.Random(rng.random())): i
                           for i in range(LIFECYCLES)}
                for future in concurrent.futures.as_completed(futures):
                    try:
                        done[future.result()] += 1
                        if sum(done.values()) % 50 == 0:  # long runs: a sign of life
                            print("\n  %d life cycles in %.0f s" % (
                                sum(done.values()), time.monotonic() - started), flush=True)
                    except BaseException as e:
                        for f in futures:
                            f.cancel()
                        raise AssertionError("life cycle c%d (FLEXCSI_CHAOS_SEED=%d): %s"
                                             % (futures[future], SEED, e)) from e
        finally:
            killer.stopping.set()
            killer.join()
        if killer.error:
            raise killer.error
        seconds = time.monotonic() - started
        print("\nchaos on the cluster: seed %d, %d life cycles in %.1f s (%d at once)"
              % (SEED, LIFECYCLES, seconds, WORKERS))
        print("  cells: " + " ".join("%s=%d" % kv for kv in sorted(done.items())))
        print("  kill -9: " + " ".join("%s=%d" % kv for kv in sorted(killer.kills.items()))
              + " (flexexec calls ended before their kill: %d)" % killer.missed)
        print("  kill points hit (%d): " % len(killer.points)
              + " ".join("%s=%d" % kv for kv in sorted(killer.points.items())), flush=True)
        self.assertEqual(sum(done.values()), LIFECYCLES)
        self.assertTrue(killer.kills, "no kill happened")

    def test_2_nothing_left_on_the_node(self):
        PLUGINS.wait_nothing_left()
        for cell in CELLS:
            self.assertEqual([], [v["id"] for v in PLUGINS.driver_state(cell)["volumes"]], cell)
        self.assertEqual([], [v for v in attached_volumes() if "flexcsi" in v])


if __name__ == "__main__":
    clustertest.main(failfast=True)
