"""kubelet's own CSI plugin reaching a csi-loopback, as a CSI driver's deployment wires it: the
real csi-node-driver-registrar on each node (kubelet finds the driver through its plugin
registration dir and writes the CSINode entry), the real csi-attacher once (VolumeAttachments
become ControllerPublish calls), and the CSIDriver object. Used by the suites that move
FlexVolume PVs to CSI (`flexcsi migrate`) and then need kubelet to mount the CSI PVs."""
import os

from cluster import Process
from clustertest import apply, get, wait_for


def registrar(cluster, csi_socket, node=None):
    """csi-node-driver-registrar for the csi-loopback listening on `csi_socket`: on `node`'s
    kubelet (in that node's namespaces) or, without one, on the single-node cluster's."""
    kubelet_root = node.kubelet_root if node else cluster.kubelet_root
    suffix = "-" + node.name if node else ""
    return Process("csi-node-driver-registrar" + suffix, [
        *(node.enter() if node else []),
        os.path.join(cluster.bin, "csi-node-driver-registrar"), "--csi-address", csi_socket,
        "--kubelet-registration-path", csi_socket,
        "--plugin-registration-path", os.path.join(kubelet_root, "plugins_registry")],
        os.path.join(cluster.logs, "csi-node-driver-registrar%s.log" % suffix))


def attacher(cluster, csi_socket, name="csi-attacher"):
    """csi-attacher against the csi-loopback whose controller service is on `csi_socket`."""
    return Process(name, [
        os.path.join(cluster.bin, "csi-attacher"), "--csi-address", csi_socket,
        "--kubeconfig", cluster.kubeconfig, "--leader-election=false", "--timeout", "30s"],
        os.path.join(cluster.logs, name + ".log"))


def csi_driver_objects(*names):
    """CSIDriver objects of attachable drivers whose volumes kubelet chowns for fsGroup."""
    return [{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": n},
             "spec": {"attachRequired": True, "fsGroupPolicy": "File"}} for n in names]


def registered(node_name, driver):
    """The nodeID of `driver` in the node's CSINode, or None."""
    drivers = (get("csinode", node_name) or {}).get("spec", {}).get("drivers") or []
    return next((d["nodeID"] for d in drivers if d["name"] == driver), None)


def start(cluster, driver, node_sockets, controller_socket, attacher_name="csi-attacher"):
    """Wires `driver` into kubelet on every node of `node_sockets` ({node or None: the
    csi-loopback socket on that node}) and csi-attacher to `controller_socket`; waits for
    every node's CSINode entry. Returns the started processes (stop them at the end)."""
    registrars = {node: registrar(cluster, sock, node) for node, sock in node_sockets.items()}
    procs = [*registrars.values(), attacher(cluster, controller_socket, attacher_name)]
    for p in procs:
        p.start()
    apply(csi_driver_objects(driver))
    for node, proc in registrars.items():
        name = node.name if node else cluster.node_name

        def done():
            if not proc.alive():  # a socket path too long, say: its log says why
                raise AssertionError("%s exited:\n%s" % (proc.name, proc.tail()))
            return registered(name, driver)
        wait_for("kubelet on %s to register %s (CSINode)" % (name, driver), done, 60)
    return procs
