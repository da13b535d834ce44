"""flexcsi on the test cluster's node, as an operator installs it on a host: one flexcsi-bridge
serving one csi-loopback per driver shape, and each FlexVolume driver installed by
`flexcsi install-driver` into kubelet's and kube-controller-manager's plugin dirs.

All processes are children of the suite, so they live in the cluster's mount namespace and
cgroup, and teardown finds them."""
import json
import os
import signal
import subprocess
import time

from clustertest import build_dir, run, wait_for
from cluster import Process
import namespace

# csi-loopback's switches, each imitating another kind of CSI driver.
SHAPES = {
    "default": {"args": [], "attach": True},                  # stages by mounting, attaches
    "stagenomount": {"args": ["--stage-without-mount"], "attach": True},  # csi-driver-host-path
    "nostage": {"args": ["--no-stage-unstage"], "attach": True},          # publish only
    "noattach": {"args": ["--no-attach"], "attach": False},    # no ControllerPublish: NFS-like
}


def flex_driver(shape):
    return "flexcsi/" + shape


def csi_driver(shape):
    return shape + ".loopback.csi.flexcsi.io"


class NodePlugins:
    def __init__(self, cluster, shapes=tuple(SHAPES), registration_kubeconfig=None, specs=None,
                 node=None, control_plane=False, name="flexcsi", plugin_dirs=None,
                 trust_pod_authors=False):
        """`registration_kubeconfig`: the bridge registers its drivers on the node with it
        (nodeName and kubeconfig in its configuration); None: no registration
        (`registerDrivers: false`), the cluster's admin kubeconfig as `kubeconfig` all the same,
        for the bridge's checks of who calls (issue #46: PV or inline, which pod). `specs`: the
        shapes' csi-loopback args and FlexVolume attach, when not those of SHAPES (and "driver":
        the CSI driver name, when not csi_driver(shape); "entry": keys set over the generated
        driver entry, one level deep, e.g. a profile's "rule" (its csiDriver filled in when
        left out) or "inlineVolumes"; "inline": True, short for "entry": {"inlineVolumes":
        true}: inline FlexVolumes of the driver are refused without it).
        `trust_pod_authors`: `trustPodAuthors: true` in the configuration (every call taken as
        the admin's). `node`: one
        of a multi-node cluster's nodes (Cluster.nodes): its bridge and csi-loopbacks run in
        that node's namespaces, with its kubelet root and plugin dir. `control_plane`: the
        control plane's bridge (docs/operations.md, install step 4): `kubeletRoot: none`, its
        drivers installed into kube-controller-manager's plugin dir alone, serving attach and
        detach. `name`: the folder (and log name) of this set, so that a second set can run
        beside the first. `plugin_dirs`: where `install-driver` puts the drivers (default:
        kubelet's and kube-controller-manager's plugin dirs)."""
        self.cluster = cluster
        self.node = node
        self.node_name = node.name if node else cluster.node_name
        if control_plane:
            self.node_name = "control-plane"
        self.control_plane = control_plane
        self.kubelet_root = node.kubelet_root if node else cluster.kubelet_root
        self.plugin_dir = node.plugin_dir if node else cluster.plugin_dir
        self.enter = node.enter() if node else []
        suffix = ("-" + name if name != "flexcsi" else "") + ("-" + node.name if node else "")
        self.shapes = list(shapes)
        self.specs = specs or SHAPES
        self.registration_kubeconfig = registration_kubeconfig
        self.trust_pod_authors = trust_pod_authors
        build = build_dir()
        self.bridge_bin = os.path.join(build, "bridge", "flexcsi-bridge")
        self.loopback_bin = os.path.join(build, "drivers", "loopback", "csi-loopback")
        self.flexcsi_bin = os.path.join(build, "cli", "flexcsi")
        self.flexexec_bin = os.path.join(build, "flexexec", "flexexec")
        self.dir = os.path.join(node.dir if node else cluster.dir, name)
        self.plugin_dirs = plugin_dirs or (
            (cluster.controller_plugin_dir,) if control_plane
            else (self.plugin_dir, cluster.controller_plugin_dir))
        self.log_suffix = suffix
        self.socket = os.path.join(self.dir, "bridge.sock")
        self.config = os.path.join(self.dir, "bridge.yaml")
        self.state_db = os.path.join(self.dir, "state.db")
        self.procs = {}

    def csi_driver(self, shape):
        return self.specs[shape].get("driver") or csi_driver(shape)

    def csi_socket(self, shape):
        return os.path.join(self.dir, shape, "csi.sock")

    def csi_state_dir(self, shape):
        return os.path.join(self.dir, shape, "state")

    def start(self):
        for binary in (self.bridge_bin, self.loopback_bin, self.flexcsi_bin, self.flexexec_bin):
            if not os.access(binary, os.X_OK):
                raise AssertionError("%s is not built" % binary)
        drivers = []
        for shape in self.shapes:
            os.makedirs(self.csi_state_dir(shape), exist_ok=True)
            endpoint = "unix://" + self.csi_socket(shape)
            self.procs[shape] = Process(
                "csi-loopback-" + shape,
                [*self.enter, self.loopback_bin, "--endpoint", endpoint,
                 "--nodeid", self.node_name,
                 "--driver-name", self.csi_driver(shape), "--state-dir", self.csi_state_dir(shape),
                 *self.specs[shape]["args"]],
                os.path.join(self.cluster.logs,
                             "csi-loopback-%s%s.log" % (shape, self.log_suffix)))
            self.procs[shape].start()
            drivers.append(self.driver_entry(shape, endpoint))
        config = {"kubeletRoot": "none" if self.control_plane else self.kubelet_root,
                  "socket": self.socket,
                  "stateDatabase": self.state_db, "metricsAddress": "",
                  "reconcileIntervalSeconds": 2, "unavailableRetrySeconds": 10,
                  "drivers": drivers}
        if self.registration_kubeconfig:
            config.update(nodeName=self.node_name,
                          kubeconfig=self.registration_kubeconfig)
        else:
            # nodeName all the same: mountdevice is checked against the pods of this node
            config.update(registerDrivers=False, kubeconfig=self.cluster.kubeconfig,
                          nodeName=self.node_name)
        if self.trust_pod_authors:
            config["trustPodAuthors"] = True
        with open(self.config, "w") as f:
            json.dump(config, f, indent=2)
        for shape in self.shapes:
            self._wait_socket(self.csi_socket(shape), self.procs[shape])
        self.procs["bridge"] = Process("flexcsi-bridge",
                                       [*self.enter, self.bridge_bin, "--config", self.config],
                                       os.path.join(self.cluster.logs,
                                                    "flexcsi-bridge%s.log" % self.log_suffix))
        self.start_bridge()
        self.install_drivers()

    def driver_entry(self, shape, endpoint):
        """The bridge configuration's entry for one shape: csi-loopback behind the fromOption
        volumeID rule, with the spec's "entry" and "inline" over it."""
        spec = self.specs[shape]
        entry = {"flexDriver": flex_driver(shape), "csiEndpoint": endpoint,
                 "attach": spec["attach"], "accessMode": "ReadWriteOnce",
                 "rule": {"csiDriver": self.csi_driver(shape),
                          "volumeHandle": {"fromOption": "volumeID"}, "defaultFsType": "xfs"}}
        if spec.get("inline"):
            entry["inlineVolumes"] = True
        entry.update(spec.get("entry") or {})
        entry["rule"] = dict(entry["rule"])
        entry["rule"].setdefault("csiDriver", self.csi_driver(shape))
        return entry

    def _wait_socket(self, path, proc, timeout=30):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if not proc.alive():
                raise AssertionError("%s exited at start:\n%s" % (proc.name, proc.tail()))
            if time.monotonic() > deadline:
                raise AssertionError("%s did not listen on %s" % (proc.name, path))
            time.sleep(0.05)

    def restart_driver(self, shape, **options):
        """Restarts one csi-loopback, its options replaced by `options` (node_id="x" for
        --nodeid x); without options, as first started."""
        proc = self.procs[shape]
        proc.stop()
        if os.path.exists(self.csi_socket(shape)):
            os.unlink(self.csi_socket(shape))
        if not hasattr(proc, "base_argv"):
            proc.base_argv = list(proc.argv)
        argv = list(proc.base_argv)
        for name, value in options.items():
            flag = "--" + name.replace("_", "")
            argv[argv.index(flag) + 1] = value
        proc.argv = argv
        proc.start()
        self._wait_socket(self.csi_socket(shape), proc)

    def install_drivers(self):
        for plugin_dir in self.plugin_dirs:
            # in the node's mount namespace: its plugin dir may be a host path of its own
            run([*self.enter, self.flexcsi_bin, "install-driver", "--config", self.config,
                 "--plugin-dir", plugin_dir, "--flexexec", self.flexexec_bin])

    def flexcsi(self, *args):
        return subprocess.run([self.flexcsi_bin, *args], capture_output=True, text=True)

    def start_bridge(self):
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.procs["bridge"].start()
        self._wait_socket(self.socket, self.procs["bridge"])

    def kill_bridge(self, sig=signal.SIGKILL):
        self.procs["bridge"].stop(sig)

    def stop(self):
        for proc in self.procs.values():
            proc.stop()

    def kill_driver(self, shape):
        """kill -9 of one csi-loopback, then started again as its supervisor would."""
        self.procs[shape].stop(signal.SIGKILL)
        self.restart_driver(shape)

    def driver_state(self, shape):
        """csi-loopback's own record of its volumes (written atomically, so safe to read); a
        driver that never had a volume has written none."""
        try:
            with open(os.path.join(self.csi_state_dir(shape), "state.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return {"volumes": [], "snapshots": []}

    def create_volume(self, shape, name, size="320Mi", fs_type="xfs"):
        try:
            return run([self.flexcsi_bin, "volume", "create", "--endpoint",
                        "unix://" + self.csi_socket(shape), "--name", name, "--size", size,
                        "--fs-type", fs_type]).strip()
        except AssertionError as e:
            raise AssertionError("%s\ncsi-loopback %s:\n%s"
                                 % (e, shape, self.procs[shape].tail(30))) from None

    def records(self):
        """The bridge's attachment, staging and publication records (`flexcsi state`)."""
        return json.loads(run([self.flexcsi_bin, "state", "--socket", self.socket, "-o", "json"]))

    def wait_nothing_left(self):
        """Waits until the bridge holds no record, nothing is mounted for a volume under the
        kubelet root and no loop device is bound to a csi-loopback volume; raises with what is
        left otherwise."""
        try:
            wait_for("the bridge to hold no record",
                     lambda: not any(self.records()[kind]
                                     for kind in ("attachments", "stagings", "publications")),
                     timeout=60)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (e, self.records())) from None
        root = self.kubelet_root
        mounts = (lambda: [line.split()[4] for line in self.node.in_node(
            "cat", "/proc/self/mountinfo").stdout.splitlines()]) if self.node else \
            namespace.mount_points
        wait_for("no volume mount under the kubelet root",
                 lambda: not [m for m in mounts()
                              if m.startswith(root + "/plugins/") or "volumes/flexcsi~" in m])
        wait_for("no loop device of csi-loopback",
                 lambda: not namespace.loop_devices_of_files_below(self.dir))
