"""kubelet's own CSI plugin reaching a csi-loopback, as a CSI driver's deployment wires it: the
real csi-node-driver-registrar on each node (kubelet finds the driver through its plugin
registration dir and writes the CSINode entry), the real csi-attacher once (VolumeAttachments
become ControllerPublish calls), and the CSIDriver object. Used by the suites that move
FlexVolume PVs to CSI (`flexcsi migrate`) and then need kubelet to mount the CSI PVs.

The sidecars are those kept beside the cluster's release (kube_version.py says what differs):
on 1.14, csi-node-driver-registrar v1.1.0 knows only /registration, and CSIDriver is v1beta1."""
import os
import shlex
import subprocess

from cluster import Process
from clustertest import apply, get, wait_for


def registrar(cluster, csi_socket, node=None):
    """csi-node-driver-registrar for the csi-loopback listening on `csi_socket`: on `node`'s
    kubelet (in that node's namespaces) or, without one, on the single-node cluster's."""
    kubelet_root = node.kubelet_root if node else cluster.kubelet_root
    registry = os.path.join(kubelet_root, "plugins_registry")
    suffix = "-" + node.name if node else ""
    binary = os.path.join(cluster.bin, "csi-node-driver-registrar")
    flags = ["--csi-address", csi_socket, "--kubelet-registration-path", csi_socket]
    if cluster.version.registrar_takes_registration_path:
        argv = [binary, *flags, "--plugin-registration-path", registry]
    else:
        root = os.path.join(node.dir if node else cluster.dir, "registrar-root" + suffix)
        argv = chrooted(root, binary, flags, {registry: "/registration",
                                              os.path.dirname(csi_socket): None})
    return Process("csi-node-driver-registrar" + suffix, [*(node.enter() if node else []), *argv],
                   os.path.join(cluster.logs, "csi-node-driver-registrar%s.log" % suffix))


def chrooted(root, binary, flags, binds):
    """argv that runs the static `binary` with `flags` chrooted into `root`, in a private mount
    namespace (the binds end with the process) where each folder of `binds` is bound at its
    value, or at its own path where that is None. For a sidecar whose paths are fixed, as the
    registrar's /registration before v2.0.0."""
    script = ["set -e"]
    for source, target in [*binds.items(), (binary, "/" + os.path.basename(binary))]:
        inside = root + (target or source)
        make = "mkdir -p %s" % shlex.quote(inside) if os.path.isdir(source) else \
            "mkdir -p %s && : > %s" % (shlex.quote(os.path.dirname(inside)), shlex.quote(inside))
        script += [make, "mount --bind %s %s" % (shlex.quote(source), shlex.quote(inside))]
    script.append("exec chroot %s %s" % (shlex.quote(root), shlex.join(
        ["/" + os.path.basename(binary), *flags])))
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(script)]


def attacher(cluster, csi_socket, name="csi-attacher"):
    """csi-attacher against the csi-loopback whose controller service is on `csi_socket`."""
    return Process(name, [
        os.path.join(cluster.bin, "csi-attacher"), "--csi-address", csi_socket,
        "--kubeconfig", cluster.kubeconfig, "--leader-election=false", "--timeout", "30s"],
        os.path.join(cluster.logs, name + ".log"))


def csi_driver_objects(cluster, *names):
    """CSIDriver objects of attachable drivers whose volumes kubelet chowns for fsGroup (before
    fsGroupPolicy, kubelet does so for a read-write RWO PV with an fsType on its own)."""
    spec = {"attachRequired": True}
    if cluster.version.csi_driver_has_fs_group_policy:
        spec["fsGroupPolicy"] = "File"
    return [{"apiVersion": cluster.version.csi_driver_api_version, "kind": "CSIDriver",
             "metadata": {"name": n}, "spec": dict(spec)} for n in names]


def sidecar_versions(cluster):
    """{program: version} of the sidecars in cluster.bin, as each prints it for --version
    (registrar v1.1.0 exits without --kubelet-registration-path, even for --version)."""
    versions = {}
    for name, extra in (("csi-node-driver-registrar", ["--kubelet-registration-path", "/x"]),
                        ("csi-attacher", []), ("csi-provisioner", [])):
        done = subprocess.run([os.path.join(cluster.bin, name), *extra, "--version"],
                              capture_output=True, text=True, timeout=30)
        versions[name] = (done.stdout + done.stderr).split()[-1]
    return versions


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
    apply(csi_driver_objects(cluster, driver))
    for node, proc in registrars.items():
        name = node.name if node else cluster.node_name

        def done():
            if not proc.alive():  # a socket path too long, say: its log says why
                raise AssertionError("%s exited:\n%s" % (proc.name, proc.tail()))
            return registered(name, driver)
        wait_for("kubelet on %s to register %s (CSINode)" % (name, driver), done, 60)
    return procs
