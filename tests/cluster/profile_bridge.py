"""flexcsi-bridge serving a third-party CSI driver through its mapping profile
(drivers/profiles/<name>.yaml), as an operator wraps a driver (docs/operations.md): the
profile's driver entry with only its endpoint (and whatever `adjust` changes) made to fit the
test cluster, and flexexec installed by `flexcsi install-driver` into kubelet's and
kube-controller-manager's plugin dirs. NodePlugins (node_plugins.py) does the same for
csi-loopback, whose drivers it writes itself."""
import json
import os
import signal

import yaml

from clustertest import build_dir, run, wait_for
from cluster import Process

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def load_profile(name):
    with open(os.path.join(REPO, "drivers", "profiles", name + ".yaml")) as f:
        return yaml.safe_load(f)


def rules_of(profile):
    """The profile's rule as a `flexcsi translate`/`migrate --rules` file's content."""
    return {"flexVolumeRules": [{"flexDriver": profile["flexDriver"], **profile["rule"]}]}


class ProfileBridge:
    def __init__(self, cluster, driver_entry, name="flexcsi-profile"):
        """`driver_entry`: the bridge configuration's drivers entry (the profile, adjusted)."""
        self.cluster = cluster
        self.entry = driver_entry
        self.dir = os.path.join(cluster.dir, name)
        build = build_dir()
        self.bridge_bin = os.path.join(build, "bridge", "flexcsi-bridge")
        self.flexcsi_bin = os.path.join(build, "cli", "flexcsi")
        self.flexexec_bin = os.path.join(build, "flexexec", "flexexec")
        self.socket = os.path.join(self.dir, "bridge.sock")
        self.config = os.path.join(self.dir, "bridge.yaml")
        self.proc = Process("flexcsi-bridge", [self.bridge_bin, "--config", self.config],
                            os.path.join(cluster.logs, name + ".log"))

    def start(self):
        for binary in (self.bridge_bin, self.flexcsi_bin, self.flexexec_bin):
            if not os.access(binary, os.X_OK):
                raise AssertionError("%s is not built" % binary)
        os.makedirs(self.dir, exist_ok=True)
        with open(self.config, "w") as f:
            json.dump({"kubeletRoot": self.cluster.kubelet_root, "socket": self.socket,
                       "stateDatabase": os.path.join(self.dir, "state.db"),
                       "metricsAddress": "", "registerDrivers": False,
                       "kubeconfig": self.cluster.kubeconfig,
                       "nodeName": self.cluster.node_name,
                       "reconcileIntervalSeconds": 2, "unavailableRetrySeconds": 10,
                       "drivers": [self.entry]}, f, indent=2)
        self.start_bridge()
        for plugin_dir in (self.cluster.plugin_dir, self.cluster.controller_plugin_dir):
            run([self.flexcsi_bin, "install-driver", "--config", self.config,
                 "--plugin-dir", plugin_dir, "--flexexec", self.flexexec_bin])

    def start_bridge(self):
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.proc.start()

        def listening():
            if not self.proc.alive():
                raise AssertionError("flexcsi-bridge exited:\n" + self.proc.tail())
            return os.path.exists(self.socket)
        wait_for("flexcsi-bridge to listen", listening, 30, 0.1)

    def kill(self):
        self.proc.stop(signal.SIGKILL)

    def stop(self):
        self.proc.stop()

    def records(self):
        """The bridge's attachment, staging and publication records (`flexcsi state`)."""
        return json.loads(run([self.flexcsi_bin, "state", "--socket", self.socket, "-o", "json"]))
