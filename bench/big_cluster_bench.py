#!/usr/bin/env python3
"""flexcsi-controller and csi-provisioner v3.4.1 side by side on a big cluster on one machine
(issue #36, figures 1 and 2): the real v1.24 control plane of tests/cluster with one kubelet
node, N simulated nodes over 3 zones (tests/cluster/node_simulator.py: Leases renewed every 10 s,
status every 5 min, each registered for csi-loopback as flexcsi-bridge registers a driver), and
one csi-loopback controller with topology (tests/cluster/scale_provisioning.py). Each provisioner
in turn, on the same cluster and the same counts:

1. provisioning: C Immediate claims, then C WaitForFirstConsumer claims with a pod each (pods
   spread over the zones by node selector; the scheduler sets each claim's selected node; the
   pods never run): seconds until every PV exists (from the first claim's POST), CreateVolume
   calls, API requests (audit log, by user agent), peak RSS and CPU seconds;
2. steady state: all 2C claims bound (and --bound B more, made bound before either tool starts:
   figure 2's 10,000), the provisioner idle for --idle-minutes: RSS, CPU seconds,
   API requests;
then every claim deleted and waited for until no PV and no CSI volume is left.

Prints one table with both side by side, the node and claim counts, the load average and the
simulator's own cost (kept out of every figure: it is a process of its own with its own user
agent). Checks that every claim got exactly one PV and that nothing is left; asserts no time.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets [FLEXCSI_BUILD_DIR=build] \\
        bench/big_cluster_bench.py --nodes 1000 --claims 1000 [--idle-minutes 10] [--bound 10000] \\
        [--tools flexcsi-controller,csi-provisioner] [--json OUT]
    bench/big_cluster_bench.py --fit A.json B.json ...   # scaling exponents of several runs"""
import argparse
import collections
import concurrent.futures
import json
import math
import os
import sys
import time

from cluster_bench import bench_cluster, HERE

sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
from scale_provisioning import (CLAIM_SIZE, DRIVER, FLEX_DRIVER, ScaleHarness,  # noqa: E402
                                audit_requests, scheduler_selections)

SHORT = {"flexcsi-controller": "flexcsi", "csi-provisioner": "theirs"}


def run_tool(scale, tool, claims, idle_minutes):
    short = SHORT[tool]
    run = scale.provisioner(tool)
    phases = {}
    try:
        for kind, wffc in (("imm", False), ("wffc", True)):
            ns = "%s-%s" % (short, kind)
            phase = scale.provision(run, ns, claims, wffc)
            phase["create_volume"] = scale.create_volume_calls(phase["window"])
            phase["problems"] = scale.check_one_pv_each(ns, claims)
            phase["unhealthy_nodes"] = len(scale.unhealthy_nodes())
            if wffc:
                phase.update(selection_figures(scale, ns, phase["window"][0]))
            phases[kind] = phase
            print("%s %s: %d claims, every PV after %.1f s (claims posted in %.1f s), CPU %.1f s,"
                  " peak RSS %.1f MiB, CreateVolume %d, load %.1f -> %.1f, simulated nodes not"
                  " Ready or tainted: %d%s"
                  % (tool, kind, claims, phase["seconds"], phase["created"], phase["cpu"],
                     phase["hwm"], phase["create_volume"], *phase["load"],
                     phase["unhealthy_nodes"],
                     "; PROBLEMS " + str(phase["problems"][:5]) if phase["problems"] else ""),
                  flush=True)
        if idle_minutes > 0:
            scale.wait_bound(["%s-imm" % short, "%s-wffc" % short])
            phase = scale.idle(run, idle_minutes * 60)
            phases["idle"] = phase
            print("%s idle %.0f min with %d bound claims: CPU %.2f s, RSS %.1f MiB, load %.1f ->"
                  " %.1f" % (tool, idle_minutes, 2 * claims, phase["cpu"], phase["rss"],
                             *phase["load"]), flush=True)
        began = time.time()
        scale.delete_all(run, ["%s-imm" % short, "%s-wffc" % short])
        phases["delete"] = {"seconds": time.time() - began, "window": (began, time.time())}
        print("%s: every PV and CSI volume deleted in %.1f s" % (tool, time.time() - began),
              flush=True)
    finally:
        run.stop()
    return phases


def create_bound_pairs(scale, count, ns="steady", workers=32):
    """`count` claims already bound to FlexVolume PVs of the driver, as flexcsi-controller
    leaves them (figure 2's 10,000 bound claims without provisioning them one by one): each
    claim, then its PV pre-bound to the claim's uid, then both statuses Bound with the PV
    controller's bind annotations, so that kube-controller-manager finds every pair complete
    and writes nothing. Reclaim Retain: no storage stands behind them and none is ever asked
    to be deleted. Both tools then watch the same objects."""
    scale.api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": ns}})

    def create(i):
        name = "b-%05d" % i
        pv_name = "%s-%s" % (ns, name)
        claim = scale.api.call("POST", "/api/v1/namespaces/%s/persistentvolumeclaims" % ns, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "annotations": {
                "pv.kubernetes.io/bind-completed": "yes",
                "volume.kubernetes.io/storage-provisioner": DRIVER}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "imm",
                     "volumeName": pv_name,
                     "resources": {"requests": {"storage": CLAIM_SIZE}}}})
        scale.api.call("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {
                "pv.kubernetes.io/provisioned-by": DRIVER,
                "pv.kubernetes.io/bound-by-controller": "yes"}},
            "spec": {"capacity": {"storage": CLAIM_SIZE}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "imm",
                     "flexVolume": {"driver": FLEX_DRIVER, "options": {"volumeID": pv_name}},
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                  "namespace": ns, "name": name,
                                  "uid": claim["metadata"]["uid"]}}})
        # merge patches: kube-controller-manager may be writing the same status meanwhile
        merge = "application/merge-patch+json"
        scale.api.call("PATCH", "/api/v1/persistentvolumes/%s/status" % pv_name,
                       {"status": {"phase": "Bound"}}, content_type=merge)
        scale.api.call("PATCH", "/api/v1/namespaces/%s/persistentvolumeclaims/%s/status"
                       % (ns, name), {"status": {"phase": "Bound",
                                                 "accessModes": ["ReadWriteOnce"],
                                                 "capacity": {"storage": CLAIM_SIZE}}},
                       content_type=merge)
    began = time.time()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, range(count)))
    print("%d bound claims and PVs made in %.1f s" % (count, time.time() - began), flush=True)


def selection_figures(scale, ns, began):
    """How much of a WaitForFirstConsumer phase is the scheduler's: when it had selected a
    node for every claim (from the first claim's POST), and the provisioner's own latency from
    a claim's selection to its PV (median and slowest)."""
    selected = scheduler_selections(scale.cluster, ns)
    seen = scale.watch.first_seen_of_claims(ns)
    latencies = sorted(seen[c] - t for c, t in selected.items() if c in seen)
    if not selected or not latencies:
        return {}
    return {"all_selected": max(selected.values()) - began,
            "selection_to_pv_p50": latencies[len(latencies) // 2],
            "selection_to_pv_max": latencies[-1]}


def fmt(value, unit=""):
    return "-" if value is None else ("%.1f%s" % (value, unit) if isinstance(value, float)
                                      else "%s%s" % (value, unit))


def print_table(nodes, claims, bound, results, requests, simulator, idle_minutes):
    tools = list(results)
    print("\n%d nodes (simulated) + 1 kubelet node, %d Immediate + %d WaitForFirstConsumer "
          "claims, idle %d min with %d bound (%d of them bound before the tools started)\n"
          % (nodes, claims, claims, idle_minutes, 2 * claims + bound, bound))
    print("| figure | " + " | ".join(tools) + " |")
    print("| --- | " + " | ".join("---:" for _ in tools) + " |")

    def row(label, get):
        print("| %s | %s |" % (label, " | ".join(fmt(get(t)) for t in tools)))

    for kind, label in (("imm", "Immediate"), ("wffc", "WaitForFirstConsumer")):
        row("%s: s until every PV exists" % label,
            lambda t: results[t].get(kind, {}).get("seconds"))
        if kind == "wffc":
            row("WaitForFirstConsumer: s until the scheduler selected every claim's node",
                lambda t: results[t].get(kind, {}).get("all_selected"))
            row("WaitForFirstConsumer: s from a node's selection to the PV, p50 / max",
                lambda t: "%.2f / %.2f" % (results[t][kind]["selection_to_pv_p50"],
                                           results[t][kind]["selection_to_pv_max"])
                if "selection_to_pv_p50" in results[t].get(kind, {}) else None)
        row("%s: CreateVolume calls" % label,
            lambda t: results[t].get(kind, {}).get("create_volume"))
        row("%s: API requests" % label, lambda t: requests.get((t, kind), {}).get("requests"))
        row("%s: server time per request p50 / p99, ms" % label,
            lambda t: "%.1f / %.1f" % (requests[(t, kind)]["p50"] * 1e3,
                                       requests[(t, kind)]["p99"] * 1e3)
            if (t, kind) in requests else None)
        row("%s: CPU s" % label, lambda t: results[t].get(kind, {}).get("cpu"))
        row("%s: kube-apiserver CPU s" % label,
            lambda t: results[t].get(kind, {}).get("apiserver_cpu"))
        row("%s: load average (1 min) start -> end" % label,
            lambda t: "%.1f -> %.1f" % results[t][kind]["load"] if kind in results[t] else None)
    row("provisioning: peak RSS MiB", lambda t: results[t].get("wffc", {}).get("hwm"))
    if idle_minutes:
        row("steady state: RSS MiB", lambda t: results[t].get("idle", {}).get("rss"))
        row("steady state: CPU s in %d min" % idle_minutes,
            lambda t: results[t].get("idle", {}).get("cpu"))
        row("steady state: API requests in %d min" % idle_minutes,
            lambda t: requests.get((t, "idle"), {}).get("requests"))
        row("steady state: load average start -> end",
            lambda t: "%.1f -> %.1f" % results[t]["idle"]["load"] if "idle" in results[t]
            else None)
    row("deleting everything: s", lambda t: results[t].get("delete", {}).get("seconds"))
    print("\nAPI requests by kind:")
    for (tool, phase), r in sorted(requests.items()):
        print("  %s %s: %s" % (tool, phase, ", ".join("%s %d" % kv for kv in r["by_kind"].items())))
    print("\nnode simulator (not in any figure above): %s" % simulator, flush=True)


def fit(paths):
    """Log-log slopes of each figure against nodes and against claims over several runs."""
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    figures = collections.defaultdict(list)
    for r in runs:
        for tool, phases in r["results"].items():
            for phase, values in phases.items():
                for key in ("seconds", "cpu", "hwm", "rss"):
                    if isinstance(values.get(key), (int, float)) and values[key] > 0:
                        figures[(tool, phase, key)].append((r["nodes"], r["claims"], values[key]))
        for key, values in r["requests"].items():
            tool, phase = key.split(" ", 1)
            if values["requests"] > 0:
                figures[(tool, phase, "requests")].append((r["nodes"], r["claims"],
                                                           values["requests"]))
    print("| figure | runs (nodes, claims: value) | exponent in nodes | exponent in claims |"
          " exponent in both, grown together |")
    print("| --- | --- | ---: | ---: | ---: |")
    for key, points in sorted(figures.items()):
        print("| %s | %s | %s | %s | %s |" % (" ".join(key), "; ".join(
            "%d, %d: %.1f" % p for p in points), slope(points, 0), slope(points, 1),
            joint_slope(points)))


def loglog_slope(points, axis):
    """Least-squares slope of log(value) on log(points' `axis`), or '-' without two values."""
    xs = [math.log(p[axis]) for p in points]
    if len(set(xs)) < 2:
        return "-"
    ys = [math.log(p[2]) for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return "%.2f" % (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
                     / sum((x - mx) ** 2 for x in xs))


def joint_slope(points):
    """The slope over the runs whose claims grew in the same proportion as their nodes (the
    ratio most runs share): how a cost grows when the cluster grows as a whole; 1 is linear in
    either, 2 would be nodes x claims."""
    ratio = collections.Counter(p[1] / p[0] for p in points).most_common(1)[0][0]
    return loglog_slope([p for p in points if p[1] / p[0] == ratio], 0)


def slope(points, axis):
    """The slope against one axis over the points whose other axis is the same (the most
    common value of it)."""
    other = 1 - axis
    common = collections.Counter(p[other] for p in points).most_common(1)[0][0]
    return loglog_slope([p for p in points if p[other] == common], axis)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=1000,
                        help="Immediate claims, and as many WaitForFirstConsumer ones")
    parser.add_argument("--idle-minutes", type=float, default=10)
    parser.add_argument("--bound", type=int, default=0,
                        help="claims already bound to PVs before the tools start (figure 2: "
                             "10000); both tools watch them through every phase")
    parser.add_argument("--tools", default="flexcsi-controller,csi-provisioner")
    parser.add_argument("--json", help="also write the figures here (for --fit)")
    parser.add_argument("--fit", nargs="+", help="runs' --json files: scaling exponents")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.fit:
        fit(args.fit)
        return 0
    failed = False
    with bench_cluster(__file__, keep=args.keep) as c:
        scale = ScaleHarness(c, nodes=args.nodes)
        try:
            scale.start()
            print("%d simulated nodes registered in %.1f s" % (
                args.nodes, scale.timings["nodes registered"]), flush=True)
            if args.bound:
                create_bound_pairs(scale, args.bound)
            sim_cpu0 = scale.usage("node-simulator")[0]
            began = time.monotonic()
            results = {}
            for tool in args.tools.split(","):
                results[tool] = run_tool(scale, tool, args.claims, args.idle_minutes)
                failed |= any(p.get("problems") for p in results[tool].values())
            left = scale.driver_volumes()
            failed |= bool(left)
            sim_cpu, sim_rss, _ = scale.usage("node-simulator")
            minutes = (time.monotonic() - began) / 60
            simulator = ("%.1f CPU s in %.1f min (%.2f CPU s a minute, %.0f%% of a core), RSS "
                         "%.0f MiB; %s" % (sim_cpu - sim_cpu0, minutes,
                                           (sim_cpu - sim_cpu0) / minutes,
                                           (sim_cpu - sim_cpu0) / minutes / 0.6, sim_rss,
                                           scale.procs["node-simulator"].tail(1).strip()))
        finally:
            scale.stop()
        windows = {(tool, phase): values["window"] for tool, phases in results.items()
                   for phase, values in phases.items()}
        requests = audit_requests(c, windows)
        print_table(args.nodes, args.claims, args.bound, results, requests, simulator,
                    args.idle_minutes)
        if left:
            print("LEFT in csi-loopback: %d volumes" % len(left))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"nodes": args.nodes, "claims": args.claims, "bound": args.bound,
                           "idle_minutes": args.idle_minutes, "results": results,
                           "requests": {"%s %s" % k: v for k, v in requests.items()},
                           "simulator": simulator}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
