"""Provisioning at scale on one machine, for the scale suite (CI, 100 nodes) and
bench/big_cluster_bench.py (1,000 nodes): simulated nodes (node_simulator.py, each registered
for csi-loopback as flexcsi-bridge registers a driver), one real csi-loopback controller behind
slow_csi_proxy.py (no delay: it counts CreateVolume calls and drops their topology, so one
node-local driver serves every simulated node while the provisioners still compute and send the
topology of all of them), and the provisioner under test: flexcsi-controller or the real
csi-provisioner v3.4.1 with its Topology feature on, each with its defaults otherwise.

    scale = ScaleHarness(cluster, nodes=100)
    scale.start()                                   # driver, proxy, simulated nodes, classes
    run = scale.provisioner("flexcsi-controller")   # or "csi-provisioner"
    phase = scale.provision(run, "imm", 200, wffc=False)   # claims, waits for every PV
    scale.delete_all(run, ["imm"])                  # pods, claims; waits for PVs and volumes
    run.stop(); scale.stop()

The harness's own requests carry the user agent `flexcsi-scale-workload`."""
import collections
import concurrent.futures
import datetime
import http.client
import json
import os
import threading
import time

import namespace
from cluster import Process
from keepalive_api import ApiError, KeepAliveApi

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = "loopback.csi.flexcsi.io"
FLEX_DRIVER = "flexcsi/loopback"
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
ZONE_LABEL = "topology.kubernetes.io/zone"
WORKLOAD_AGENT = "flexcsi-scale-workload"
IMAGE = "localhost/flexcsi/busybox:1"
CLAIM_SIZE = "16Mi"
CLASSES = {"imm": "Immediate", "wffc": "WaitForFirstConsumer"}
# How each provisioner's requests are told apart in the audit log (user agent prefix).
AGENTS = {"flexcsi-controller": "flexcsi-controller", "csi-provisioner": "csi-provisioner"}


def build_dir():
    return os.environ.get("FLEXCSI_BUILD_DIR") or os.path.join(HERE, "..", "..", "build")


def wait_until(what, check, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))
        time.sleep(interval)


def process_usage(pid):
    """(CPU seconds, RSS MiB, peak RSS MiB) of a running process from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    rss = hwm = 0.0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return cpu, rss, hwm



def audit_seconds(stamp):
    return datetime.datetime.strptime(stamp[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def audit_requests(c, windows):
    """{(tool, phase): {"requests", "by_kind", "p50", "p99"}} from the audit log and the files
    kube-apiserver rotated it into; `windows` maps (tool, phase) to a wall-clock window. One
    request is one auditID (a watch logs ResponseStarted and ResponseComplete)."""
    logs = os.path.dirname(c.audit_log)
    seen = collections.defaultdict(dict)
    for name in sorted(os.listdir(logs)):
        if not (name.startswith("audit") and ".log" in name):
            continue
        with open(os.path.join(logs, name)) as f:
            for line in f:
                agent = next((t for t, a in AGENTS.items() if '"userAgent":"' + a in line), None)
                if agent is None:
                    continue
                e = json.loads(line)
                at = audit_seconds(e["requestReceivedTimestamp"])
                for (tool, phase), (start, end) in windows.items():
                    if tool == agent and start <= at <= end:
                        seen[(tool, phase)][e["auditID"]] = e
    out = {}
    for key in windows:
        events = list(seen[key].values())
        kinds = collections.Counter()
        for e in events:
            ref = e.get("objectRef", {})
            kinds["%s %s%s" % (e["verb"], ref.get("resource", "-"),
                               "/" + ref["subresource"] if ref.get("subresource") else "")] += 1
        held = sorted(audit_seconds(e["stageTimestamp"])
                      - audit_seconds(e["requestReceivedTimestamp"])
                      for e in events if e["verb"] != "watch")
        out[key] = {"requests": len(events), "by_kind": dict(kinds.most_common()),
                    "p50": held[len(held) // 2] if held else 0,
                    "p99": held[int(len(held) * 0.99)] if held else 0}
    return out



def scheduler_selections(c, ns):
    """{claim name: time} of kube-scheduler's writes of the claims of `ns` (the selected-node
    annotation of a WaitForFirstConsumer claim: the moment a provisioner may start), from the
    audit log."""
    logs = os.path.dirname(c.audit_log)
    selected = {}
    for name in sorted(os.listdir(logs)):
        if not (name.startswith("audit") and ".log" in name):
            continue
        with open(os.path.join(logs, name)) as f:
            for line in f:
                if '"userAgent":"kube-scheduler' not in line or '"verb":"update"' not in line:
                    continue
                e = json.loads(line)
                ref = e.get("objectRef", {})
                if ref.get("resource") == "persistentvolumeclaims" and ref.get("namespace") == ns:
                    at = audit_seconds(e["requestReceivedTimestamp"])
                    selected[ref["name"]] = min(at, selected.get(ref["name"], at))
    return selected


class PvWatch:
    """Every PV the API server reports, with the wall time it was first seen: one watch from
    this process (a LIST each second of thousands of PVs would load the API server more than the
    provisioners do)."""

    def __init__(self, api):
        self.api = api
        self.first_seen = {}   # PV name -> time.time()
        self.claim_of = {}     # PV name -> "ns/name" of its claimRef
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._relist()
        self.thread.start()

    def _seen(self, pv, deleted=False):
        name = pv["metadata"]["name"]
        with self.lock:
            if deleted:
                self.first_seen.pop(name, None)
                self.claim_of.pop(name, None)
                return
            self.first_seen.setdefault(name, time.time())
            ref = pv["spec"].get("claimRef") or {}
            if ref:
                self.claim_of[name] = "%s/%s" % (ref.get("namespace"), ref.get("name"))

    def _run(self):
        while not self.stopping:
            connection = None
            try:
                connection, response = self.api.stream(
                    "/api/v1/persistentvolumes?watch=1&timeoutSeconds=600&resourceVersion="
                    + self.version)
                for line in response:
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":  # too old: list again
                        self._relist()
                        break
                    self.version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen(obj)
                    elif event["type"] == "DELETED":
                        self._seen(obj, deleted=True)
            except (OSError, http.client.HTTPException, ValueError, ApiError) as e:
                if not self.stopping:
                    print("PV watch: %s; again" % e, flush=True)
                    time.sleep(0.5)
                    if isinstance(e, ApiError) and e.status == 410:
                        self._relist()
            finally:
                if connection is not None:
                    connection.close()

    def _relist(self):
        listed = self.api.call("GET", "/api/v1/persistentvolumes")
        with self.lock:
            self.first_seen = {n: t for n, t in self.first_seen.items()
                               if n in {pv["metadata"]["name"] for pv in listed["items"]}}
            self.claim_of = {n: c for n, c in self.claim_of.items() if n in self.first_seen}
        for pv in listed["items"]:
            self._seen(pv)
        self.version = listed["metadata"]["resourceVersion"]

    def of_namespace(self, ns):
        """{claim name: [PV names]} of the PVs whose claimRef lies in `ns`."""
        with self.lock:
            out = collections.defaultdict(list)
            for pv, claim in self.claim_of.items():
                if claim.startswith(ns + "/"):
                    out[claim.split("/", 1)[1]].append(pv)
            return dict(out)

    def first_seen_of_claims(self, ns):
        """{claim name: when its first PV was seen} for the claims of `ns`."""
        with self.lock:
            out = {}
            for pv, claim in self.claim_of.items():
                if claim.startswith(ns + "/"):
                    name = claim.split("/", 1)[1]
                    out[name] = min(self.first_seen[pv], out.get(name, self.first_seen[pv]))
            return out

    def last_seen(self, pvs):
        with self.lock:
            return max(self.first_seen[p] for p in pvs)

    def count(self):
        with self.lock:
            return len(self.first_seen)


class Provisioner:
    """flexcsi-controller or csi-provisioner, running for the driver."""

    def __init__(self, harness, kind, extra=()):
        self.kind, self.harness = kind, harness
        c = harness.cluster
        if kind == "flexcsi-controller":
            # FLEXCSI_CONTROLLER_BINARY: another build, to compare before and after a change
            argv = [os.environ.get("FLEXCSI_CONTROLLER_BINARY")
                    or os.path.join(build_dir(), "controller", "flexcsi-controller"),
                    "--kubeconfig", c.kubeconfig, "--bridge-config", harness.bridge_config,
                    "--journal", os.path.join(harness.dir, "controller-journal.db"),
                    "--timeout", "60s", *extra]
        else:
            argv = [os.path.join(c.bin, "csi-provisioner"), "--csi-address", harness.proxy_socket,
                    "--kubeconfig", c.kubeconfig, "--timeout", "60s",
                    "--feature-gates=Topology=true", *extra]
        self.process = Process(kind, argv, os.path.join(c.logs, kind + ".log"))
        self.argv = argv

    def start(self):
        self.process.start()
        self.started = time.time()

    @property
    def pid(self):
        return self.process.popen.pid

    def usage(self):
        if not self.process.alive():
            raise AssertionError("%s exited:\n%s" % (self.kind, self.process.tail()))
        return process_usage(self.pid)

    def stop(self):
        self.process.stop()


class ScaleHarness:
    def __init__(self, cluster, nodes, zones=3, simulator_workers=0):
        self.cluster, self.nodes, self.zones = cluster, nodes, zones
        self.simulator_workers = simulator_workers
        self.dir = os.path.join(cluster.dir, "scale")
        self.state_dir = os.path.join(self.dir, "csi-state")
        self.driver_socket = os.path.join(self.dir, "csi.sock")
        self.proxy_socket = os.path.join(self.dir, "proxy.sock")
        self.calls_log = os.path.join(cluster.logs, "csi-calls.jsonl")
        self.bridge_config = os.path.join(self.dir, "bridge.json")
        self.procs = {}
        self.api = KeepAliveApi(cluster.server, cluster.ca, *cluster.admin_cert, WORKLOAD_AGENT)
        self.watch = PvWatch(self.api)
        # csi-loopback is the node plugin of the first simulated node: its volumes' topology
        # names that node, so every PV's node affinity matches a node.
        self.driver_node = "sim-00000"

    # ----- set-up -------------------------------------------------------------------------

    def start(self, timeout=900):
        c = self.cluster
        os.makedirs(self.state_dir, exist_ok=True)
        # csi-loopback rewrites its whole state file (fsync'd) at every volume: on tmpfs that
        # costs the driver, not the disk, and stays the same for both provisioners
        namespace.mount_tmpfs(self.state_dir)
        self._run("csi-loopback", [
            os.path.join(build_dir(), "drivers", "loopback", "csi-loopback"),
            "--endpoint", "unix://" + self.driver_socket, "--nodeid", self.driver_node,
            "--driver-name", DRIVER, "--state-dir", self.state_dir])
        wait_until("csi-loopback's socket", lambda: os.path.exists(self.driver_socket), 60)
        self._run("csi-proxy", [
            "/usr/bin/python3", os.path.join(HERE, "slow_csi_proxy.py"),
            "--listen", self.proxy_socket, "--driver", self.driver_socket, "--delay", "0",
            "--log", self.calls_log, "--topology-as-asked", "--workers", "128"])
        wait_until("the proxy's socket", lambda: os.path.exists(self.proxy_socket), 60)
        with open(self.bridge_config, "w") as f:
            json.dump({"kubeletRoot": "none", "socket": os.path.join(self.dir, "bridge.sock"),
                       "stateDatabase": os.path.join(self.dir, "state.db"),
                       "registerDrivers": False,
                       "drivers": [{"flexDriver": FLEX_DRIVER,
                                    "csiEndpoint": "unix://" + self.proxy_socket,
                                    "attach": True, "accessMode": "ReadWriteOnce",
                                    "rule": {"csiDriver": DRIVER,
                                             "volumeHandle": {"fromOption": "volumeID"},
                                             "defaultFsType": "xfs"}}]}, f)
        ready = os.path.join(self.dir, "simulator.ready")
        crt, key = c.admin_cert
        began = time.monotonic()
        self._run("node-simulator", [
            "/usr/bin/python3", os.path.join(HERE, "node_simulator.py"), "--server", c.server,
            "--ca", c.ca, "--cert", crt, "--key", key, "--count", str(self.nodes),
            "--prefix", "sim", "--driver", DRIVER, "--topology-key", TOPOLOGY_KEY,
            "--zones", str(self.zones), "--workers", str(self.simulator_workers),
            "--ready-file", ready])
        wait_until("%d simulated nodes" % self.nodes,
                   lambda: os.path.exists(ready) or self._check_alive(), timeout, 1)
        self.timings = {"nodes registered": time.monotonic() - began}
        for prefix, mode in CLASSES.items():
            self.api.call("POST", "/apis/storage.k8s.io/v1/storageclasses", {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": prefix}, "provisioner": DRIVER,
                "reclaimPolicy": "Delete", "volumeBindingMode": mode})
        self.watch.start()

    def _run(self, name, argv):
        proc = Process(name, argv, os.path.join(self.cluster.logs, name + ".log"))
        proc.start()
        self.procs[name] = proc
        return proc

    def _check_alive(self):
        for proc in self.procs.values():
            if not proc.alive():
                raise AssertionError("%s exited:\n%s" % (proc.name, proc.tail()))
        return False

    def usage(self, name):
        """(CPU s, RSS MiB, peak RSS MiB) of one of the harness's processes, or of a cluster
        component (kube-apiserver, ...)."""
        proc = self.procs.get(name) or self.cluster.procs[name]
        return process_usage(proc.popen.pid)

    def stop(self):
        self.watch.stopping = True
        for proc in self.procs.values():
            proc.stop()

    def provisioner(self, kind, extra=()):
        run = Provisioner(self, kind, extra)
        run.start()
        return run

    # ----- the workload -------------------------------------------------------------------

    def create_claims(self, ns, count, wffc, workers=16):
        """`count` claims of class imm or wffc in a new namespace `ns`; with wffc, a pod for
        each, its node selector naming one of the zones in turn (the scheduler picks the node
        and sets the claim's selected-node; the pod itself never runs on a simulated node)."""
        self.api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": ns}})
        self._wait_service_account(ns)
        klass = "wffc" if wffc else "imm"

        def create(i):
            name = "c-%05d" % i
            self.api.call("POST", "/api/v1/namespaces/%s/persistentvolumeclaims" % ns, {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": klass,
                         "resources": {"requests": {"storage": CLAIM_SIZE}}}})
            if wffc:
                self.api.call("POST", "/api/v1/namespaces/%s/pods" % ns, {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                    "spec": {"nodeSelector": {ZONE_LABEL: "zone-" + "abc"[i % 3]},
                             "containers": [{"name": "c", "image": IMAGE,
                                             "command": ["sleep", "3600"],
                                             "volumeMounts": [{"name": "v",
                                                               "mountPath": "/v"}]}],
                             "volumes": [{"name": "v", "persistentVolumeClaim": {
                                 "claimName": name}}]}})
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, range(count)))

    def _wait_service_account(self, ns):
        def exists():
            try:
                self.api.call("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns,
                              attempts=1)
                return True
            except ApiError:
                return False
        wait_until("the default service account of " + ns, exists, 120, 0.2)

    def provision(self, run, ns, count, wffc, timeout=3600):
        """Creates the claims and waits until each has a PV; returns the phase's figures."""
        load = os.getloadavg()[0]
        cpu0, _, _ = run.usage()
        api0 = self.usage("kube-apiserver")[0]
        began = time.time()
        self.create_claims(ns, count, wffc)
        created = time.time() - began
        wait_until("a PV for each of %d claims in %s (%s)" % (count, ns, run.kind),
                   lambda: len(self.watch.of_namespace(ns)) >= count or self._provisioner_alive(
                       run), timeout, 0.5)
        pvs = [p for names in self.watch.of_namespace(ns).values() for p in names]
        seconds = self.watch.last_seen(pvs) - began
        cpu1, rss, hwm = run.usage()
        return {"phase": ns, "claims": count, "wffc": wffc, "seconds": seconds,
                "created": created, "cpu": cpu1 - cpu0, "hwm": hwm, "rss": rss,
                "apiserver_cpu": self.usage("kube-apiserver")[0] - api0,
                "window": (began, time.time()), "load": (load, os.getloadavg()[0])}

    def _provisioner_alive(self, run):
        run.usage()  # raises when it exited
        return False

    def wait_bound(self, namespaces, timeout=1800):
        """Until every claim of `namespaces` is Bound: the PV controller binds after the PV
        exists, at its own pace, and a provisioner sees each bind as an update."""
        def unbound():
            return [c["metadata"]["name"] for ns in namespaces for c in self.api.call(
                "GET", "/api/v1/namespaces/%s/persistentvolumeclaims" % ns)["items"]
                if c.get("status", {}).get("phase") != "Bound"]
        wait_until("every claim of %s Bound" % ", ".join(namespaces), lambda: not unbound(),
                   timeout, 1)

    def idle(self, run, seconds):
        """The provisioner left alone with everything bound for `seconds`."""
        load = os.getloadavg()[0]
        cpu0, _, _ = run.usage()
        api0 = self.usage("kube-apiserver")[0]
        began = time.time()
        time.sleep(seconds)  # the measurement itself: a fixed window of idleness
        cpu1, rss, hwm = run.usage()
        return {"phase": "idle", "seconds": seconds, "cpu": cpu1 - cpu0, "rss": rss,
                "hwm": hwm, "apiserver_cpu": self.usage("kube-apiserver")[0] - api0,
                "window": (began, time.time()), "load": (load, os.getloadavg()[0])}

    def check_one_pv_each(self, ns, count):
        """Problems, if any: claims without exactly one PV."""
        by_claim = self.watch.of_namespace(ns)
        problems = ["%s/%s: %d PVs" % (ns, claim, len(pvs))
                    for claim, pvs in by_claim.items() if len(pvs) != 1]
        if len(by_claim) != count:
            problems.append("%s: PVs for %d claims of %d" % (ns, len(by_claim), count))
        return problems

    def delete_all(self, run, namespaces, timeout=1800, workers=16):
        """Deletes the pods (at once: no kubelet will confirm them) and the claims of
        `namespaces`; waits until the provisioner deleted every PV and its volume."""
        def delete(path):
            self.api.call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                           "gracePeriodSeconds": 0}, ok=(200, 202, 404))
        for ns in namespaces:
            listed = {kind: self.api.call("GET", "/api/v1/namespaces/%s/%s" % (ns, kind))
                      for kind in ("pods", "persistentvolumeclaims")}
            paths = ["/api/v1/namespaces/%s/%s/%s" % (ns, kind, o["metadata"]["name"])
                     for kind in ("pods", "persistentvolumeclaims")
                     for o in listed[kind]["items"]]
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                list(pool.map(delete, paths))
        wait_until("every PV of %s deleted by %s" % (namespaces, run.kind),
                   lambda: not any(self.watch.of_namespace(ns) for ns in namespaces)
                   or self._provisioner_alive(run), timeout, 1)
        wait_until("no volume left in csi-loopback", lambda: not self.driver_volumes(), 120)

    def unhealthy_nodes(self):
        """Simulated nodes that are not Ready or carry a taint (their heartbeats came late)."""
        nodes = self.api.call("GET", "/api/v1/nodes?resourceVersion=0")["items"]
        return [n["metadata"]["name"] for n in nodes
                if n["metadata"]["name"].startswith("sim-") and (
                    n["spec"].get("taints") or not any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"]["conditions"]))]

    def driver_volumes(self):
        try:
            with open(os.path.join(self.state_dir, "state.json")) as f:
                return json.load(f).get("volumes", [])
        except FileNotFoundError:
            return []

    def create_volume_calls(self, window):
        """CreateVolume calls the proxy passed to the driver within the wall-clock window."""
        try:
            with open(self.calls_log) as f:
                events = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return 0
        return sum(1 for e in events if e["event"] == "forwarded"
                   and window[0] <= e["at"] <= window[1])
