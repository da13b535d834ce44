#!/usr/bin/env python3
"""A real Kubernetes with two kubelet nodes (Cluster(nodes=2)), each in a network and mount
namespace of its own: both register and run pods, each node's mounts stay its own, and
teardown leaves nothing. One cluster for the whole suite (issue 25)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, get, wait_pod_running  # noqa: E402
import namespace  # noqa: E402

NODES = 2


def setUpModule():
    clustertest.start_cluster(nodes=NODES)


def tearDownModule():
    clustertest.stop_cluster()


class MultiNodeClusterTest(unittest.TestCase):
    def test_every_node_is_ready_with_its_own_address(self):
        c = clustertest.CLUSTER
        self.assertEqual(len(c.nodes), NODES)
        for node in c.nodes:
            self.assertTrue(c.node_ready(node.name), node.name)
            addresses = get("node", node.name)["status"]["addresses"]
            self.assertIn({"type": "InternalIP", "address": node.address}, addresses)

    def test_a_pod_runs_on_each_node_in_that_node_s_namespaces(self):
        c = clustertest.CLUSTER
        for node in c.nodes:
            name = "where-" + node.name
            apply([busybox_pod("default", name, [], [], node=node.name,
                               command="ip -4 addr show eth0; sleep 3600")])
        for node in c.nodes:
            name = "where-" + node.name
            wait_pod_running("default", name)
            # hostNetwork: the pod sees its node's network namespace and nothing else; the API
            # server reached that node's kubelet over the bridge to read the log
            self.assertIn(node.address, c.kubectl("logs", name))
            self.assertEqual(get("pod", name, "default")["spec"]["nodeName"], node.name)

    def test_a_mount_on_one_node_is_not_seen_elsewhere(self):
        c = clustertest.CLUSTER
        a, b = c.nodes[0], c.nodes[1]
        target = os.path.join(a.dir, "private-mount")
        os.makedirs(target, exist_ok=True)
        a.in_node("mount", "-t", "tmpfs", "tmpfs", target)
        try:
            self.assertIn(target, a.in_node("cat", "/proc/self/mountinfo").stdout)
            self.assertNotIn(target, b.in_node("cat", "/proc/self/mountinfo").stdout)
            self.assertNotIn(target, namespace.mount_points())
        finally:
            a.in_node("umount", target, check=False)


if __name__ == "__main__":
    clustertest.main(pod_network=True)
