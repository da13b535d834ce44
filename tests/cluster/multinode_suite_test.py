#!/usr/bin/env python3
"""A real Kubernetes with two kubelet nodes (Cluster(nodes=2)), each in a network and mount
namespace of its own: both register and run pods, each node's mounts stay its own, and
teardown leaves nothing; on each node a flexcsi-bridge and a csi-loopback of its own register
the driver with the node DaemonSet's RBAC. One cluster for the whole suite (issue 25); its
tests 2 and 3 (topology across nodes, two flexcsi-controller replicas) are in
multinode_provisioning_tests.py, tests 1 and 6 (a volume moved by a drain and by a node loss) in
multinode_move_tests.py, test 4 (deploy/'s node DaemonSet and flexcsi-controller's Deployment
upgraded from the previous release and downgraded again across both nodes while pods write) in
multinode_rollout_tests.py, one CephFS volume used on both nodes at once and a drain in
multinode_cephfs_tests.py."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, get, wait_pod_running  # noqa: E402
from clustertest import wait_for  # noqa: E402
import namespace  # noqa: E402
from node_plugins import NodePlugins, csi_driver  # noqa: E402
import multinode_provisioning_tests  # noqa: E402  (issue 25 tests 2 and 3)
import multinode_move_tests  # noqa: E402  (issue 25 tests 1 and 6)
import multinode_migrate_tests  # noqa: E402  (issue 25 test 5)
import multinode_rollout_tests  # noqa: E402  (issue 25 test 4)
import multinode_cephfs_tests  # noqa: E402  (ceph-csi ReadWriteMany on both nodes)

NODES = 2
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
DRIVER = csi_driver("default")
PLUGINS = []  # one NodePlugins per node
multinode_provisioning_tests.PLUGINS = PLUGINS  # the same list, filled by setUpModule


def setUpModule():
    # every node has its own copy of kubelet's root and plugin dir at kubeadm's paths, and of
    # the node DaemonSet's hostPath folders (multinode_rollout_tests.py), and of cephcsi's fixed
    # paths (multinode_cephfs_tests.py)
    c = clustertest.start_cluster(
        nodes=NODES, controller_manager_flags=multinode_move_tests.CONTROLLER_MANAGER_FLAGS,
        host_paths=multinode_rollout_tests.HOST_PATHS + multinode_cephfs_tests.HOST_PATHS)
    try:
        # Ceph (16-45 s), in the background where FLEXCSI_THIRD_PARTY_CSI names ceph-csi
        multinode_cephfs_tests.start_ceph(c)
        apply([clustertest.namespace_object("flexcsi")])
        c.kubectl("apply", "-n", "flexcsi", "-f",
                  os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
                  "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
        kubeconfig = clustertest.service_account_kubeconfig(c, "flexcsi", "flexcsi-node")
        for node in c.nodes:
            # noattach: the node-local driver shape of multinode_provisioning_tests
            PLUGINS.append(NodePlugins(c, shapes=("default", "noattach"),
                                       registration_kubeconfig=kubeconfig, node=node))
            PLUGINS[-1].start()
        # in the background, while the tests before the rollout test run
        multinode_rollout_tests.start_install(c)
    except BaseException:
        # unittest runs no tearDownModule after a failed setUpModule: the cluster goes here
        tearDownModule()
        raise


def tearDownModule():
    # Ceph too, even when its test failed, was skipped or was not selected
    clustertest.stop_cluster(multinode_cephfs_tests.BACKEND, *PLUGINS)


def registration(node_name):
    """(node-id annotation entry, CSINode entry's nodeID) of our driver on that node."""
    node = get("node", node_name)
    ids = json.loads(node["metadata"].get("annotations", {}).get(NODE_ID_ANNOTATION, "{}"))
    csinode = get("csinode", node_name) or {}
    entries = [d["nodeID"] for d in csinode.get("spec", {}).get("drivers") or []
               if d["name"] == DRIVER]
    return ids.get(DRIVER), entries[0] if entries else None


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

    def test_each_node_s_bridge_registers_its_own_driver(self):
        c = clustertest.CLUSTER
        for node in c.nodes:
            wait_for("%s's registration" % node.name,
                     lambda: registration(node.name) == (node.name, node.name), 60)
        # each bridge ran in its own node's namespaces: its socket answers there
        for plugins in PLUGINS:
            self.assertEqual(plugins.records()["attachments"], [])

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


# Defined here, so that the tests run inside this module's setUpModule/tearDownModule (unittest
# runs a class's module fixtures by the class's module): one cluster for the whole suite.
class MultiNodeProvisioningTest(multinode_provisioning_tests.MultiNodeProvisioningTest):
    """Issue 25 tests 2 and 3 (multinode_provisioning_tests.py)."""


# Defined here so that unittest runs it between this module's setUpModule and tearDownModule
# (module fixtures follow a test class's __module__): on this suite's cluster.
class VolumeMovesBetweenNodesTest(multinode_move_tests.VolumeMovesBetweenNodesTest):
    pass


# Issue 25 test 5 (multinode_migrate_tests.py), on this suite's cluster for the same reason.
class MigrateAcrossNodesTest(multinode_migrate_tests.MigrateAcrossNodesTest):
    pass


# Here for the same reason: on this suite's cluster. unittest runs the classes in the order of
# their names: this one after four others, which hide Ceph's start (keep the name late).
class SharedCephfsVolumeTest(multinode_cephfs_tests.SharedCephfsVolumeTest):
    """One CephFS volume on both nodes at once, then a drain (multinode_cephfs_tests.py)."""


# Here for the same reason: on this suite's cluster.
class NodeDaemonSetRolloutTest(multinode_rollout_tests.NodeDaemonSetRolloutTest):
    """Issue 25 test 4 and issue #37's upgrade and downgrade (multinode_rollout_tests.py)."""


if __name__ == "__main__":
    clustertest.main(pod_network=True)
