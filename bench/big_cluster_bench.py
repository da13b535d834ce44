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
2. steady state: all 2C claims bound, the provisioner idle for --idle-minutes: RSS, CPU seconds,
   API requests;
then every claim deleted and waited for until no PV and no CSI volume is left.

Prints one table with both side by side, the node and claim counts, the load average and the
simulator's own cost (kept out of every figure: it is a process of its own with its own user
agent). Checks that every claim got exactly one PV and that nothing is left; asserts no time.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets [FLEXCSI_BUILD_DIR=build] \\
        bench/big_cluster_bench.py --nodes 1000 --claims 1000 [--idle-minutes 10] \\
        [--tools flexcsi-controller,csi-provisioner] [--json OUT]
    bench/big_cluster_bench.py --fit A.json B.json ...   # scaling exponents of several runs"""
import argparse
import collections
import json
import math
import os
import sys
import time

from cluster_bench import bench_cluster, HERE

sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
from scale_provisioning import ScaleHarness, audit_requests  # noqa: E402

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


def fmt(value, unit=""):
    return "-" if value is None else ("%.1f%s" % (value, unit) if isinstance(value, float)
                                      else "%s%s" % (value, unit))


def print_table(nodes, claims, results, requests, simulator, idle_minutes):
    tools = list(results)
    print("\n%d nodes (simulated) + 1 kubelet node, %d Immediate + %d WaitForFirstConsumer "
          "claims, idle %d min with %d bound\n" % (nodes, claims, claims, idle_minutes,
                                                  2 * claims))
    print("| figure | " + " | ".join(tools) + " |")
    print("| --- | " + " | ".join("---:" for _ in tools) + " |")

    def row(label, get):
        print("| %s | %s |" % (label, " | ".join(fmt(get(t)) for t in tools)))

    for kind, label in (("imm", "Immediate"), ("wffc", "WaitForFirstConsumer")):
        row("%s: s until every PV exists" % label,
            lambda t: results[t].get(kind, {}).get("seconds"))
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
    print("| figure | runs (nodes, claims: value) | exponent in nodes | exponent in claims |")
    print("| --- | --- | ---: | ---: |")
    for key, points in sorted(figures.items()):
        print("| %s | %s | %s | %s |" % (" ".join(key), "; ".join(
            "%d, %d: %.1f" % p for p in points), slope(points, 0), slope(points, 1)))


def slope(points, axis):
    """Least-squares slope of log(value) on log(axis) over the points whose other axis is the
    same (the most common value of it), or '-' with fewer than two such points."""
    other = 1 - axis
    common = collections.Counter(p[other] for p in points).most_common(1)[0][0]
    chosen = [p for p in points if p[other] == common]
    xs = [math.log(p[axis]) for p in chosen]
    if len(set(xs)) < 2:
        return "-"
    ys = [math.log(p[2]) for p in chosen]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return "%.2f" % (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
                     / sum((x - mx) ** 2 for x in xs))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=1000,
                        help="Immediate claims, and as many WaitForFirstConsumer ones")
    parser.add_argument("--idle-minutes", type=float, default=10)
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
        print_table(args.nodes, args.claims, results, requests, simulator, args.idle_minutes)
        if left:
            print("LEFT in csi-loopback: %d volumes" % len(left))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"nodes": args.nodes, "claims": args.claims,
                           "idle_minutes": args.idle_minutes, "results": results,
                           "requests": {"%s %s" % k: v for k, v in requests.items()},
                           "simulator": simulator}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
