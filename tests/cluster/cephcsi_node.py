"""ceph-csi's CephFS driver behind flexcsi on the test cluster's node, as an operator would run
them on a host: one `cephcsi --type=cephfs` serving Node and Controller, a flexcsi-bridge whose
driver entries are the mapping profiles of drivers/profiles/ (their csiEndpoint pointed at this
cephcsi), and the FlexVolume drivers installed by `flexcsi install-driver`.

cephcsi uses three fixed paths: /etc/ceph (ceph.conf for ceph-fuse), /etc/ceph-csi-config
(config.json, the cluster list) and /tmp/csi/keys (a temporary file per call's key). The first
two are host paths of the cluster (Cluster(host_paths=ETC_PATHS): folders under its temp dir
bound there in the suite's namespace over an overlay of /etc, so the host is never written);
/tmp/csi is a tmpfs mounted in the suite's namespace. cephcsi and the bridge are children of
the suite: they mount in the namespace kubelet and the containers see, so a pod sees the
ceph-fuse mount cephcsi makes. On a node of a multi-node cluster (`node`) both run in that
node's namespaces instead, with its own copies of the fixed paths."""
import json
import os
import shutil
import signal
import subprocess
import time

import yaml

from clustertest import build_dir, run
from cluster import Process
import namespace

CSI_DRIVER = "cephfs.csi.ceph.com"
ETC_CEPH = "/etc/ceph"
ETC_CONFIG = "/etc/ceph-csi-config"
ETC_PATHS = (ETC_CEPH, ETC_CONFIG)
KEYS_TMPFS = "/tmp/csi"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def profile(name):
    """A driver entry of drivers/profiles/, as shipped."""
    with open(os.path.join(REPO, "drivers", "profiles", name + ".yaml")) as f:
        return yaml.safe_load(f)


class CephCsiNode:
    def __init__(self, cluster, ceph, cephcsi_bin, cluster_id, profiles, kubeconfig,
                 node=None):
        """`profiles`: the names of drivers/profiles/ files to serve; `kubeconfig`: the
        bridge's own credentials (node registration, and the Secrets its rules read); `node`:
        one of a multi-node cluster's nodes (Cluster.nodes, whose host paths include
        ETC_PATHS): cephcsi and the bridge run in its namespaces, on its kubelet root, and
        the drivers go into its kubelet plugin dir alone (they do not attach)."""
        self.cluster, self.ceph, self.cluster_id = cluster, ceph, cluster_id
        self.node = node
        self.enter = node.enter() if node else []
        self.node_name = node.name if node else cluster.node_name
        self.kubelet_root = node.kubelet_root if node else cluster.kubelet_root
        self.plugin_dirs = ((node.plugin_dir,) if node
                            else (cluster.plugin_dir, cluster.controller_plugin_dir))
        # where Cluster keeps the node's copies of its host paths
        self.host_dir = node.host_dir if node else os.path.join(cluster.dir, "host")
        suffix = "-" + node.name if node else ""
        self.dir = os.path.join(node.dir if node else cluster.dir, "cephcsi")
        self.csi_socket = os.path.join(self.dir, "csi.sock")
        self.socket = os.path.join(self.dir, "bridge.sock")
        self.config = os.path.join(self.dir, "bridge.yaml")
        self.profiles = list(profiles)
        self.kubeconfig = kubeconfig
        build = build_dir()
        self.bridge_bin = os.path.join(build, "bridge", "flexcsi-bridge")
        self.flexcsi_bin = os.path.join(build, "cli", "flexcsi")
        self.flexexec_bin = os.path.join(build, "flexexec", "flexexec")
        self.cephcsi = Process("cephcsi" + suffix, [
            *self.enter, cephcsi_bin, "--type=cephfs", "--nodeserver=true",
            "--controllerserver=true",
            "--endpoint=unix://" + self.csi_socket, "--nodeid=" + self.node_name,
            "--drivername=" + CSI_DRIVER, "--instanceid=flexcsi-test", "--v=5"],
            os.path.join(cluster.logs, "cephcsi%s.log" % suffix))
        # test 3 restarts the bridge: from a copy, so that it is the binary first started even
        # when the build dir is rebuilt meanwhile (a restart once met a half-linked one there)
        self.bridge = Process("flexcsi-bridge" + suffix,
                              [*self.enter, os.path.join(self.dir, "flexcsi-bridge"),
                               "--config", self.config],
                              # a node's NodePlugins log as flexcsi-bridge-<node>.log
                              os.path.join(cluster.logs, "flexcsi-bridge%s.log"
                                           % ("-cephcsi" + suffix if node else "")))
        self.keys_mounted = False

    def driver_entries(self):
        entries = []
        for name in self.profiles:
            entry = profile(name)
            entry["csiEndpoint"] = "unix://" + self.csi_socket
            entries.append(entry)
        return entries

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        shutil.copy(self.bridge_bin, os.path.join(self.dir, "flexcsi-bridge"))
        self._fixed_paths()
        config = {"kubeletRoot": self.kubelet_root, "socket": self.socket,
                  "stateDatabase": os.path.join(self.dir, "state.db"), "metricsAddress": "",
                  "reconcileIntervalSeconds": 2, "unavailableRetrySeconds": 10,
                  "nodeName": self.node_name, "kubeconfig": self.kubeconfig,
                  "drivers": self.driver_entries()}
        with open(self.config, "w") as f:
            json.dump(config, f, indent=2)
        self.start_cephcsi()
        self.start_bridge()
        for plugin_dir in self.plugin_dirs:
            # in the node's mount namespace: its plugin dir is a host path of its own
            run([*self.enter, self.flexcsi_bin, "install-driver", "--config", self.config,
                 "--plugin-dir", plugin_dir, "--flexexec", self.flexexec_bin])

    def _fixed_paths(self):
        host = self.host_dir
        shutil.copy(self.ceph.conf, os.path.join(host, ETC_CEPH.lstrip("/"), "ceph.conf"))
        with open(os.path.join(host, ETC_CONFIG.lstrip("/"), "config.json"), "w") as f:
            json.dump([{"clusterID": self.cluster_id, "monitors": [self.ceph.monitor],
                        "cephFS": {"subvolumeGroup": "csi"}}], f)
        # The one fixed path under /tmp, which the cluster's temp dir keeps from being overlaid:
        # an empty mount point is made on the host once (as verify-cephcsi.sh does) and never
        # removed, since removing it would detach another run's tmpfs on it.
        # A node mounts its own, in its mount namespace.
        os.makedirs(KEYS_TMPFS, exist_ok=True)
        subprocess.run([*self.enter, "sh", "-ec", "mount -t tmpfs -o size=1m,mode=0700 tmpfs "
                        "%s; mkdir %s/keys" % (KEYS_TMPFS, KEYS_TMPFS)], check=True)
        self.keys_mounted = True

    def start_cephcsi(self):
        if os.path.exists(self.csi_socket):
            os.unlink(self.csi_socket)
        self.cephcsi.start()
        self._wait_socket(self.csi_socket, self.cephcsi)

    def start_bridge(self):
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.bridge.start()
        self._wait_socket(self.socket, self.bridge)

    @staticmethod
    def _wait_socket(path, proc, timeout=30):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if not proc.alive():
                raise AssertionError("%s exited at start:\n%s" % (proc.name, proc.tail()))
            if time.monotonic() > deadline:
                raise AssertionError("%s did not listen on %s" % (proc.name, path))
            time.sleep(0.05)

    def kill(self):
        """kill -9 of the bridge and cephcsi, as a node losing both daemons at once."""
        self.bridge.stop(signal.SIGKILL)
        self.cephcsi.stop(signal.SIGKILL)

    def records(self):
        """The bridge's attachment, staging and publication records (`flexcsi state`)."""
        return json.loads(run([self.flexcsi_bin, "state", "--socket", self.socket, "-o", "json"]))

    def stop(self):
        self.bridge.stop()
        self.cephcsi.stop()
        if self.keys_mounted:
            self.keys_mounted = False
            if self.node:
                self.node.in_node("umount", KEYS_TMPFS, check=False)
            else:
                namespace.unmount_below(KEYS_TMPFS)
