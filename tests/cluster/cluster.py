"""A real single-node Kubernetes for tests, envtest style: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, containerd with runc, and kubelet, all under one temp
dir, every listener on a random 127.0.0.1 port, in the caller's private mount namespace.

    cluster = Cluster(assets_bin)      # a folder with kube-apiserver, kubelet, ... (assets.py)
    cluster.start()                    # returns once the node is Ready and pods can be created
    cluster.kubectl("get", "nodes")
    cluster.restart("kubelet", signal.SIGKILL)
    cluster.stop()                     # no process, mount, loop device or cgroup is left

The facts it relies on are in ../shared/kube-assets/README.md; why each flag is set is said
beside it."""
import ctypes
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import api_requests
import cgroups
import images
from kube_version import KubeVersion
import namespace
import nodes as cluster_nodes
import pki

NODE_NAME = "flexcsi-node"
# kubelet refuses a loopback node IP; this one is from a documentation range and nothing is
# ever sent to it (the API server reaches kubelet by host name, mapped to 127.0.0.1).
NODE_IP = "192.0.2.2"

# The values kubelet insists on (setupKernelTunables); bound over /proc/sys in our namespace
# only, so that kubelet finds them set and the host keeps its own.
KUBELET_SYSCTLS = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10",
                   "kernel/panic_on_oops": "1"}


# A kubeadm node's own paths, for suites that apply deploy/'s manifests unchanged (their hostPath
# volumes name these); see Cluster(host_paths=...).
KUBEADM_PATHS = {"kubelet_root": "/var/lib/kubelet",
                 "plugin_dir": "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
                 "controller_plugin_dir": "/usr/libexec/kubernetes/controller-plugins/volume/exec"}

# With pod_network, pods get addresses of their own (CNI bridge) in the suite's private network
# namespace, from the benchmarking range (RFC 2544); nothing outside that namespace sees them.
POD_SUBNET = "198.18.0.0/24"
SERVICE_RANGE = "198.51.100.0/24"
# The `kubernetes` Service's cluster IP (the range's first address). There is no kube-proxy: with
# pod_network this address is put on the namespace's loopback and the API server listens on it,
# port 443, so in-cluster clients reach the API as on a real cluster.
SERVICE_IP = "198.51.100.1"
CNI_BIN = "/usr/lib/cni"  # Debian's containernetworking-plugins

DEVICE_PLUGINS_DIR = "/var/lib/kubelet/device-plugins"
RUN_CONTAINERD = "/run/containerd"
PR_SET_CHILD_SUBREAPER = 36
KEPT_MARKER = ".kept"  # a --keep dir: the next harness's sweep leaves its files for reading


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port, address="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((address, port)) == 0


class ClusterError(RuntimeError):
    pass


class Process:
    """A cluster component: its argv, its log, and the running child if any."""

    def __init__(self, name, argv, log, env=None):
        self.name, self.argv, self.log, self.env, self.popen = name, argv, log, env, None

    def start(self):
        with open(self.log, "ab") as out:
            out.write(("=== start: %s\n" % " ".join(self.argv)).encode())
            out.flush()
            self.popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, env=self.env,
                                          start_new_session=True)

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.popen = None

    def tail(self, lines=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class Cluster:
    """host_paths: absolute paths the node uses as a real node would (KUBEADM_PATHS' values for
    kubelet's root and plugin dirs, and the hostPath folders of the pods a suite runs). Each is
    a folder under the temp dir bind-mounted at that path in our namespace only; each path's
    top-level folder (and /run) is overlaid in our namespace, so a path the host lacks is made
    there and the host is never written: clusters can run side by side.

    pod_network: pods that are not hostNetwork get an address on a CNI bridge, and reach the API
    server at the `kubernetes` Service's address; needs a private network namespace.

    node_paths: where kubelet's root and plugin dirs are (KUBEADM_PATHS' keys), for a node that
    keeps them elsewhere; used for those of its values that are in host_paths.

    controller_manager_flags: added to kube-controller-manager's command line.

    nodes: how many kubelet nodes (default 1: the node is `node_name`, in the suite's own
    namespaces). With more, each node is `<node_name>-<i>` in a network and mount namespace of its
    own (nodes.py), reaching the API server over a bridge in the suite's private network
    namespace; `self.nodes` lists them. There every node has host_paths of its own: a folder
    under its dir (`node.host_dir`) bound at each path in its mount namespace, and kubelet's
    root and plugin dir among them are each node's `kubelet_root` and `plugin_dir` (the same
    path on every node, as a DaemonSet's hostPath volumes expect; the suite's copy of a path
    is not any node's)."""

    def __init__(self, assets_bin, workdir=None, node_name=NODE_NAME, keep=False, host_paths=(),
                 pod_network=False, controller_manager_flags=(), node_paths=KUBEADM_PATHS,
                 nodes=1):
        self.bin = assets_bin
        # every flag that differs between Kubernetes releases comes from here
        self.version = KubeVersion.of_binaries(assets_bin)
        self.controller_manager_flags = list(controller_manager_flags)
        self.node_name = node_name
        self.keep = keep
        self.dir = workdir or tempfile.mkdtemp(prefix="flexcsi-cluster-%d-" % os.getpid())
        self.logs = os.path.join(self.dir, "logs")
        self.kubelet_root = os.path.join(self.dir, "kubelet")
        # kubelet's --volume-plugin-dir and kube-controller-manager's --flex-volume-plugin-dir
        self.plugin_dir = os.path.join(self.dir, "flexvolume", "kubelet")
        self.controller_plugin_dir = os.path.join(self.dir, "flexvolume", "controller")
        self.pod_network = pod_network
        # where containerd (pods' network namespaces) and the CNI plugins keep their files
        # kubelet writes containers' logs under /var/log whatever its root dir; containerd (pods'
        # network namespaces) and the CNI plugins use fixed paths too.
        # kubelet keeps its device-plugin socket at a fixed path whatever its root dir: private,
        # so that clusters side by side do not remove each other's (and the host keeps none)
        self.host_paths = (list(host_paths) + ["/var/log/pods", "/var/log/containers"]
                           + (["/run/netns", "/var/lib/cni"] if pod_network else [])
                           + [DEVICE_PLUGINS_DIR])
        for attr, path in node_paths.items():
            if path in self.host_paths:
                setattr(self, attr, path)
        self.overlays = []  # top-level folders overlaid in our namespace (namespace.py)
        self.containerd_socket = os.path.join(self.dir, "containerd", "containerd.sock")
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        self.procs = {}
        self.cgroups = None
        self.timings = {}
        self.nodes = [cluster_nodes.Node(self.dir, i, "%s-%d" % (node_name, i))
                      for i in range(nodes)] if nodes > 1 else []
        if self.nodes:
            if pod_network:
                raise ClusterError("nodes > 1 runs without pod_network")
            self.node_name = self.nodes[0].name
            # Every node has its own copy of each host path, at that path in its own mount
            # namespace (as real nodes do: a DaemonSet names one path for all of them).
            for node in self.nodes:
                for attr in ("kubelet_root", "plugin_dir"):
                    if node_paths.get(attr) in host_paths:
                        setattr(node, attr, node_paths[attr])

    # ----- life cycle -------------------------------------------------------------------

    # One bound for the whole start: a quiet machine needs 15-60 s (two nodes the most); at load
    # average 50 (stress-ng and other clusters beside it) a single node took over 120 s.
    def start(self, timeout=300):
        if not namespace.in_private_mount_namespace():
            raise ClusterError("refusing to start a cluster in the host's mount namespace; "
                               "run under `unshare -m --propagation private` (ctest does)")
        began = time.monotonic()
        try:
            self._start(timeout)
        except BaseException:
            self.dump_logs()
            self.stop()
            raise
        self.timings["up"] = time.monotonic() - began

    def _start(self, timeout):
        sweep_stale_clusters()
        for d in (self.logs, self.kubelet_root, self.plugin_dir, self.controller_plugin_dir,
                  os.path.dirname(self.containerd_socket), *[n.dir for n in self.nodes]):
            if d not in self.host_paths:  # those are made by _private_host_paths
                os.makedirs(d, exist_ok=True)
        namespace.make_rshared_root()
        become_subreaper()
        # every kubectl a suite runs, ours included, talks to this cluster's version
        os.environ.update(self.version.kubectl_env)
        # and keeps its discovery and HTTP caches in the cluster's dir: in ~/.kube/cache every
        # cluster's random port left a folder behind (hundreds of MB after a few runs)
        os.environ["KUBECACHEDIR"] = os.path.join(self.dir, "kubectl-cache")
        self._private_host_paths()  # first: its overlays would hide mounts made before them
        self._private_files()
        if self.pod_network:
            self._private_network()
        if self.nodes:
            if not namespace.in_private_network_namespace():
                raise ClusterError("nodes > 1 needs a private network namespace "
                                   "(clustertest.main(pod_network=True) runs the suite in one)")
            cluster_nodes.make_bridge()
        self.cgroups = cgroups.ClusterCgroups()
        self.cgroups.create()
        self.cgroups.join()
        self._pki()
        deadline = time.monotonic() + timeout
        self._start_etcd()
        self._start_apiserver()
        # The nodes' runtime and images need no API server: they come up while it starts.
        if self.nodes:
            self._start_node_runtimes(deadline)
        else:
            self._start_containerd()
            self._wait("containerd's socket", deadline,
                       lambda: os.path.exists(self.containerd_socket), "containerd")
            self._import_images()
        # kubelet only then: kubelet 1.10 started before the API server listens keeps failing
        # every request with "http2: no cached connection was available" (its pods never
        # start), and kube-controller-manager exits when the API server is not healthy in 10 s.
        self._wait("the API server to be ready", deadline, self._apiserver_ready,
                   "kube-apiserver")
        self._start_controller_manager_and_scheduler()
        for node in self.nodes or [None]:
            self._start_kubelet(node)
        for node in self.nodes or [None]:
            name = node.name if node else self.node_name
            self._wait("node %s to be Ready" % name, deadline,
                       lambda: self.node_ready(name), "kubelet" + ("-" + name if node else ""))
        # Pods cannot be created in a namespace before its default service account exists.
        self._wait("the default service account", deadline,
                   lambda: self.can_get("serviceaccount", "default"),
                   "kube-controller-manager")

    def stop(self):
        """Stops everything, then removes every trace; safe to call twice and after a failed
        start. Returns a list of what could not be removed (empty when clean)."""
        began = time.monotonic()
        left = []
        # The cluster is thrown away: nothing needs a graceful stop (kube-scheduler alone would
        # take 10 s over SIGTERM). Pods' volumes are unmounted below, not by kubelet.
        for node in self.nodes:
            node.unmount_all(self.dir)
            node.unmount_all(node.kubelet_root)  # a host path (/var/lib/kubelet) or below dir
        for proc in self.procs.values():
            proc.stop(signal.SIGKILL)
        if self.cgroups is not None:
            if not self.cgroups.kill_all():
                left.append("processes: %s" % sorted(self.cgroups.pids()))
            reap_orphans()
            self.cgroups.leave()
        left += namespace.unmount_below(self.dir)
        for target in ([RUN_CONTAINERD, "/etc/hosts"] + self.host_paths
                       + ["/proc/sys/" + k for k in KUBELET_SYSCTLS]):
            left += namespace.unmount_below(target)
        left += namespace.remove_overlays(self.overlays, self.dir)
        self.overlays = []
        left += namespace.detach_loop_devices_below(self.dir + "/")
        # A pod's loop devices name their files by the pod's path, not ours.
        left += namespace.detach_loop_devices_of_files_below(os.path.join(self.dir, "host"))
        for node in self.nodes:  # and those of a node's pods, on its own copies of host paths
            left += namespace.detach_loop_devices_of_files_below(node.host_dir)
        if self.cgroups is not None:
            left += ["cgroup " + d for d in self.cgroups.remove()]
            self.cgroups = None
        if self.keep:
            open(os.path.join(self.dir, KEPT_MARKER), "w").close()
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.timings["down"] = time.monotonic() - began
        return left

    def dump_logs(self, lines=40):
        for proc in self.procs.values():
            print("---- %s (%s)\n%s" % (proc.name, proc.log, proc.tail(lines)), flush=True)

    # ----- processes --------------------------------------------------------------------

    def _run(self, name, argv, env=None):
        proc = Process(name, argv, os.path.join(self.logs, name + ".log"), env)
        proc.start()
        self.procs[name] = proc
        return proc

    def restart(self, name, sig=signal.SIGTERM):
        """Stops a component with `sig` (SIGKILL: as if it crashed) and starts it again with
        the same arguments."""
        proc = self.procs[name]
        proc.stop(sig)
        proc.start()
        node = next((n for n in self.nodes if name == "kubelet-" + n.name), None)
        if name == "kubelet" or node:
            # The node stays Ready in the API until kubelet's status times out, so that says
            # nothing about the new kubelet: wait until it serves what the API server dials
            # for exec and logs.
            self._wait("kubelet to serve again", time.monotonic() + 60,
                       lambda: port_open(node.kubelet_port if node else self.kubelet_port,
                                         node.address if node else "127.0.0.1"), name)

    def _wait(self, what, deadline, ready, component):
        while time.monotonic() < deadline:
            if ready():
                return
            proc = self.procs.get(component)
            if proc is not None and not proc.alive():
                raise ClusterError("%s exited while waiting for %s:\n%s"
                                   % (component, what, proc.tail()))
            time.sleep(0.2)
        raise ClusterError("timed out waiting for %s" % what)

    # ----- set-up pieces ----------------------------------------------------------------

    def _private_files(self):
        """/etc/hosts with the node name, kubelet's sysctls: bind mounts in our namespace."""
        hosts = os.path.join(self.dir, "hosts")
        with open("/etc/hosts") as f:
            text = f.read()
        with open(hosts, "w") as f:
            names = ["%s %s" % (n.address, n.name) for n in self.nodes] or [
                "127.0.0.1 " + self.node_name]
            f.write(text.rstrip("\n") + "\n" + "\n".join(names) + "\n")
        namespace.bind(hosts, "/etc/hosts")
        for key, value in KUBELET_SYSCTLS.items():
            path = os.path.join(self.dir, "sysctl-" + key.replace("/", "-"))
            with open(path, "w") as f:
                f.write(value + "\n")
            namespace.bind(path, "/proc/sys/" + key)

    def _private_network(self):
        if not namespace.in_private_network_namespace():
            raise ClusterError("pod_network needs a private network namespace "
                               "(clustertest.main(pod_network=True) runs the suite in one)")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        # kubelet sets the node's addresses only when its --node-ip is on an interface; the
        # API server reaches kubelet (exec, logs) through those addresses.
        for address in (SERVICE_IP, NODE_IP):
            subprocess.run(["ip", "addr", "add", address + "/32", "dev", "lo"], check=True)

    def _private_host_paths(self):
        self.overlays = namespace.overlay_top_dirs(self.host_paths + [RUN_CONTAINERD], self.dir)
        for path in sorted(self.host_paths, key=lambda p: p.count("/")):  # outer ones first
            backing = os.path.join(self.dir, "host", path.lstrip("/"))
            os.makedirs(backing, exist_ok=True)
            os.makedirs(path, exist_ok=True)  # in our overlay (or in one of ours bound before)
            namespace.bind(backing, path)

    def _pki(self):
        self.pki = pki.ClusterPki(os.path.join(self.dir, "pki"))
        self.ca = self.pki.path("ca.crt")
        self.server_cert = self.pki.leaf("apiserver", "kube-apiserver",
                                         dns=["localhost", "kubernetes.default.svc"],
                                         ips=["127.0.0.1", SERVICE_IP,
                                              cluster_nodes.BRIDGE_ADDRESS], server=True)
        self.admin_cert = self.pki.leaf("admin", "admin", "system:masters")
        # kubelet as the node authorizer expects it; the API server's own client cert to kubelet
        self.kubelet_cert = self.pki.leaf("kubelet", "system:node:" + self.node_name,
                                          "system:nodes")
        for node in self.nodes:
            node.kubelet_cert = self.pki.leaf("kubelet-" + node.name, "system:node:" + node.name,
                                              "system:nodes")
        self.apiserver_kubelet_cert = self.pki.leaf("apiserver-kubelet", "kube-apiserver-kubelet",
                                                    "system:masters")

    def _start_etcd(self):
        data = os.path.join(self.dir, "etcd")
        os.makedirs(data, exist_ok=True)
        namespace.mount_tmpfs(data)  # fsyncs on tmpfs cost nothing; the cluster is throwaway
        client, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % client
        self._run("etcd", ["etcd", "--name", "test", "--data-dir", data,
                           "--listen-client-urls", self.etcd_url,
                           "--advertise-client-urls", self.etcd_url,
                           "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
                           "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
                           "--initial-cluster", "test=http://127.0.0.1:%d" % peer,
                           "--log-level", "warn"])

    def _audit_policy(self):
        """Every request, by whom (user agent) and with what result; PV writes with their
        bodies (delete preconditions, the object deleted), so suites can check the rules the
        stand-in's audit log is used for on the real API server's own record; writes of a
        workload's replicas (/scale) with their bodies, so a suite can count scale-downs; node
        status writes of kube-controller-manager (admin) with their bodies, so a suite sees when
        the attach/detach controller put a volume in or took it out of volumesAttached; patches
        of claims with their bodies (migrate's claim-sync annotation)."""
        policy = os.path.join(self.dir, "audit-policy.yaml")
        with open(policy, "w") as f:
            json.dump({"apiVersion": self.version.audit_api_version, "kind": "Policy",
                       "omitStages": ["RequestReceived"],
                       "rules": [{"level": "None", "verbs": ["get", "list", "watch"],
                                  "resources": [{"group": "", "resources": ["events"]}]},
                                 {"level": "RequestResponse",
                                  "verbs": ["create", "update", "patch", "delete"],
                                  "resources": [{"group": "",
                                                 "resources": ["persistentvolumes"]}]},
                                 {"level": "RequestResponse", "verbs": ["update", "patch"],
                                  "resources": [{"group": "apps", "resources": [
                                      "deployments/scale", "statefulsets/scale"]}]},
                                 # patches of claims with their bodies: migrate's one write
                                 # to a claim, the claim-sync annotation, is checked to be
                                 # metadata only
                                 {"level": "Request", "verbs": ["patch"],
                                  "resources": [{"group": "",
                                                 "resources": ["persistentvolumeclaims"]}]},
                                 # the attach/detach controller's record of what is
                                 # attached where (volumesAttached), with its patch body;
                                 # kubelets' own status writes stay metadata only
                                 {"level": "Request", "verbs": ["update", "patch"],
                                  "users": ["admin"],
                                  "resources": [{"group": "", "resources": ["nodes/status"]}]},
                                 {"level": "Metadata"}]}, f)
        return policy

    def audit_events(self):
        """The API server's audit log so far, as a list of audit.k8s.io Events."""
        with open(self.audit_log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def _start_apiserver(self):
        # With pod_network, where pods' in-cluster configuration points (the Service's address
        # and port); it is on the private namespace's loopback, seen by nothing else.
        address, port = (SERVICE_IP, 443) if self.pod_network else ("127.0.0.1", free_port())
        if self.nodes:  # on the bridge every node's namespace reaches
            address = cluster_nodes.BRIDGE_ADDRESS
        self.audit_log = os.path.join(self.logs, "audit.log")
        self.server = "https://%s:%d" % (address, port)
        crt, key = self.server_cert
        kcrt, kkey = self.apiserver_kubelet_cert
        self._run("kube-apiserver", [
            os.path.join(self.bin, "kube-apiserver"),
            "--etcd-servers", self.etcd_url,
            "--bind-address", address, "--secure-port", str(port),
            "--advertise-address", "192.0.2.1",
            # the kubernetes Service's endpoint would be the advertised address: no reconciler
            "--endpoint-reconciler-type", "none",
            "--tls-cert-file", crt, "--tls-private-key-file", key,
            "--client-ca-file", self.ca,
            *self.version.apiserver_flags(self.pki.path("sa.pub"), self.pki.path("sa.key")),
            "--service-cluster-ip-range", SERVICE_RANGE,
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--allow-privileged=true",
            "--kubelet-client-certificate", kcrt, "--kubelet-client-key", kkey,
            "--kubelet-preferred-address-types", "Hostname",
            "--audit-policy-file", self._audit_policy(), "--audit-log-path", self.audit_log,
            "--audit-log-format", "json", "--audit-log-mode", "blocking",
            "--profiling=false", "--v=1"])
        acrt, akey = self.admin_cert
        pki.write_kubeconfig(self.kubeconfig, self.server, self.ca, acrt, akey)
        self._requests = api_requests.ApiRequests(self.server, self.ca, acrt, akey)
        kcrt, kkey = self.kubelet_cert
        self.kubelet_kubeconfig = pki.write_kubeconfig(
            os.path.join(self.dir, "kubelet.kubeconfig"), self.server, self.ca, kcrt, kkey,
            user="system:node:" + self.node_name)
        for node in self.nodes:
            kcrt, kkey = node.kubelet_cert
            node.kubeconfig = pki.write_kubeconfig(
                os.path.join(node.dir, "kubelet.kubeconfig"), self.server, self.ca, kcrt, kkey,
                user="system:node:" + node.name)

    def _control_plane_client_flags(self):
        """What kube-controller-manager and kube-scheduler share: admin access, no leader
        election, their health port on loopback."""
        return ["--kubeconfig", self.kubeconfig, "--leader-elect=false",
                *self.version.control_plane_serving_flags(self.kubeconfig, free_port())]

    def _start_controller_manager_and_scheduler(self):
        self._run("kube-controller-manager", [
            os.path.join(self.bin, "kube-controller-manager"),
            *self._control_plane_client_flags(),
            "--controllers", "*",
            "--use-service-account-credentials=false",
            "--service-account-private-key-file", self.pki.path("sa.key"),
            "--root-ca-file", self.ca,
            "--flex-volume-plugin-dir", self.controller_plugin_dir,
            # A claim whose volume the PV controller has not seen yet (a migrated claim bound
            # again, a PV created after its claim) binds at its next periodic sync: 15 s by
            # default. Binding is the same at any period (bench/ keeps the default).
            "--pvclaimbinder-sync-period=5s",
            "--v=2", *self.controller_manager_flags])
        self._run("kube-scheduler", [os.path.join(self.bin, "kube-scheduler"),
                                     *self._control_plane_client_flags(), "--v=1"])

    def _start_containerd(self, node=None):
        """node: one of self.nodes (its tmpfs on /run/containerd is made in its namespace)."""
        socket_path = node.containerd_socket if node else self.containerd_socket
        base = os.path.dirname(socket_path)
        # containerd-shim's sockets live under /run/containerd whatever the config says; a
        # tmpfs there keeps them (and everything else of ours) off the host.
        if node is None:
            namespace.mount_tmpfs(RUN_CONTAINERD, create=True)  # in our overlay of /run
        else:
            # A node's images on a tmpfs (mounted here, it reaches the node): every node holds
            # its own copy of each (the rollout test's is about 320 MB, twice unpacked), and
            # teardown would spend half a minute deleting them from disk.
            namespace.mount_tmpfs(os.path.join(base, "root"), create=True)
        cni = os.path.join(base, "cni")
        os.makedirs(os.path.join(cni, "bin"), exist_ok=True)
        if self.pod_network:
            cni_bin = CNI_BIN
            network = {"cniVersion": "0.4.0", "name": "flexcsi-pods", "plugins": [
                {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]],
                          "routes": [{"dst": "0.0.0.0/0"}]}}]}
        else:
            # No CNI: every pod uses hostNetwork. A loadable network config still has to exist,
            # or the runtime reports its network not ready and the node never becomes Ready.
            cni_bin = os.path.join(cni, "bin")
            network = {"cniVersion": "0.4.0", "name": "unused", "plugins": [{"type": "loopback"}]}
        with open(os.path.join(cni, "10-pods.conflist"), "w") as f:
            json.dump(network, f)
        config = os.path.join(base, "config.toml")
        with open(config, "w") as f:
            f.write("""version = 2
root = "{base}/root"
state = "/run/containerd/state"
[grpc]
  address = "{sock}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # no CAP_SYS_RESOURCE here: runc would fail to set a negative oom_score_adj
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = "{cni}"
    bin_dir = "{cni_bin}"
""".format(base=base, sock=socket_path, pause=images.PAUSE, cni=cni, cni_bin=cni_bin))
        self._run("containerd" + ("-" + node.name if node else ""),
                  [*(node.enter() if node else []),
                   "containerd", "--config", config, "--log-level", "warn"])

    def _import_images(self):
        work = os.path.join(self.dir, "images")
        os.makedirs(work, exist_ok=True)
        for archive in (images.build_pause(os.path.join(work, "pause.tar"), work),
                        images.build_busybox(os.path.join(work, "busybox.tar"))):
            self.import_image(archive)

    def import_image(self, archive):
        """Imports a docker or OCI archive into the namespace kubelet's runtime uses (every
        node's at once, with several)."""
        imports = [subprocess.Popen(["ctr", "--address", socket_path, "-n", "k8s.io", "images",
                                     "import", archive], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
                   for socket_path in [n.containerd_socket for n in self.nodes]
                   or [self.containerd_socket]]
        errors = [(p, p.communicate()[1]) for p in imports]
        failed = [err.strip() for p, err in errors if p.returncode != 0]
        if failed:
            raise ClusterError("ctr images import %s: %s" % (archive, failed[0]))

    def _start_node_runtimes(self, deadline):
        """Every node's namespaces and containerd, with the images imported."""
        private = [p for p in self.host_paths]
        for node in self.nodes:
            node.create_namespaces(self._run, private,
                                   lambda ready: self._wait("a node's namespaces", deadline,
                                                            ready, "holder-" + node.name))
            node.pods_root = self.cgroups.create_node_root(node.name)
            self._start_containerd(node)
        for node in self.nodes:
            self._wait("containerd's socket on " + node.name, deadline,
                       lambda: os.path.exists(node.containerd_socket), "containerd-" + node.name)
        self._import_images()

    def _start_kubelet(self, node=None):
        """node: one of self.nodes, in its namespaces, listening on its own address."""
        if node is None:
            self.kubelet_port = free_port()
        port = node.kubelet_port if node else self.kubelet_port
        config = os.path.join(node.dir if node else self.dir, "kubelet-config.yaml")
        with open(config, "w") as f:
            json.dump({
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "address": node.address if node else "127.0.0.1", "port": port,
                "readOnlyPort": 0,
                "healthzBindAddress": "127.0.0.1", "healthzPort": free_port(),
                "cgroupDriver": "cgroupfs",
                "cgroupRoot": node.pods_root if node else self.cgroups.pods_root,
                "failSwapOn": False,
                "authentication": {"anonymous": {"enabled": False},
                                   "webhook": {"enabled": False},
                                   "x509": {"clientCAFile": self.ca}},
                "authorization": {"mode": "AlwaysAllow"},
                # A test machine's disk may be nearly full; evictions would only confuse tests.
                "evictionHard": {"memory.available": "1Mi", "nodefs.available": "0%",
                                 "imagefs.available": "0%", "nodefs.inodesFree": "0%"},
                "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
                "volumePluginDir": node.plugin_dir if node else self.plugin_dir,
                "fileCheckFrequency": "5s", "syncFrequency": "10s",
                **self.version.kubelet_status_config,
                "serializeImagePulls": False,
                "kubeAPIQPS": 50, "kubeAPIBurst": 100,
            }, f)
        own = node or self
        self._run("kubelet" + ("-" + node.name if node else ""), [
            *(node.enter() if node else []),
            os.path.join(self.bin, "kubelet"),
            "--config", config,
            "--kubeconfig", node.kubeconfig if node else self.kubelet_kubeconfig,
            "--root-dir", own.kubelet_root,
            "--cert-dir", os.path.join(node.dir if node else self.dir, "kubelet-pki"),
            "--hostname-override", node.name if node else self.node_name,
            "--node-ip", node.address if node else NODE_IP,
            "--container-runtime", "remote",
            "--container-runtime-endpoint", "unix://" + own.containerd_socket,
            *self.version.kubelet_flags(own.plugin_dir),
            "--v=2"])

    # ----- queries ----------------------------------------------------------------------

    def kubectl(self, *args, check=True, input=None, timeout=60):
        """Runs kubectl against the cluster as admin; returns stdout."""
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, *args], input=input,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise ClusterError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def kubectl_json(self, *args):
        """kubectl ARGS -o json; a plain `get` is one GET from this process (api_requests)."""
        read = api_requests.parse_get(args)
        if read is not None:
            try:
                return self._requests.get(**read)
            except api_requests.NotServed:
                pass  # a group discovery does not list (yet): kubectl says what it makes of it
            except (LookupError, RuntimeError, OSError, http.client.HTTPException) as e:
                raise ClusterError("kubectl %s: %s" % (" ".join(args), e)) from None
        return json.loads(self.kubectl(*args, "-o", "json"))

    def delete(self, kind, name, ns=None):
        """`kubectl delete KIND NAME [-n NS] --ignore-not-found --wait=false`, as one DELETE from
        this process where api_requests knows the kind."""
        args = ["delete", kind, name, "--ignore-not-found", "--wait=false"] + (
            ["-n", ns] if ns else [])
        if api_requests.knows(kind):
            try:
                return self._requests.delete(kind, name, ns)
            except api_requests.NotServed:
                pass  # a group not served (yet): kubectl says what it makes of it
            except (RuntimeError, OSError, http.client.HTTPException) as e:
                raise ClusterError("kubectl %s: %s" % (" ".join(args), e)) from None
        self.kubectl(*args)

    def _apiserver_ready(self):
        """The readiness endpoint answers 200 to admin. A direct request, not kubectl: polled
        while the API server starts, a kubectl process each time would compete with it, and a
        GET that finds the port closed is retried by kubectl for seconds."""
        try:
            return self._requests.status(self.version.readiness_path, timeout=5) == 200
        except (OSError, http.client.HTTPException):  # refused, reset, time-out
            return False

    def can_get(self, *args):
        """`kubectl get ARGS` succeeds: the object exists, or the kind is served and listable."""
        try:
            self.kubectl_json("get", *args)
            return True
        except (ClusterError, ValueError, subprocess.TimeoutExpired):
            return False

    def node_ready(self, name=None):
        try:
            node = self.kubectl_json("get", "node", name or self.node_name)
        except (ClusterError, ValueError, subprocess.TimeoutExpired):
            return False
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node.get("status", {}).get("conditions", []))


def become_subreaper():
    """Orphans (containerd's shims, the containers' processes) become our children rather than
    PID 1's: this machine's PID 1 does not reap them, and teardown must leave no zombie."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans():
    """Collects every exited child that nobody waits for (they were killed with the cluster)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep_stale_clusters():
    """Removes what a harness killed with -9 left behind: its processes and cgroups, loop
    devices on its files, and its temp dir. Its mounts went with its mount namespace."""
    for owner in cgroups.stale_owners():
        groups = cgroups.ClusterCgroups(owner)
        groups.kill_all()
        groups.remove()
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        m = re.match(r"flexcsi-cluster-(\d+)-", name)
        if m and not cgroups.pid_alive(int(m.group(1))):
            path = os.path.join(tmp, name)
            namespace.unmount_below(path)
            namespace.detach_loop_devices_below(path + "/")
            # and those a pod's driver attached, which the kernel names by the pod's path
            namespace.detach_loop_devices_of_files_below(path)
            if not os.path.exists(os.path.join(path, KEPT_MARKER)):
                shutil.rmtree(path, ignore_errors=True)
