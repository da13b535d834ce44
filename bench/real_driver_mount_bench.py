#!/usr/bin/python3
"""What flexexec and flexcsi-bridge add to a pod's volume mount and unmount with two real CSI
drivers, without Kubernetes: ceph-csi v3.8.1's CephFS driver (ceph-fuse) against a real
single-host Ceph, and JuiceFS CSI v0.24.6 (`--by-process`, juicefs 1.1.6, redis-server), both
from the folder FLEXCSI_THIRD_PARTY_CSI names (its README has the facts; default
../shared/third-party-csi beside the repository).

For each driver: one volume made by the driver's real CreateVolume with its real secrets, then
N rounds, each (in turn, so that the machine's load falls on both alike)
  a. flexexec `mount <pod volume dir> <options json>` and `unmount <dir>`, exec'd as kubelet
     execs a FlexVolume driver, with kubelet's option keys (kubernetes.io/pod.*, pvOrVolumeName,
     readwrite, fsType and the PV secretRef's keys as kubernetes.io/secret/<key>, base64) and
     the volume's options as the shipped profile (drivers/profiles/) reads them; the bridge
     stages CephFS itself (attach: false) on the first mount and unstages it on the last unmount;
  b. the same CSI calls sent straight to the driver from this one process over one gRPC
     channel: NodeStageVolume + NodePublishVolume, then NodeUnpublishVolume + NodeUnstageVolume
     for CephFS; NodePublishVolume, then NodeUnpublishVolume for JuiceFS (it has no stage).
After every mount, a file is written in the mount and read back, and the mount must be the
driver's FUSE file system; the files of earlier rounds must be there too (one volume).

Everything runs in a private mount namespace and a loopback-only network namespace (JuiceFS
reports usage over the network otherwise), under a temp dir of its own; /etc/ceph,
/etc/ceph-csi-config, /var/lib/jfs and /var/jfsCache exist only there (overlays, as the cluster
suites make them). Teardown, also after a failure: the bridge and the drivers stopped, every
mount of the run unmounted, ceph-fuse and juicefs processes of the run killed, Ceph and redis
stopped, the temp dir removed (kept with --keep). Secrets are never printed.

Usage (as root, from the repository root, after building flexcsi-bridge, flexexec and flexcsi):
  bench/real_driver_mount_bench.py [--iterations 20] [--drivers cephfs,juicefs] [--keep]
A benchmark: it prints figures and asserts nothing about time."""
import argparse
import base64
import importlib
import json
import os
import secrets as token_source
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
import ceph_backend  # noqa: E402
from ceph_backend import CephCluster  # noqa: E402
from cephcsi_node import ETC_PATHS, CephCsiNode  # noqa: E402
from clustertest import build_dir, run  # noqa: E402
import juicefs_backend  # noqa: E402
import namespace  # noqa: E402
from profile_bridge import ProfileBridge, load_profile  # noqa: E402

NODE_NAME = "bench-node"
CEPH_CLUSTER_ID = "bench-ceph"
GIB = 1 << 30
CSI_TIMEOUT = 120


class BenchError(Exception):
    """A step failed; the message names it (never a secret's value)."""


# ----- figures ---------------------------------------------------------------------------------

def percentile(samples, p):
    """Nearest-rank percentile of `samples` (ms)."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil
    return ordered[int(rank) - 1]


def summary(samples):
    return {"n": len(samples), "median": percentile(samples, 50), "p90": percentile(samples, 90),
            "min": min(samples), "mean": sum(samples) / len(samples)}


def print_row(label, samples):
    s = summary(samples)
    print("  %-44s n=%-3d median %8.1f ms  p90 %8.1f ms  mean %8.1f ms  min %8.1f ms"
          % (label, s["n"], s["median"], s["p90"], s["mean"], s["min"]), flush=True)


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


# ----- the CSI client: one process, one channel per driver ------------------------------------

def compile_stubs(out):
    """csi_pb2 and csi_pb2_grpc from the repository's proto/csi.proto, made under `out`."""
    import grpc_tools
    proto = os.path.join(REPO, "proto", "csi.proto")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    os.makedirs(out)
    run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.dirname(proto), "-I", include,
         "--python_out=" + out, "--grpc_python_out=" + out, os.path.basename(proto)])
    sys.path.insert(0, out)
    return importlib.import_module("csi_pb2"), importlib.import_module("csi_pb2_grpc")


class CsiDriver:
    """Calls on one driver's socket. Errors are raised as BenchError with every secret value of
    the run replaced."""

    def __init__(self, pb, pb_grpc, socket_path, hidden):
        import grpc
        self.grpc, self.pb = grpc, pb
        self.channel = grpc.insecure_channel("unix:" + socket_path)
        self.controller = pb_grpc.ControllerStub(self.channel)
        self.node = pb_grpc.NodeStub(self.channel)
        self.hidden = hidden

    def close(self):
        self.channel.close()

    def call(self, stub, method, **fields):
        request = getattr(self.pb, method + "Request")(**fields)
        try:
            return getattr(stub, method)(request, timeout=CSI_TIMEOUT)
        except self.grpc.RpcError as e:
            raise BenchError("%s: %s: %s" % (method, e.code().name,
                                              redact(e.details() or "", self.hidden)))

    def capability(self):
        cap = self.pb.VolumeCapability(mount=self.pb.VolumeCapability.MountVolume(fs_type=""))
        # the profiles' accessMode ReadWriteMany, as the bridge maps it
        cap.access_mode.mode = self.pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
        return cap


def redact(text, hidden):
    for value in hidden:
        if value:
            text = text.replace(value, "<redacted>")
    return text


# ----- what kubelet does -----------------------------------------------------------------------

def go_json(mapping):
    """kubelet's json.Marshal of map[string]string: sorted keys, no spaces, <>& escaped."""
    text = json.dumps(mapping, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def flexexec_path(plugin_dir, flex_driver):
    vendor_name = flex_driver.replace("/", "~")
    return os.path.join(plugin_dir, vendor_name, flex_driver.split("/")[-1])


def pod_volume_dir(kubelet_root, pod_uid, flex_driver, volume_name):
    return os.path.join(kubelet_root, "pods", pod_uid, "volumes", flex_driver.replace("/", "~"),
                        volume_name)


def kubelet_mount_options(volume_name, pod_name, pod_uid, secret, options):
    m = {"kubernetes.io/fsType": "", "kubernetes.io/readwrite": "rw",
         "kubernetes.io/pvOrVolumeName": volume_name, "kubernetes.io/pod.name": pod_name,
         "kubernetes.io/pod.namespace": "bench", "kubernetes.io/pod.uid": pod_uid,
         "kubernetes.io/serviceAccount.name": "default"}
    for key, value in secret.items():
        m["kubernetes.io/secret/" + key] = base64.b64encode(value.encode()).decode()
    m.update(options)
    return go_json(m)


def exec_driver(argv, hidden):
    """One exec of a FlexVolume driver, its output captured (kubelet's CombinedOutput); the
    elapsed ms. A reply that is not Success raises."""
    began = time.perf_counter()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    elapsed = (time.perf_counter() - began) * 1000
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        reply = {}
    if done.returncode != 0 or reply.get("status") != "Success":
        raise BenchError("flexexec %s: exit %d: %s" % (argv[1], done.returncode,
                                                       redact(done.stdout.decode(errors="replace"),
                                                              hidden)[:2000]))
    return elapsed


def spawn_baseline_ms(runs=200):
    """What this process pays to fork+exec+wait a program that does nothing, the same way."""
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
        samples.append((time.perf_counter() - began) * 1000)
    return percentile(samples, 50)


# ----- the checks ------------------------------------------------------------------------------

def fs_type_at(path):
    with open("/proc/self/mountinfo") as f:
        for line in reversed(f.readlines()):  # the topmost mount on the path
            fields = line.split()
            if namespace._unescape(fields[4]) == path:
                return fields[fields.index("-") + 1]
    return None


def check_mount(target, fs_type, name, expected_files):
    """The mount is the driver's file system; a file written there reads back; the volume holds
    the files of the rounds before (all paths mount one volume)."""
    found = fs_type_at(target)
    if found != fs_type:
        raise BenchError("%s is %s, not a %s mount" % (target, found or "not mounted", fs_type))
    token = token_source.token_hex(16)
    path = os.path.join(target, name)
    with open(path, "w") as f:
        f.write(token)
        f.flush()
        os.fsync(f.fileno())
    with open(path) as f:
        if f.read() != token:
            raise BenchError("%s read back different bytes" % path)
    present = sorted(n for n in os.listdir(target) if n.startswith("round-"))
    missing = sorted(set(expected_files) - set(present))
    if missing:
        raise BenchError("%s lacks files of earlier rounds: %s" % (target, missing[:5]))


def mounts_of(fs_type, below):
    with open("/proc/self/mountinfo") as f:
        rows = [line.split() for line in f]
    return [namespace._unescape(r[4]) for r in rows
            if r[r.index("-") + 1] == fs_type
            and any(namespace._unescape(r[4]).startswith(b + "/") for b in below)]


def check_unmounted(target, fs_type, below):
    """The target is no mount any more, and within 5 s no mount of the file system is left
    below `below` (the stagings, the driver's own mounts): an unmount undid the whole mount."""
    if fs_type_at(target) is not None:
        raise BenchError("%s is still mounted after unmount" % target)
    deadline = time.monotonic() + 5
    while mounts_of(fs_type, below):
        if time.monotonic() > deadline:
            raise BenchError("left mounted after unmount: %s" % mounts_of(fs_type, below))
        time.sleep(0.05)


# ----- one driver ------------------------------------------------------------------------------

class Plan:
    """What differs between the drivers. start() brings the backend, the driver and the bridge
    up (registering their teardown in bench.cleanup first) and makes the volume; it then holds
    the FlexVolume side (flex_driver, pv_name, flex_options, flex_secret), the direct side
    (direct_mount(target, pod_name, pod_uid), direct_unmount(target)) and what the checks
    look for (fs_type, and mounts_below: where no mount of it may stay after an unmount)."""

    def __init__(self, bench):
        self.bench = bench


def measure(bench, plan, iterations, pause):
    """Runs one warm-up and `iterations` timed rounds of both paths, interleaved; prints and
    returns the figures."""
    node = bench.node
    exe = flexexec_path(node.plugin_dir, plan.flex_driver)
    samples = {"flex mount": [], "flex unmount": [], "direct mount": [], "direct unmount": []}
    written = []
    load_before = load()
    for i in range(iterations + 1):
        timed = i > 0
        # a: through flexexec and the bridge, a fresh pod each round
        pod_uid = str(uuid.uuid4())
        pod_name = "bench-%d" % i
        target = pod_volume_dir(node.kubelet_root, pod_uid, plan.flex_driver, plan.pv_name)
        os.makedirs(target)  # kubelet makes the pod's volume dir before it calls mount
        options = kubelet_mount_options(plan.pv_name, pod_name, pod_uid, plan.flex_secret,
                                        plan.flex_options)
        mount_ms = exec_driver([exe, "mount", target, options], bench.hidden)
        name = "round-%03d-flex" % i
        check_mount(target, plan.fs_type, name, written)
        written.append(name)
        unmount_ms = exec_driver([exe, "unmount", target], bench.hidden)
        check_unmounted(target, plan.fs_type, plan.mounts_below)
        shutil.rmtree(os.path.join(node.kubelet_root, "pods", pod_uid))  # kubelet's cleanup
        if timed:
            samples["flex mount"].append(mount_ms)
            samples["flex unmount"].append(unmount_ms)
        time.sleep(pause)

        # b: the same CSI calls straight to the driver
        pod_uid = str(uuid.uuid4())
        target = os.path.join(node.dir, "direct", "pods", pod_uid, "mount")
        os.makedirs(target)
        began = time.perf_counter()
        plan.direct_mount(target, pod_name, pod_uid)
        mount_ms = (time.perf_counter() - began) * 1000
        name = "round-%03d-direct" % i
        check_mount(target, plan.fs_type, name, written)
        written.append(name)
        began = time.perf_counter()
        plan.direct_unmount(target)
        unmount_ms = (time.perf_counter() - began) * 1000
        check_unmounted(target, plan.fs_type, plan.mounts_below)
        shutil.rmtree(os.path.dirname(target))
        if timed:
            samples["direct mount"].append(mount_ms)
            samples["direct unmount"].append(unmount_ms)
        time.sleep(pause)
    load_after = load()

    print("\n== %s: %d rounds (+1 warm-up), pause %.1f s; load average before %s, after %s =="
          % (plan.title, iterations, pause, load_before, load_after))
    print_row("flexexec mount (via flexcsi-bridge)", samples["flex mount"])
    print_row("%s (direct gRPC)" % plan.direct_mount_calls, samples["direct mount"])
    print_row("flexexec unmount (via flexcsi-bridge)", samples["flex unmount"])
    print_row("%s (direct gRPC)" % plan.direct_unmount_calls, samples["direct unmount"])
    for what in ("mount", "unmount"):
        flex, direct = samples["flex " + what], samples["direct " + what]
        f, d = summary(flex), summary(direct)
        # round by round: each round's two paths ran seconds apart, under about the same load
        paired = summary([a - b for a, b in zip(flex, direct)])
        print("  overhead per %-7s call: median %+7.1f ms, p90 %+7.1f ms (%.2fx the direct "
              "median); round by round: median %+7.1f ms"
              % (what, f["median"] - d["median"], f["p90"] - d["p90"],
                 f["median"] / d["median"] if d["median"] else 0, paired["median"]))
    print("  checked: %d mounts of %s, each written and read back, all %d files there at the "
          "end; after each unmount no mount of it left (stagings and the driver's own)"
          % (len(written), plan.fs_type, len(written)), flush=True)
    return samples


class CephFsPlan(Plan):
    title = "CephFS (ceph-csi v3.8.1, ceph-fuse)"
    flex_driver = "flexcsi/cephfs"
    fs_type = "fuse.ceph-fuse"
    direct_mount_calls = "NodeStage + NodePublish"
    direct_unmount_calls = "NodeUnpublish + NodeUnstage"

    def start(self):
        bench = self.bench
        unpacked = ceph_backend.unpack(bench.third_party, os.path.join(bench.node.dir, "ceph-csi"))
        self.ceph = CephCluster(unpacked, os.path.join(bench.node.dir, "ceph"))
        bench.cleanup.append(("Ceph", self.ceph.stop))
        began = time.monotonic()
        self.ceph.start()
        print("Ceph up in %.1f s" % (time.monotonic() - began), flush=True)
        node_key = self.ceph.env["CSI_NODE_KEY"]
        provisioner_key = self.ceph.env["CSI_PROVISIONER_KEY"]
        bench.hidden += [node_key, provisioner_key, self.ceph.env.get("CEPH_ADMIN_KEY", "")]
        # cephcsi and a bridge serving drivers/profiles/cephfs.yaml as shipped (its endpoint
        # aside), no cluster access: the PV's secretRef keys come with the mount call
        self.node = CephCsiNode(bench.node, self.ceph, os.path.join(unpacked, "bin", "cephcsi"),
                                CEPH_CLUSTER_ID, ["cephfs"], kubeconfig="")
        bench.cleanup.append(("ceph-fuse of the run", lambda: stop_ceph_fuse(bench.node.dir)))
        bench.cleanup.append(("bridge and cephcsi", self.node.stop))
        self.node.start()
        self.csi = CsiDriver(bench.pb, bench.pb_grpc, self.node.csi_socket, bench.hidden)
        bench.cleanup.append(("gRPC channel", self.csi.close))
        self.provisioner_secret = {"adminID": "csi-cephfs-provisioner", "adminKey": provisioner_key}
        self.node_secret = {"adminID": "csi-cephfs-node", "adminKey": node_key}

        began = time.monotonic()
        created = self.csi.call(
            self.csi.controller, "CreateVolume", name="bench-" + str(uuid.uuid4()),
            capacity_range=bench.pb.CapacityRange(required_bytes=GIB),
            volume_capabilities=[self.csi.capability()],
            parameters={"clusterID": CEPH_CLUSTER_ID, "fsName": ceph_backend.FS_NAME,
                        "mounter": "fuse"},
            secrets=self.provisioner_secret).volume
        print("CreateVolume: %s in %.2f s" % (created.volume_id, time.monotonic() - began))
        self.volume_id = created.volume_id
        self.context = dict(created.volume_context)
        bench.cleanup.append(("DeleteVolume", lambda: self.csi.call(
            self.csi.controller, "DeleteVolume", volume_id=self.volume_id,
            secrets=self.provisioner_secret)))
        # the FlexVolume PV flexcsi-controller writes for such a volume: the id as option
        # volumeHandle, the volume context as options; the node-stage Secret as a secretRef
        # (typed flexcsi/cephfs), which kubelet passes with the mount call
        self.pv_name = "pv-cephfs-bench"
        self.flex_options = dict(self.context, volumeHandle=self.volume_id)
        self.flex_secret = self.node_secret
        self.staging = os.path.join(bench.node.dir, "direct", "staging")
        os.makedirs(self.staging)
        self.mounts_below = [bench.node.dir]

    def direct_mount(self, target, pod_name, pod_uid):
        cap = self.csi.capability()
        self.csi.call(self.csi.node, "NodeStageVolume", volume_id=self.volume_id,
                      staging_target_path=self.staging, volume_capability=cap,
                      volume_context=self.context, secrets=self.node_secret)
        self.csi.call(self.csi.node, "NodePublishVolume", volume_id=self.volume_id,
                      staging_target_path=self.staging, target_path=target,
                      volume_capability=cap, volume_context=self.context)

    def direct_unmount(self, target):
        self.csi.call(self.csi.node, "NodeUnpublishVolume", volume_id=self.volume_id,
                      target_path=target)
        self.csi.call(self.csi.node, "NodeUnstageVolume", volume_id=self.volume_id,
                      staging_target_path=self.staging)


class JuiceFsPlan(Plan):
    title = "JuiceFS (JuiceFS CSI v0.24.6 --by-process, juicefs 1.1.6, redis)"
    flex_driver = "juicedata/juicefs"
    fs_type = "fuse.juicefs"
    direct_mount_calls = "NodePublish"
    direct_unmount_calls = "NodeUnpublish"

    def start(self):
        bench = self.bench
        self.jfs = juicefs_backend.JuiceFs(bench.node, NODE_NAME)
        bench.cleanup.append(("JuiceFS and redis", self.jfs.stop))
        self.jfs.start()
        secret = self.jfs.secret_data()
        bench.hidden += [secret["metaurl"]]
        entry = load_profile("juicefs")
        entry["csiEndpoint"] = "unix://" + self.jfs.socket
        # the cache of the driver's mounts under the run's dir (as the JuiceFS suite does)
        static = entry["rule"]["attributes"]["static"]
        static["mountOptions"] += ",cache-dir=" + os.path.join(self.jfs.dir, "cache-csi")
        self.bridge = ProfileBridge(bench.node, entry, "flexcsi-juicefs")
        bench.cleanup.append(("bridge", self.bridge.stop))
        self.bridge.start()
        self.csi = CsiDriver(bench.pb, bench.pb_grpc, self.jfs.socket, bench.hidden)
        bench.cleanup.append(("gRPC channel", self.csi.close))

        began = time.monotonic()
        created = self.csi.call(
            self.csi.controller, "CreateVolume", name="pvc-" + str(uuid.uuid4()),
            capacity_range=bench.pb.CapacityRange(required_bytes=GIB),
            volume_capabilities=[self.csi.capability()], secrets=secret).volume
        print("CreateVolume: %s in %.2f s" % (created.volume_id, time.monotonic() - began))
        # (no DeleteVolume: it would mount at the host's /tmp/<id>; the file system goes with
        # the run's redis and bucket)
        self.volume_id = created.volume_id
        # the FlexVolume PV of the classic driver: option `name` (the profile's handle), the
        # rest of the volume context as options, the Secret's keys from its secretRef
        self.pv_name = "pv-juicefs-bench"
        self.flex_options = dict(created.volume_context, name=self.volume_id)
        self.flex_secret = secret
        self.secret = secret
        # what the bridge sends: the volume context, the profile's static attributes, and the
        # pod's identity (podInfoOnMount: true)
        self.context = dict(created.volume_context, **static)
        self.mounts_below = [bench.node.dir, juicefs_backend.MOUNT_ROOT]

    def direct_mount(self, target, pod_name, pod_uid):
        context = dict(self.context, **{
            "csi.storage.k8s.io/pod.name": pod_name, "csi.storage.k8s.io/pod.namespace": "bench",
            "csi.storage.k8s.io/pod.uid": pod_uid,
            "csi.storage.k8s.io/serviceAccount.name": "default",
            "csi.storage.k8s.io/ephemeral": "false"})
        self.csi.call(self.csi.node, "NodePublishVolume", volume_id=self.volume_id,
                      target_path=target, volume_capability=self.csi.capability(),
                      volume_context=context, secrets=self.secret)

    def direct_unmount(self, target):
        self.csi.call(self.csi.node, "NodeUnpublishVolume", volume_id=self.volume_id,
                      target_path=target)


PLANS = {"cephfs": CephFsPlan, "juicefs": JuiceFsPlan}


def stop_ceph_fuse(below):
    """Unmounts the run's ceph-fuse mounts and kills any ceph-fuse of the run still running."""
    with open("/proc/self/mountinfo") as f:
        fuse = [line.split()[4] for line in f
                if " fuse.ceph-fuse " in line and line.split()[4].startswith(below + "/")]
    for target in sorted(fuse, key=lambda m: -m.count("/")):
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)
    for pid in ceph_backend.ceph_fuse_pids(below):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


# ----- the run ---------------------------------------------------------------------------------

def private_host_paths(paths, scratch):
    """Each fixed path a folder under `scratch/host`, bound there in this namespace alone, over
    overlays of its top folder (as the cluster suites' Cluster does); returns the overlays."""
    overlays = namespace.overlay_top_dirs(list(paths), scratch)
    for path in sorted(paths, key=lambda p: p.count("/")):
        backing = os.path.join(scratch, "host", path.lstrip("/"))
        os.makedirs(backing, exist_ok=True)
        os.makedirs(path, exist_ok=True)
        namespace.bind(backing, path)
    return overlays


def unmount_fixed_paths(paths):
    """Unmounts everything stacked on the fixed paths (JuiceFS puts a tmpfs over the bound
    folder), deepest first; returns what stayed."""
    for path in sorted(paths, key=lambda p: -p.count("/")):
        for _ in range(4):
            if path not in namespace.mount_points():
                break
            if subprocess.run(["umount", path], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", path], capture_output=True)
    return ["mount " + p for p in paths if p in namespace.mount_points()]


def run_cleanup(steps):
    """Runs the cleanup steps, last registered first, each even when one before it failed;
    returns what failed."""
    failed = []
    while steps:
        what, step = steps.pop()
        try:
            step()
        except Exception as e:  # noqa: BLE001 - every step runs, the failures are reported
            failed.append("%s: %s" % (what, e))
    return failed


def interrupted(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--drivers", default="cephfs,juicefs")
    parser.add_argument("--pause", type=float, default=1.0,
                        help="seconds between rounds (ceph-fuse and mount.juicefs exit after "
                             "an unmount, not at once)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    args = parser.parse_args()
    drivers = [d for d in args.drivers.split(",") if d]
    for d in drivers:
        if d not in PLANS:
            parser.error("unknown driver %s (cephfs, juicefs)" % d)
    folder = os.environ.get(ceph_backend.VARIABLE) or os.path.join(REPO, "..", "shared",
                                                                   "third-party-csi")
    os.environ[ceph_backend.VARIABLE] = os.path.abspath(folder)
    for binary in ("bridge/flexcsi-bridge", "flexexec/flexexec", "cli/flexcsi"):
        if not os.access(os.path.join(build_dir(), binary), os.X_OK):
            sys.exit("%s is not built" % os.path.join(build_dir(), binary))

    namespace.enter_private_namespaces([os.path.abspath(__file__), *sys.argv[1:]], network=True)
    # Interrupted (^C, kill, timeout) it still tears down: both signals raise here, even where
    # the shell started it with SIGINT ignored (a background job)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupted)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

    scratch = tempfile.mkdtemp(prefix="flexcsi-realbench.", dir="/tmp")
    node = types.SimpleNamespace(
        dir=scratch, logs=os.path.join(scratch, "logs"),
        kubelet_root=os.path.join(scratch, "kubelet"),
        plugin_dir=os.path.join(scratch, "flexvolume", "kubelet"),
        controller_plugin_dir=os.path.join(scratch, "flexvolume", "controller"),
        node_name=NODE_NAME)
    # pods/ and plugins/ as kubelet makes them: the bridge checks its kubeletRoot by them
    for d in (node.logs, os.path.join(node.kubelet_root, "pods"),
              os.path.join(node.kubelet_root, "plugins"), node.plugin_dir,
              node.controller_plugin_dir):
        os.makedirs(d)
    bench = types.SimpleNamespace(node=node, hidden=[], cleanup=[], pb=None, pb_grpc=None,
                                  third_party=os.environ[ceph_backend.VARIABLE])
    fixed = ([*ETC_PATHS] if "cephfs" in drivers else []) + (
        [*juicefs_backend.HOST_PATHS] if "juicefs" in drivers else [])
    overlays = []
    status = 0
    try:
        overlays = private_host_paths(fixed, scratch)
        bench.pb, bench.pb_grpc = compile_stubs(os.path.join(scratch, "stubs"))
        print("run dir %s; %d rounds per driver; load average %s" % (scratch, args.iterations,
                                                                     load()), flush=True)
        baseline = spawn_baseline_ms()
        print("fork+exec+wait of /bin/true from this process: median %.2f ms (in every flexexec "
              "figure below)" % baseline, flush=True)
        for name in drivers:
            plan = PLANS[name](bench)
            try:
                plan.start()
                measure(bench, plan, args.iterations, args.pause)
            except Exception as e:  # noqa: BLE001 - the next driver still runs; exit 1 at the end
                status = 1
                print("\n%s FAILED: %s" % (plan.title, redact(str(e), bench.hidden)), flush=True)
            finally:
                failed = run_cleanup(bench.cleanup)
                for f in failed:
                    print("cleanup of %s failed: %s" % (name, redact(f, bench.hidden)))
                status = status or (1 if failed else 0)
    finally:
        left = namespace.unmount_below(scratch)
        left += unmount_fixed_paths(fixed)
        left += namespace.remove_overlays(overlays, scratch)
        if left:
            print("LEFT: " + ", ".join(left))
            status = 1
        if args.keep:
            print("kept %s" % scratch)
        elif not left:
            shutil.rmtree(scratch, ignore_errors=True)
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        print("interrupted (%s); torn down" % e, flush=True)
        sys.exit(130)
