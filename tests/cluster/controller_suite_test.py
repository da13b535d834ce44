#!/usr/bin/env python3
"""flexcsi-controller and the bridge's node registration on a real Kubernetes v1.24.

The bridge registers csi-loopback on the node as kubelet's CSI plugin would (topology label,
csi.volume.kubernetes.io/nodeid annotation, CSINode entry), with exactly the RBAC rights of
deploy/kubernetes/base/node/rbac.yaml, through a service-account token. flexcsi-controller then
provisions FlexVolume PVs whose pods really run:

1. the registration, as the API server stores it
2. a WaitForFirstConsumer and an Immediate claim: each binds, its pod runs, writes and reads
3. `flexcsi uninstall-driver --config` removes the registration; a bridge restart writes it again
4. the driver restarted with another node id: the registration follows
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, delete_and_wait, exec_in, get, wait_for  # noqa: E402
from clustertest import wait_pod_running  # noqa: E402
from cluster import Process  # noqa: E402
from node_plugins import NodePlugins, csi_driver, flex_driver  # noqa: E402
import pki  # noqa: E402

SHAPE = "default"
DRIVER = csi_driver(SHAPE)
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PLUGINS = None
CONTROLLER = None


def service_account_kubeconfig(c, namespace, name):
    """A kubeconfig with a token of the service account, as its pod would have."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 7200}}
    path = "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name)
    token = json.loads(c.kubectl("create", "--raw", path, "-f", "-",
                                 input=json.dumps(request)))["status"]["token"]
    kubeconfig = os.path.join(c.dir, name + ".kubeconfig")
    with open(kubeconfig, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config",
                   "clusters": [{"name": "c", "cluster": {"server": c.server,
                                                          "certificate-authority": c.ca}}],
                   "users": [{"name": name, "user": {"token": token}}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": name}}],
                   "current-context": "c"}, f)
    os.chmod(kubeconfig, 0o600)
    return kubeconfig


def setUpModule():
    global PLUGINS, CONTROLLER
    c = clustertest.start_cluster()
    apply(clustertest.namespace_object("flexcsi"))
    c.kubectl("apply", "-n", "flexcsi", "-f",
              os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
              "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
    PLUGINS = NodePlugins(c, shapes=[SHAPE],
                          registration_kubeconfig=service_account_kubeconfig(c, "flexcsi",
                                                                             "flexcsi-node"))
    PLUGINS.start()
    CONTROLLER = Process("flexcsi-controller", [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", PLUGINS.config,
        "--journal", os.path.join(PLUGINS.dir, "controller-journal.db"),
        "--resync-period", "10s"], os.path.join(c.logs, "flexcsi-controller.log"))
    CONTROLLER.start()


def tearDownModule():
    try:
        for p in (CONTROLLER, PLUGINS):
            if p is not None:
                p.stop()
    finally:
        clustertest.stop_cluster()


def registration():
    """(label value, node id in the annotation, CSINode entry) for our driver."""
    node = get("node", clustertest.CLUSTER.node_name)
    labels = node["metadata"].get("labels", {})
    ids = json.loads(node["metadata"].get("annotations", {}).get(NODE_ID_ANNOTATION, "{}"))
    csinode = get("csinode", clustertest.CLUSTER.node_name) or {}
    entries = [d for d in csinode.get("spec", {}).get("drivers") or [] if d["name"] == DRIVER]
    return labels.get(TOPOLOGY_KEY), ids.get(DRIVER), entries[0] if entries else None


def registered_as(node_id):
    label, annotated, entry = registration()
    return (label == node_id and annotated == node_id and entry is not None
            and entry.get("nodeID") == node_id)


class ControllerSuite(unittest.TestCase):
    def test_1_bridge_registers_the_driver_like_kubelet(self):
        node = clustertest.CLUSTER.node_name
        wait_for("the driver's registration on the node", lambda: registered_as(node), 60)
        label, annotated, entry = registration()
        self.assertEqual(entry, {"name": DRIVER, "nodeID": node, "topologyKeys": [TOPOLOGY_KEY],
                                 "allocatable": {"count": 64}})
        csinode = get("csinode", node)
        self.assertEqual(csinode["metadata"]["ownerReferences"][0]["kind"], "Node")
        n = get("node", node)["metadata"]
        print("\nNode labels: %s\nNode annotation %s: %s\nCSINode: %s" % (
            json.dumps(n["labels"], sort_keys=True), NODE_ID_ANNOTATION,
            n["annotations"][NODE_ID_ANNOTATION], json.dumps(csinode["spec"], sort_keys=True)),
            flush=True)

    def test_2_wait_for_first_consumer_and_immediate_claims_run(self):
        ns = "provisioned"
        objects = [clustertest.namespace_object(ns)]
        for mode in ("WaitForFirstConsumer", "Immediate"):
            name = mode.lower()
            objects += [
                {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                 "metadata": {"name": name}, "provisioner": DRIVER,
                 "volumeBindingMode": mode, "reclaimPolicy": "Delete",
                 "parameters": {"csi.storage.k8s.io/fstype": "xfs"}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": name,
                          "resources": {"requests": {"storage": "320Mi"}}}},
                busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim":
                                        {"claimName": name}}],
                            [{"name": "data", "mountPath": "/data"}],
                            command="echo written-by-%s > /data/file; sleep 3600" % name)]
        apply(objects)
        for mode in ("waitforfirstconsumer", "immediate"):
            wait_pod_running(ns, mode, timeout=180)
            self.assertEqual(exec_in(ns, mode, "cat", "/data/file").strip(), "written-by-" + mode)
            pv = get("pv", get("pvc", mode, ns)["spec"]["volumeName"])
            self.assertEqual(pv["spec"]["flexVolume"]["driver"], flex_driver(SHAPE))
            terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            self.assertEqual(terms[0]["matchExpressions"][0]["key"], TOPOLOGY_KEY)
        for mode in ("waitforfirstconsumer", "immediate"):
            pv_name = get("pvc", mode, ns)["spec"]["volumeName"]
            delete_and_wait("pod", mode, ns)
            delete_and_wait("pvc", mode, ns)
            delete_and_wait("pv", pv_name, timeout=180)  # reclaim Delete: DeleteVolume, then PV

    def test_3_uninstall_removes_the_registration_and_a_restart_writes_it_again(self):
        node = clustertest.CLUSTER.node_name
        wait_for("registration", lambda: registered_as(node), 60)
        PLUGINS.kill_bridge()  # the bridge would register its configured driver again
        r = PLUGINS.flexcsi("uninstall-driver", "--driver", flex_driver(SHAPE), "--plugin-dir",
                            clustertest.CLUSTER.plugin_dir, "--config", PLUGINS.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed from node " + node, r.stdout)
        self.assertEqual(registration(), (None, None, None))
        PLUGINS.install_drivers()
        PLUGINS.start_bridge()
        wait_for("registration after the bridge restarted", lambda: registered_as(node), 60)

    def test_4_a_driver_restarted_with_another_node_id_moves_its_registration(self):
        node = clustertest.CLUSTER.node_name
        PLUGINS.restart_driver(SHAPE, nodeid="renamed-node-id")
        wait_for("the registration to follow the new node id",
                 lambda: registered_as("renamed-node-id"), 60)
        PLUGINS.restart_driver(SHAPE)
        wait_for("the registration to come back", lambda: registered_as(node), 60)


if __name__ == "__main__":
    clustertest.main()
