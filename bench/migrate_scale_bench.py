#!/usr/bin/env python3
"""`flexcsi migrate apply --all` over 1,000 idle claims on a real Kubernetes v1.24 (the
tests/cluster harness, kube-controller-manager with its default 15 s claim sync): half on
FlexVolume PVs, half on in-tree awsElasticBlockStore PVs, each claim bound. First with every
default (--parallel, --qps, --burst), then again on fresh claims at a higher --parallel. For each
run: PVs per minute, and the API requests flexcsi sent as the API server's audit log saw them
(mean and peak per second, and per moved PV by verb and resource). After each run every claim
must be Bound to its own PV, now a CSI PV, with its uid unchanged, and no PV or claim missing.
Prints figures; asserts nothing about time.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets [FLEXCSI_BUILD_DIR=build] \\
        bench/migrate_scale_bench.py [--claims 1000] [--second-parallel 64] [--second-qps Q]
        [--nodes 1000] [--flexcsi OTHER-BUILD] [--controller-manager-qps Q]

Before each apply, `migrate plan` and `migrate plan --leftovers` of the same namespace are
timed, with their peak RSS and requests. --nodes adds that many Node objects (no kubelet: migrate
only lists them), so that the per-PV lists of nodes cost what they cost on a big cluster.

The claims are created by concurrent POSTs straight to the API server (kubectl's own client-side
limit, 5 requests/s, would take minutes for 2,000 objects)."""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from cluster_bench import bench_cluster, flexcsi_binary

FLEX_DRIVER = "bench/lvm"
CSI_DRIVER = "bench.csi.flexcsi.io"
EBS_DRIVER = "ebs.csi.aws.com"


def pv_and_claim(ns, name, in_tree):
    source = ({"awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-%s" % name,
                                        "fsType": "ext4"}} if in_tree else
              {"flexVolume": {"driver": FLEX_DRIVER, "fsType": "ext4",
                              "options": {"volumeID": "vg0/" + name}}})
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
          "spec": dict({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "",
                        "claimRef": {"namespace": ns, "name": name}}, **source)}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": name, "namespace": ns},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "volumeName": name, "resources": {"requests": {"storage": "1Gi"}}}}
    return pv, claim


class Api:
    """Admin requests straight to the API server, for making and checking many objects fast."""

    def __init__(self, c):
        self.server = c.server
        self.context = ssl.create_default_context(cafile=c.ca)
        self.context.load_cert_chain(*c.admin_cert)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": "scale-bench"})
        for attempt in range(20):
            try:
                with urllib.request.urlopen(request, context=self.context, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                if e.code not in (429, 500, 503, 504) or attempt == 19:
                    raise RuntimeError("%s %s: %d %s" % (method, path, e.code, e.read()[:300]))
            time.sleep(0.5)

    def create_all(self, objects, workers=16):
        def create(obj):
            if obj["kind"] == "PersistentVolume":
                return self.call("POST", "/api/v1/persistentvolumes", obj)
            if obj["kind"] == "Namespace":
                return self.call("POST", "/api/v1/namespaces", obj)
            return self.call("POST", "/api/v1/namespaces/%s/persistentvolumeclaims"
                             % obj["metadata"]["namespace"], obj)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, objects))

    def claims(self, ns):
        return self.call("GET", "/api/v1/namespaces/%s/persistentvolumeclaims" % ns)["items"]

    def pvs(self):
        return self.call("GET", "/api/v1/persistentvolumes")["items"]


def make_claims(api, ns, count):
    """`count` bound claims in `ns`, the first half FlexVolume, the second in-tree EBS."""
    names = ["%s-%04d" % (ns, i) for i in range(count)]
    api.create_all([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    started = time.monotonic()
    objects = []
    for i, n in enumerate(names):
        objects += pv_and_claim(ns, n, in_tree=i >= count // 2)
    api.create_all(objects)
    created = time.monotonic() - started
    deadline = time.monotonic() + 900
    while True:
        bound = sum(1 for c in api.claims(ns) if c.get("status", {}).get("phase") == "Bound")
        if bound == count:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("%s: %d of %d claims bound" % (ns, bound, count))
        time.sleep(2)
    print("%s: %d PVs + %d claims created in %.1f s, all bound after %.1f s"
          % (ns, count, count, created, time.monotonic() - started), flush=True)
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in api.claims(ns)}


def make_nodes(api, count, workers=16):
    """`count` Node objects (no kubelet behind them; the node lifecycle controller only marks
    them NotReady), each with a volumesAttached entry as a busy node has one."""
    started = time.monotonic()

    def create(i):
        name = "bench-node-%05d" % i
        api.call("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, range(count)))
    print("%d nodes created in %.1f s" % (count, time.monotonic() - started), flush=True)


def run_plans(c, flexcsi, rules, ns):
    """`migrate plan` and `plan --leftovers` of `ns`: time, peak RSS, requests (audit log)."""
    for extra in ([], ["--leftovers"]):
        command = [flexcsi, "migrate", "plan", "-n", ns, "--rules", rules, "--kubeconfig",
                   c.kubeconfig, "-o", "json", *extra]
        wall_start = time.time()
        started = time.monotonic()
        p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.monotonic() - started
        events = [e for e in audit_events_between(c, wall_start, time.time())
                  if e.get("userAgent", "").startswith("flexcsi")]
        kinds = collections.Counter("%s %s" % (e["verb"], e.get("objectRef", {}).get(
            "resource", "(discovery)")) for e in events)
        print("plan%s: %.2f s, peak RSS %.1f MiB, exit %d, %d bytes out, %d requests (%s)"
              % (" --leftovers" if extra else "", seconds, usage.ru_maxrss / 1024,
                 os.waitstatus_to_exitcode(status), len(out), len(events),
                 ", ".join("%s %d" % kv for kv in sorted(kinds.items()))), flush=True)


def check_moved(api, ns, uids):
    """Every claim of `ns` Bound to its own PV, which is now CSI, claim uid unchanged."""
    claims = {c["metadata"]["name"]: c for c in api.claims(ns)}
    pvs = {p["metadata"]["name"]: p for p in api.pvs()
           if p["spec"].get("claimRef", {}).get("namespace") == ns}
    problems = []
    for name, uid in uids.items():
        claim, pv = claims.get(name), pvs.get(name)
        if claim is None or pv is None:
            problems.append("%s: claim %s, PV %s" % (name, claim is not None, pv is not None))
            continue
        want = EBS_DRIVER if int(name.rsplit("-", 1)[1]) >= len(uids) // 2 else CSI_DRIVER
        csi = pv["spec"].get("csi", {})
        if (claim["metadata"]["uid"] != uid or claim.get("status", {}).get("phase") != "Bound"
                or claim["spec"].get("volumeName") != name or csi.get("driver") != want
                or pv["spec"]["claimRef"].get("uid") != uid
                or pv.get("status", {}).get("phase") != "Bound"):
            problems.append("%s: claim %s/%s, PV %s/%s" % (
                name, claim.get("status", {}).get("phase"), claim["metadata"]["uid"] == uid,
                csi.get("driver"), pv.get("status", {}).get("phase")))
    if len(claims) != len(uids) or len(pvs) != len(uids):
        problems.append("%d claims, %d PVs for %d" % (len(claims), len(pvs), len(uids)))
    return problems


def audit_seconds(stamp):
    """An audit event's time (RFC 3339, microseconds, UTC) as seconds since the epoch."""
    return datetime.datetime.strptime(stamp[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def audit_events_between(c, start, end, agent='"flexcsi'):
    """The audit events received between two wall-clock times, from the log and the files it
    was rotated into (kube-apiserver rotates at 100 MB even with --audit-log-maxsize 0, the
    default of the library it uses: one 1,000-PV run writes more than that). `agent`: a piece
    of the line that must be there (the client's user agent)."""
    logs = os.path.dirname(c.audit_log)
    events = []
    for name in sorted(os.listdir(logs)):
        if name.startswith("audit") and ".log" in name:
            with open(os.path.join(logs, name)) as f:
                for line in f:
                    if agent in line:
                        e = json.loads(line)
                        if start <= audit_seconds(e["requestReceivedTimestamp"]) <= end:
                            events.append(e)
    return events


def request_rates(events, moved):
    """flexcsi's requests in `events`: count, span, mean and peak rates, per PV by kind."""
    mine = [e for e in events if e.get("userAgent", "").startswith("flexcsi")]
    if not mine:
        return None
    times = sorted(audit_seconds(e["requestReceivedTimestamp"]) for e in mine)
    span = max(times[-1] - times[0], 1e-3)
    peak = {}
    for window in (1, 10):
        most, i = 0, 0
        for j, t in enumerate(times):
            while t - times[i] >= window:
                i += 1
            most = max(most, j - i + 1)
        peak[window] = most / window
    kinds = collections.Counter()
    for e in mine:
        ref = e.get("objectRef", {})
        what = ref.get("resource", "(discovery)") + ("/" + ref["subresource"]
                                                     if ref.get("subresource") else "")
        kinds["%s %s" % (e["verb"], what)] += 1
    codes = collections.Counter(e.get("responseStatus", {}).get("code") for e in mine)
    # How long each request held the server (received to response complete): their sum over
    # the span is the mean number of requests in flight, the seats of --max-requests-inflight.
    held = sorted(audit_seconds(e["stageTimestamp"]) - audit_seconds(e["requestReceivedTimestamp"])
                  for e in mine if e.get("stage") == "ResponseComplete")
    return {"requests": len(mine), "seconds": span, "mean": len(mine) / span,
            "peak1": peak[1], "peak10": peak[10],
            "per_pv": sorted(((k, v / moved) for k, v in kinds.items()), key=lambda kv: -kv[1]),
            "codes": dict(codes), "inflight": sum(held) / span,
            "latency50": held[len(held) // 2] if held else 0,
            "latency99": held[int(len(held) * 0.99)] if held else 0}


def run_migrate(c, flexcsi, rules, ns, extra):
    journal = os.path.join(c.dir, "journal-" + ns)
    command = [flexcsi, "migrate", "apply", "--all", "-n", ns, "--rules", rules, "--journal",
               journal, "--kubeconfig", c.kubeconfig, "--yes", "-o", "json", *extra]
    started, wall_start = time.monotonic(), time.time()
    with open(os.path.join(c.dir, ns + ".log"), "w") as log:
        r = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
    seconds, wall_end = time.monotonic() - started, time.time()
    # The other side of every move: kube-controller-manager's PV controller (its own client,
    # --kube-api-qps 20 and burst 30 by default) releases and binds each PV and claim.
    binder = [e for e in audit_events_between(c, wall_start, wall_end, "persistent-volume-binder")
              if e.get("userAgent", "").endswith("persistent-volume-binder")]
    if binder:
        stamps = sorted(audit_seconds(e["requestReceivedTimestamp"]) for e in binder)
        most, i = 0, 0
        for j, t in enumerate(stamps):
            while t - stamps[i] >= 10:
                i += 1
            most = max(most, j - i + 1)
        kinds = collections.Counter("%s %s%s" % (e["verb"], e.get("objectRef", {}).get(
            "resource", ""), "/" + e["objectRef"]["subresource"] if e.get("objectRef", {}).get(
            "subresource") else "") for e in binder)
        print("  kube-controller-manager persistent-volume-binder (audit log): %d requests, "
              "%.1f/s mean over the run, %.1f/s over its busiest 10 s (%s)"
              % (len(binder), len(binder) / max(seconds, 1e-3), most / 10.0,
                 ", ".join("%s %d" % kv for kv in kinds.most_common())), flush=True)
    try:
        report_json = json.loads(r.stdout)
        outcomes = report_json.get("summary", {})
        # why PVs failed, by step and message less the names (one line each, most common first)
        why = collections.Counter(
            "%s: %s" % (x.get("step"), " ".join(w for w in x.get("message", "").split()
                                                 if ns not in w)[:160])
            for x in report_json.get("results", []) if x.get("result") != "moved")
        if why:
            outcomes = dict(outcomes, why=why.most_common(5))
    except ValueError:
        outcomes = {"unreadable report": r.stdout[-200:]}
    with open(log.name) as f:
        stats = [line.strip() for line in f if "API requests in" in line]
    return (seconds, r.returncode, outcomes, audit_events_between(c, wall_start, wall_end),
            " ".join(command[1:]),
            stats[-1] if stats else "")


def report(label, count, seconds, code, outcomes, rates, command, own_count):
    print("%s: %d PVs in %.1f s = %.1f PVs/min (exit %d, %s)"
          % (label, count, seconds, count * 60 / seconds, code, dict(outcomes)), flush=True)
    print("  command: flexcsi %s" % command)
    print("  its own count: %s" % own_count, flush=True)
    if rates:
        print("  API requests by flexcsi (audit log): %d in %.1f s = %.1f/s mean, peak %.0f in "
              "1 s, %.1f/s over the busiest 10 s; %.1f per PV; HTTP codes %s"
              % (rates["requests"], rates["seconds"], rates["mean"], rates["peak1"],
                 rates["peak10"], rates["requests"] / count, rates["codes"]), flush=True)
        print("  server time per request: median %.1f ms, p99 %.1f ms; mean requests in flight "
              "%.2f" % (rates["latency50"] * 1000, rates["latency99"] * 1000, rates["inflight"]))
        print("  per PV: " + ", ".join("%s %.2f" % kv for kv in rates["per_pv"]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--second-parallel", type=int, default=64,
                        help="--parallel of the second run; 0: no second run")
    parser.add_argument("--second-qps", type=float, default=None,
                        help="--qps of the second run (default: flexcsi's default)")
    parser.add_argument("--second-burst", type=int, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--nodes", type=int, default=0, help="Node objects to add")
    parser.add_argument("--flexcsi", help="the flexcsi binary (default: this build's)")
    parser.add_argument("--controller-manager-qps", type=float, default=None,
                        help="kube-controller-manager's --kube-api-qps (its default: 20), and"
                        " twice that as its burst: what a bigger control plane gives")
    args = parser.parse_args()
    manager_flags = [] if args.controller_manager_qps is None else [
        "--kube-api-qps=%g" % args.controller_manager_qps,
        "--kube-api-burst=%d" % (2 * args.controller_manager_qps)]
    flexcsi = os.path.abspath(args.flexcsi) if args.flexcsi else flexcsi_binary()
    failed = False
    with bench_cluster(__file__, keep=args.keep, controller_manager_flags=manager_flags) as c:
        api = Api(c)
        for driver in (CSI_DRIVER, EBS_DRIVER):
            api.call("POST", "/apis/storage.k8s.io/v1/csidrivers",
                     {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                      "metadata": {"name": driver}, "spec": {"attachRequired": False}})
        rules = os.path.join(c.dir, "rules.json")
        with open(rules, "w") as f:
            json.dump({"flexVolumeRules": [{"flexDriver": FLEX_DRIVER, "csiDriver": CSI_DRIVER,
                                            "volumeHandle": {"fromOption": "volumeID"}}]}, f)
        if args.nodes:
            make_nodes(api, args.nodes)
        runs = [("defaults", [])]
        if args.second_parallel:
            extra = ["--parallel", str(args.second_parallel)]
            if args.second_qps is not None:
                extra += ["--qps", str(args.second_qps)]
            if args.second_burst is not None:
                extra += ["--burst", str(args.second_burst)]
            runs.append(("high", extra))
        for ns, extra in runs:
            uids = make_claims(api, ns, args.claims)
            run_plans(c, flexcsi, rules, ns)
            seconds, code, outcomes, events, command, own = run_migrate(c, flexcsi, rules, ns,
                                                                         extra)
            report(ns, args.claims, seconds, code, outcomes,
                   request_rates(events, args.claims), command, own)
            problems = check_moved(api, ns, uids)
            print("  check: %s" % ("every claim Bound to its own CSI PV, uid kept, nothing lost"
                                   if not problems else "%d WRONG: %s" % (len(problems),
                                                                           problems[:10])),
                  flush=True)
            failed = failed or bool(problems) or code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
