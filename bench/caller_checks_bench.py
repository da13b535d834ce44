#!/usr/bin/env python3
"""What the caller checks of issue #46 cost at 256 concurrent mounts, next to the bridge without
them and 0.1.0's bridge, in one run on one machine (bench/README.md, "Caller checks").

On the real v1.24 of tests/cluster (cluster_bench.py) it makes what a node's bridge would find
in the API server for bridge_bench's phase 1: 64 FlexVolume PVs of flexcsi/loopback (fsType ext4,
options {volumeID}, each pre-bound by claimRef to claim-<i> in namespace `bench`) and 256 pods
(4 per claim) pinned to node-1, bridge_bench's node, of which only the Node object exists: no
kubelet starts them, only the objects matter. Then it runs bridge_bench --concurrency-only, interleaved round by round:

  A  this tree's bridge with the checks (trustPodAuthors: false, the admin kubeconfig): every
     mount carries its pod's namespace, name and uid (kubelet's kubernetes.io/pod.* keys, the
     pod volume dir), the PVs are made from the volume IDs csi-loopback gives before staging
  B  this tree's bridge with trustPodAuthors: true (no cluster access)
  C  0.1.0's flexexec and bridge (which know no trustPodAuthors and ignore the key)

and, to tell where the time goes (--order ABCDE):

  D  B with /tmp on a tmpfs in the bench's private mount namespace: the state database, the
     driver's state file and the volumes' files where fsync costs nothing
  E  another build's flexexec, bridge and csi-loopback together (--old-bin), e.g. those of the
     commit whose figures bench/README.md gave

and prints, per run and per variant (median of the rounds): mount calls/s, p50, p99, the CPU
the burst cost (bridge, csi-loopback with its tools, flexexec), the mean NodePublishVolume time
the bridge measured, the machine's load, and for A the bridge's API requests per mount from the
API server's audit log. Prints figures; asserts nothing.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets bench/caller_checks_bench.py \\
        --release-bin DIR [--rounds 3] [--order ABC] [--out results.json]

--release-bin: a folder with 0.1.0's flexcsi-bridge and flexexec (default: what
tests/upgrade/build_release.sh prints, the release cache, whose builds are -O0; build the
release as this tree is built for a fair figure). --main-bin / --csi-loopback / --bench pin this
tree's binaries (default: the build dir's). Variant D mounts a tmpfs on /tmp: every binary it
runs must lie outside /tmp (the build dir's do)."""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..")
DRIVER = "flexcsi/loopback"  # tests/kubelet/test_environment.h kTestDriver
NAMESPACE = "bench"
# The pods' node: the node of bridge_bench's calls (test_environment.h kTestNode), where the
# bridge looks for a pod that uses an attached or staged PV's claim. Only its Node object
# exists: no kubelet runs the pods.
NODE = "node-1"
VOLUMES, PODS_PER_VOLUME = 64, 4  # bridge_bench.cc kVolumes, kPodsPerVolume
BRIDGE_AGENT = '"userAgent":"flexcsi-bridge'
TMPFS_OUT = "/var/tmp/caller-checks-bench"  # variant D's figures (its /tmp is a tmpfs)


def kubectl(kubeconfig, *args, input=None):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=input,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("kubectl %s: %s" % (" ".join(args[:3]), r.stderr.strip()))
    return r.stdout


def apply(kubeconfig, items):
    kubectl(kubeconfig, "apply", "--validate=false", "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def make_pvs(kubeconfig, handles_file):
    """bridge_bench's --before-staging hook: one PV per volume it made, named as it names it."""
    with open(handles_file) as f:
        handles = json.load(f)
    items = []
    for name, volume_id in handles.items():
        index = int(name.rsplit("-", 1)[1])
        items.append({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "16Mi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "claimRef": {"namespace": NAMESPACE, "name": "claim-%d" % index},
                     "flexVolume": {"driver": DRIVER, "fsType": "ext4",
                                    "options": {"volumeID": volume_id}}}})
    apply(kubeconfig, items)
    return 0


def make_pods(c):
    """The Node no kubelet runs, and 256 pods on it using the claims; returns bridge_bench's
    --pods list."""
    apply(c.kubeconfig, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        # A Node object, so that the pod garbage collector does not delete pods bound to a node
        # that does not exist; the pods tolerate the taints its lifecycle controller puts on it
        # (NotReady, unreachable) for good.
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}])
    pods = []
    for p in range(PODS_PER_VOLUME):
        for i in range(VOLUMES):
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "pod-%d-%d" % (p, i), "namespace": NAMESPACE},
                "spec": {"nodeName": NODE, "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "main", "image": "localhost/flexcsi/busybox:1",
                                         "imagePullPolicy": "Never",
                                         "volumeMounts": [{"name": "data",
                                                           "mountPath": "/data"}]}],
                         "volumes": [{"name": "data", "persistentVolumeClaim": {
                             "claimName": "claim-%d" % i}}]}})
    apply(c.kubeconfig, pods)
    listed = json.loads(kubectl(c.kubeconfig, "get", "pods", "-n", NAMESPACE, "-o", "json"))
    out = []
    for pod in listed["items"]:
        _, p, i = pod["metadata"]["name"].split("-")
        out.append({"volume": int(i), "pod": int(p), "namespace": NAMESPACE,
                    "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]})
    if len(out) != VOLUMES * PODS_PER_VOLUME:
        raise RuntimeError("%d pods listed" % len(out))
    return out


def audit_seconds(stamp):
    import datetime
    return datetime.datetime.strptime(stamp[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def bridge_requests(c, start, end, timings=None):
    """The bridge's requests received between two wall-clock times: {"verb resource code": n}.
    `timings`, a list, gets (received, completed) of each, in seconds."""
    counts = collections.Counter()
    logs = os.path.dirname(c.audit_log)
    for name in sorted(os.listdir(logs)):
        if not (name.startswith("audit") and ".log" in name):
            continue
        with open(os.path.join(logs, name)) as f:
            for line in f:
                if BRIDGE_AGENT not in line:
                    continue
                e = json.loads(line)
                if start <= audit_seconds(e["requestReceivedTimestamp"]) <= end:
                    if timings is not None and e.get("stageTimestamp"):
                        timings.append((audit_seconds(e["requestReceivedTimestamp"]),
                                        audit_seconds(e["stageTimestamp"])))
                    ref = e.get("objectRef", {})
                    counts["%s %s %s" % (e["verb"], ref.get("resource", "?"),
                                         e.get("responseStatus", {}).get("code", "?"))] += 1
    return counts


def run_bench(args, variant, round_no, c, pods_file, work):
    bins = {"C": args.release_bin, "E": args.old_bin}.get(variant, args.main_bin)
    # D's /tmp is a tmpfs: what it reads and writes must lie elsewhere (binaries: see --help)
    out_dir = TMPFS_OUT if variant == "D" else work
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "%s%d.json" % (variant, round_no))
    argv = ["unshare", "-m", "--propagation", "private"]
    if variant == "D":
        argv += ["sh", "-c", 'mount -t tmpfs -o size=4g tmpfs /tmp && exec "$@"', "sh"]
    argv += [args.bench, "--concurrency-only", "--bridge", os.path.join(bins, "flexcsi-bridge"),
             "--flexexec", os.path.join(bins, "flexexec"), "--json", out]
    if variant == "A":
        hook = "%s %s --make-pvs %s" % (sys.executable, os.path.abspath(__file__), c.kubeconfig)
        argv += ["--kubeconfig", c.kubeconfig, "--pods", pods_file,
                 "--pv-prefix", "a%d-pv-bench-" % round_no, "--before-staging", hook]
    env = dict(os.environ)
    if variant == "A":
        env["NODE_NAME"] = NODE  # the bridge's node, as the DaemonSet gives it
    csi = os.path.join(bins, "csi-loopback") if variant == "E" else args.csi_loopback
    if csi:
        env["FLEXCSI_TEST_CSI_BINARY"] = csi
    idle_busy = machine_busy_share(args.idle_sample)  # the neighbours, just before
    began = time.time()
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    log = os.path.join(work, "%s%d.log" % (variant, round_no))
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0 or not os.path.exists(out):
        print("  %s%d FAILED (exit %d), see %s:\n%s" % (variant, round_no, r.returncode, log,
                                                         (r.stdout + r.stderr)[-1500:]), flush=True)
        return None
    with open(out) as f:
        result = json.load(f)
    result["variant"], result["round"], result["run_s"] = variant, round_no, time.time() - began
    result["busy_before"] = idle_busy
    if variant == "A":
        time.sleep(1.5)  # the audit log's last lines
        m, s = result["mount"], result["staging"]
        timings = []
        result["requests_mount"] = bridge_requests(c, m["started_at"], m["ended_at"], timings)
        if timings:
            # How the requests spread over the burst, and the API server's time for each.
            result["requests_mount_span_s"] = max(t[0] for t in timings) - min(
                t[0] for t in timings)
            result["requests_mount_server_ms"] = statistics.mean(
                1e3 * (t[1] - t[0]) for t in timings)
        result["requests_staging"] = bridge_requests(c, s["started_at"], s["ended_at"])
        result["requests_unmount"] = bridge_requests(c, result["unmount"]["started_at"],
                                                     result["unmount"]["ended_at"])
    return result


def machine_busy_share(seconds):
    """The share of all CPUs busy over `seconds` (/proc/stat): what the neighbours use while
    nothing of the benchmark runs."""
    def sample():
        with open("/proc/stat") as f:
            v = [float(x) for x in f.readline().split()[1:9]]
        return sum(v) - v[3] - v[4], sum(v)
    b0, t0 = sample()
    time.sleep(seconds)
    b1, t1 = sample()
    return (b1 - b0) / max(t1 - t0, 1e-9)


def others_cpu(m):
    """CPU seconds the machine spent on anything but the burst's processes."""
    return max(0.0, m["machine_busy_cpu_s"] - sum(m["cpu_s"].values()))


def line(r):
    m = r["mount"]
    n = m["calls"]
    cpu = m["cpu_s"]
    rpc = m["rpcs"].get("NodePublishVolume", {"calls": 0, "seconds": 0})
    total = max(m["machine_total_cpu_s"], 1e-9)
    text = ("%s%d  mount %5.0f calls/s  p50 %6.0f ms  p99 %6.0f ms  errors %d  CPU/mount: bridge "
            "%.1f ms, driver %.1f ms, flexexec %.1f ms  NodePublish mean %.0f ms  machine busy "
            "%3.0f%%, others %3.0f%% (%3.0f%% before)  load %s -> %s" % (
                r["variant"], r["round"], m["calls_per_s"], m["p50_ms"], m["p99_ms"], m["errors"],
                1e3 * cpu["bridge"] / n, 1e3 * cpu["driver"] / n, 1e3 * cpu["flexexec"] / n,
                1e3 * rpc["seconds"] / max(rpc["calls"], 1),
                100 * m["machine_busy_cpu_s"] / total, 100 * others_cpu(m) / total,
                100 * r["busy_before"],
                m["load_before"].split()[0], m["load_after"].split()[0]))
    if "requests_mount" in r:
        total = sum(r["requests_mount"].values())
        text += "\n      API requests in the mount burst: %d (%.2f per mount) %s; staging %s" % (
            total, total / n, dict(r["requests_mount"]), dict(r["requests_staging"]))
        if "requests_mount_span_s" in r:
            text += "\n      received over %.2f s of the %.2f s burst, API server time mean %.1f ms" % (
                r["requests_mount_span_s"], m["wall_s"], r["requests_mount_server_ms"])
    return text


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--make-pvs":
        return make_pvs(sys.argv[2], sys.argv[3])
    build = os.environ.get("FLEXCSI_BUILD_DIR") or os.path.join(REPO, "build")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--order", default="ABC", help="the variants of a round, in order")
    parser.add_argument("--release-bin", help="0.1.0's flexcsi-bridge and flexexec")
    parser.add_argument("--main-bin", help="this tree's flexcsi-bridge and flexexec")
    parser.add_argument("--old-bin", help="variant E: flexcsi-bridge, flexexec, csi-loopback")
    parser.add_argument("--csi-loopback", default=os.path.join(build, "drivers/loopback/csi-loopback"))
    parser.add_argument("--bench", default=os.path.join(build, "bench/bridge_bench"))
    parser.add_argument("--out", help="every run's figures as JSON")
    parser.add_argument("--idle-sample", type=float, default=3,
                        help="seconds of the machine's CPU use sampled before each run")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's dir (logs)")
    args = parser.parse_args()
    for attr in ("release_bin", "main_bin", "old_bin", "csi_loopback", "bench", "out"):
        if getattr(args, attr):
            setattr(args, attr, os.path.abspath(getattr(args, attr)))
    if "C" in args.order and not args.release_bin:
        print("--release-bin not given: building (or finding) 0.1.0 in the release cache",
              flush=True)
        release = subprocess.run(["bash", os.path.join(REPO, "tests/upgrade/build_release.sh"),
                                  REPO], capture_output=True, text=True, check=True)
        args.release_bin = os.path.join(release.stdout.strip().splitlines()[-1], "bin")
    if not args.main_bin:
        # flexcsi-bridge and flexexec side by side, as the release's are
        args.main_bin = os.path.join(build, "caller-checks-bench-bin")
        os.makedirs(args.main_bin, exist_ok=True)
        for src in ("bridge/flexcsi-bridge", "flexexec/flexexec"):
            dst = os.path.join(args.main_bin, os.path.basename(src))
            subprocess.run(["cp", os.path.join(build, src), dst + ".tmp"], check=True)
            os.replace(dst + ".tmp", dst)

    sys.path.insert(0, HERE)
    from cluster_bench import bench_cluster
    with bench_cluster(__file__, keep=args.keep) as c:
        pods = make_pods(c)
        work = os.path.join(c.dir, "caller-checks-bench")
        os.makedirs(work, exist_ok=True)
        pods_file = os.path.join(work, "pods.json")
        with open(pods_file, "w") as f:
            json.dump(pods, f)
        for variant, path in (("main", args.main_bin), ("0.1.0", args.release_bin)):
            if path:
                v = subprocess.run([os.path.join(path, "flexcsi-bridge"), "--version"],
                                   capture_output=True, text=True)
                print("%s: %s %s" % (variant, path, (v.stdout or "(no --version: 0.1.0)").strip()))
        results = []
        for round_no in range(1, args.rounds + 1):
            for variant in args.order:
                r = run_bench(args, variant, round_no, c, pods_file, work)
                if r:
                    results.append(r)
                    print(line(r), flush=True)
        print("\nmedian of the rounds, 256 concurrent mounts:")
        for variant in args.order:
            rs = [r for r in results if r["variant"] == variant]
            if not rs:
                continue
            med = lambda key: statistics.median(r["mount"][key] for r in rs)  # noqa: E731
            text = "  %s: %.0f calls/s (%s), p50 %.0f ms, p99 %.0f ms, others' CPU %s%%" % (
                variant, med("calls_per_s"),
                ", ".join("%.0f" % r["mount"]["calls_per_s"] for r in rs),
                med("p50_ms"), med("p99_ms"),
                "/".join("%.0f" % (100 * others_cpu(r["mount"])
                                   / max(r["mount"]["machine_total_cpu_s"], 1e-9)) for r in rs))
            cpu = statistics.median(1e3 * sum(r["mount"]["cpu_s"][k] for k in (
                "bridge", "driver", "flexexec")) / r["mount"]["calls"] for r in rs)
            publish = statistics.median(
                1e3 * r["mount"]["rpcs"]["NodePublishVolume"]["seconds"]
                / r["mount"]["rpcs"]["NodePublishVolume"]["calls"]
                for r in rs if "NodePublishVolume" in r["mount"]["rpcs"]) if any(
                "NodePublishVolume" in r["mount"]["rpcs"] for r in rs) else 0
            text += ", CPU %.1f ms/mount, NodePublishVolume %.0f ms, busy before %s%%" % (
                cpu, publish, "/".join("%.0f" % (100 * r["busy_before"]) for r in rs))
            if variant == "A":
                per = [sum(r["requests_mount"].values()) / r["mount"]["calls"] for r in rs]
                text += ", %.2f API requests per mount (%s)" % (
                    statistics.median(per), ", ".join("%.2f" % x for x in per))
            print(text)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
