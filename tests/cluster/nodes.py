"""The nodes of a multi-node test cluster (Cluster(nodes=N)): each node is a network namespace
and a mount namespace of its own, held open by one `sleep` started under `unshare`, with its own
containerd, kubelet root, cgroup root and node name. Its one interface is the far end of a veth
pair whose near end is on a bridge in the suite's own (private) network namespace, where the API
server listens on the bridge's address. Every address is in 192.0.2.0/24 (documentation range)
and exists only inside these namespaces: nothing is sent anywhere else.

Teardown needs no special step: when the cluster's cgroup is killed the holder dies, and with
it the namespaces, the veth pair, and the node's mounts (unmounted first, so that the loop
devices under them can be detached)."""
import os
import subprocess

import namespace

BRIDGE = "flexcsi-br0"
BRIDGE_ADDRESS = "192.0.2.1"  # the control plane: the API server listens here
PREFIX_LENGTH = 24
FIRST_NODE_HOST = 11  # node i gets 192.0.2.(11+i)


def node_address(index):
    return "192.0.2.%d" % (FIRST_NODE_HOST + index)


def make_bridge():
    """The control plane's side: a bridge with the API server's address, in the suite's network
    namespace (which must be private: clustertest.main(pod_network=True) or nodes > 1)."""
    _ip("link", "set", "lo", "up")
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("addr", "add", "%s/%d" % (BRIDGE_ADDRESS, PREFIX_LENGTH), "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")


def _ip(*args, prefix=()):
    subprocess.run([*prefix, "ip", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


class Node:
    """One kubelet node. `run` (Cluster._run) starts a component; the node's components are
    started through nsenter into its namespaces, so the process is the component itself."""

    def __init__(self, cluster_dir, index, name):
        self.index, self.name = index, name
        self.address = node_address(index)
        self.dir = os.path.join(cluster_dir, "nodes", name)
        self.kubelet_root = os.path.join(self.dir, "kubelet")
        self.plugin_dir = os.path.join(self.dir, "flexvolume", "kubelet")
        self.containerd_socket = os.path.join(self.dir, "containerd", "containerd.sock")
        # the node's own copies of the cluster's host paths, each bound at its path inside
        self.host_dir = os.path.join(self.dir, "host")
        self.holder = None  # the Process holding the namespaces open
        self.pods_root = None
        self.kubelet_port = 10250  # its own network namespace: the well-known port is free

    @property
    def pid(self):
        return self.holder.popen.pid

    def enter(self):
        """The argv prefix that runs a command in the node's namespaces."""
        return ["nsenter", "-t", str(self.pid), "-m", "-n", "--"]

    def in_node(self, *argv, check=True):
        """Runs a command in the node's namespaces (a suite's way to look at its mounts and
        loop devices, or to run a node's flexcsi there)."""
        return subprocess.run([*self.enter(), *argv], check=check, capture_output=True,
                              text=True)

    def create_namespaces(self, run, private_paths, wait):
        """Starts the holder, wires the veth pair, and gives the node its own copies of the
        folders a node keeps at fixed paths (/run/containerd, /var/log/pods, ...)."""
        for d in (self.kubelet_root, self.plugin_dir, os.path.dirname(self.containerd_socket)):
            os.makedirs(d, exist_ok=True)
        # slave: mounts the suite makes later (a store all nodes see) still reach the node
        self.holder = run("holder-" + self.name,
                          ["unshare", "-n", "-m", "--propagation", "slave", "sleep", "infinity"])
        # unshare has exec'd sleep once the namespaces differ from ours
        own = os.readlink("/proc/self/ns/net")
        wait(lambda: _ns_of(self.pid, "net") not in (None, own))
        near = "veth-%d" % self.index
        _ip("link", "add", near, "type", "veth", "peer", "name", "eth0", "netns", str(self.pid))
        _ip("link", "set", near, "master", BRIDGE)
        _ip("link", "set", near, "up")
        inside = self.enter()
        _ip("link", "set", "lo", "up", prefix=inside)
        _ip("addr", "add", "%s/%d" % (self.address, PREFIX_LENGTH), "dev", "eth0", prefix=inside)
        _ip("link", "set", "eth0", "up", prefix=inside)
        # /run/containerd exists on a host where containerd ever ran; on a fresh one it is made
        # here, in the cluster's overlay of /run (the host is never written)
        script = ["mount --make-rshared /", "mkdir -p /run/containerd",
                  "mount -t tmpfs -o mode=0755 tmpfs /run/containerd"]
        for path in sorted(private_paths, key=lambda p: p.count("/")):  # outer ones first
            backing = os.path.join(self.host_dir, path.lstrip("/"))
            os.makedirs(backing, exist_ok=True)
            script.append("mount --bind '%s' '%s'" % (backing, path))
        made = subprocess.run([*inside, "sh", "-ec", "; ".join(script)], stderr=subprocess.PIPE,
                              text=True)
        if made.returncode != 0:
            raise AssertionError("node %s's own folders: exit %d: %s"
                                 % (self.name, made.returncode, made.stderr.strip()))

    def unmount_all(self, directory):
        """Unmounts, inside the node's mount namespace, everything below `directory` (the
        cluster's dir or the kubelet root: pods' volumes, the bridge's and csi-loopback's
        mounts), so the loop devices under them are free once the node's processes are killed.
        A mount at `directory` itself stays: the node's own copy of a host path (its disk)."""
        if self.holder is None or not self.holder.alive():
            return
        # the trailing slash: below the directory only (namespace.unmount_below)
        code = ("import sys; sys.path.insert(0, %r); import namespace; "
                "namespace.unmount_below(%r)" % (os.path.dirname(os.path.abspath(__file__)),
                                                 directory.rstrip("/") + "/"))
        subprocess.run([*self.enter(), "python3", "-c", code], capture_output=True)


def _ns_of(pid, kind):
    try:
        return os.readlink("/proc/%d/ns/%s" % (pid, kind))
    except OSError:
        return None
