#!/usr/bin/env python3
"""The test cluster harness itself: it comes up with a Ready node that runs pods, survives a
kubelet killed with -9, and its teardown leaves no process, mount, loop device, cgroup or
file, also after a failed test and after a harness killed with -9."""
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgroups  # noqa: E402
import cluster as kube_cluster  # noqa: E402
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, wait_for, wait_pod_running  # noqa: E402
from kube_version import KubeVersion  # noqa: E402
import namespace  # noqa: E402


def cluster_traces(c):
    """What a cluster could leave on the machine, whatever teardown says about itself."""
    traces = []
    if os.path.exists(c.dir):
        traces.append("dir " + c.dir)
    traces += [m for m in namespace.mount_points() if m.startswith(c.dir)]
    traces += [d for d, b in namespace.loop_devices() if b.startswith(c.dir)]
    for mount in cgroups._hierarchies():
        for root, dirs, _ in os.walk(mount):
            traces += [os.path.join(root, d) for d in dirs
                       if d == cgroups.PREFIX + str(os.getpid())]
    return traces


def alive(pid):
    """Running or stopped; a zombie waiting for its parent (PID 1 here) has already exited."""
    try:
        with open("/proc/%d/status" % pid) as f:
            state = next(line for line in f if line.startswith("State:"))
        return "Z" not in state.split()[1]
    except (OSError, StopIteration):
        return False


class HarnessTest(unittest.TestCase):
    def test_pods_run_kubelet_restarts_and_nothing_is_left(self):
        c = kube_cluster.Cluster(os.environ["FLEXCSI_KUBE_BIN"])
        clustertest.CLUSTER = c
        try:
            c.start()
            print("cluster up in %.1f s" % c.timings["up"], flush=True)
            self.assertTrue(c.node_ready())
            apply([busybox_pod("default", "hello", [], [], command="echo hello; sleep 3600")])
            wait_pod_running("default", "hello")
            self.assertEqual(c.kubectl("logs", "hello").strip(), "hello")
            # a volume the cluster itself mounted, and a loop device a test left behind
            backing = os.path.join(c.dir, "left-behind.img")
            subprocess.run(["truncate", "-s", "16M", backing], check=True)
            loop = subprocess.run(["losetup", "--find", "--show", backing], check=True,
                                  capture_output=True, text=True).stdout.strip()
            self.assertTrue(loop)
            c.restart("kubelet", signal.SIGKILL)
            wait_for("node Ready after kubelet -9", c.node_ready, 90)
            wait_pod_running("default", "hello")
            pids = c.cgroups.pids()
            self.assertTrue(pids)
        finally:
            left = c.stop()
            clustertest.CLUSTER = None
        print("cluster down in %.1f s" % c.timings["down"], flush=True)
        self.assertEqual(left, [])
        self.assertEqual(cluster_traces(c), [])
        self.assertEqual([p for p in pids if alive(p)], [])
        self.assertNotIn("/run/containerd", namespace.mount_points())

    def test_a_harness_killed_with_minus_9_is_swept_by_the_next(self):
        if not KubeVersion.of_binaries(os.environ["FLEXCSI_KUBE_BIN"]).at_least(24):
            self.skipTest("the sweep is the harness's alone, whatever the release: "
                          "cluster_harness_test proves it")
        # A child harness brings a cluster up and is killed with -9 before any teardown.
        child = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", sys.executable, "-c", "import sys, os, time; sys.path.insert(0, %r); "
             "import cluster; c = cluster.Cluster(os.environ['FLEXCSI_KUBE_BIN']); c.start(); "
             "print(c.dir, flush=True); time.sleep(3600)" % os.path.dirname(
                 os.path.abspath(__file__))],
            stdout=subprocess.PIPE, text=True)
        workdir = child.stdout.readline().strip()
        self.assertTrue(workdir.startswith("/tmp/flexcsi-cluster-%d-" % child.pid), workdir)
        self.assertEqual(cgroups.stale_owners(), [], "no group is stale while its harness lives")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        self.assertIn(child.pid, cgroups.stale_owners())
        kube_cluster.sweep_stale_clusters()
        wait_for("the stale cluster's processes and groups to go",
                 lambda: not cgroups.stale_owners(), 30)
        self.assertFalse(os.path.exists(workdir))


if __name__ == "__main__":
    clustertest.main()
