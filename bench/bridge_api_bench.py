#!/usr/bin/env python3
"""The API requests flexcsi-bridge makes, from the API server's audit log (issue #36, figure 3):
on the real v1.24 of tests/cluster with two kubelet nodes, one bridge per node serving two CSI
drivers (csi-loopback, shapes "default" and "noattach"), registering them on its Node and
CSINode with the node DaemonSet's RBAC (deploy/kubernetes/base/node/rbac.yaml). Counted by the
bridge's service account: its requests from its start until both drivers are registered on both
nodes and 30 s more ("start-up"), then over --minutes of steady state with nothing to do,
multiplied out per node and hour and for --scale nodes. Prints figures; asserts nothing.

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets [FLEXCSI_BUILD_DIR=build] \\
        bench/bridge_api_bench.py [--minutes 10] [--scale 1000]"""
import argparse
import collections
import json
import os
import sys
import time

from cluster_bench import bench_cluster
from migrate_scale_bench import audit_events_between, audit_seconds

import clustertest  # noqa: E402  (tests/cluster, on the path cluster_bench set)
from node_plugins import NodePlugins  # noqa: E402

BRIDGE_USER = "system:serviceaccount:flexcsi:flexcsi-node"
SHAPES = ("default", "noattach")
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def registered_everywhere(c, drivers):
    """Every node carries every driver's node-id annotation and CSINode entry."""
    for node in c.nodes:
        annotations = clustertest.get("node", node.name)["metadata"].get("annotations", {})
        if set(json.loads(annotations.get(NODE_ID_ANNOTATION, "{}"))) < set(drivers):
            return False
        csinode = clustertest.get("csinode", node.name) or {}
        entries = {d["name"] for d in csinode.get("spec", {}).get("drivers") or []}
        if entries < set(drivers):
            return False
    return True


def by_request(events):
    """verb resource -> count, e.g. "get nodes", "watch csinodes"."""
    counts = collections.Counter()
    for e in events:
        ref = e.get("objectRef", {})
        resource = ref.get("resource", e["requestURI"].split("?")[0])
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        counts["%s %s" % (e["verb"], resource)] += 1
    return counts


def received(event):
    return audit_seconds(event["requestReceivedTimestamp"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10, help="steady state to watch")
    parser.add_argument("--scale", type=int, default=1000, help="nodes to multiply out for")
    args = parser.parse_args()
    with bench_cluster(__file__, nodes=2) as c:
        clustertest.CLUSTER = c
        clustertest.apply([clustertest.namespace_object("flexcsi")])
        c.kubectl("apply", "-n", "flexcsi", "-f",
                  os.path.join(REPO, "deploy/kubernetes/base/node/serviceaccount.yaml"),
                  "-f", os.path.join(REPO, "deploy/kubernetes/base/node/rbac.yaml"))
        kubeconfig = clustertest.service_account_kubeconfig(c, "flexcsi", "flexcsi-node")
        plugins = [NodePlugins(c, shapes=SHAPES, registration_kubeconfig=kubeconfig, node=n)
                   for n in c.nodes]
        try:
            began = time.time()
            for p in plugins:
                p.start()
            drivers = [plugins[0].csi_driver(s) for s in SHAPES]
            clustertest.wait_for("both drivers registered on both nodes",
                                 lambda: registered_everywhere(c, drivers), 120)
            registered = time.time()
            steady_from = registered + 30
            time.sleep(max(0.0, steady_from - time.time()) + args.minutes * 60)
            steady_to = time.time()
        finally:
            for p in plugins:
                p.stop()
        # one event per request: a watch is logged when its response starts and again when
        # it ends
        events = list({e["auditID"]: e for e in audit_events_between(c, began - 1, steady_to)
                       if e["user"].get("username") == BRIDGE_USER}.values())
        start = [e for e in events if received(e) < steady_from]
        steady = [e for e in events if received(e) >= steady_from]
        nodes, hours = len(c.nodes), (steady_to - steady_from) / 3600
        print("\nflexcsi-bridge's API requests, %d nodes x %d drivers (audit log, user %s)"
              % (nodes, len(SHAPES), BRIDGE_USER))
        print("  registered on every node %.1f s after the bridges started" % (registered - began))
        print("  start-up (first %.0f s): %d requests, %.1f per node"
              % (steady_from - began, len(start), len(start) / nodes))
        for request, n in sorted(by_request(start).items()):
            print("    %-28s %d" % (request, n))
        per_node_hour = len(steady) / nodes / hours if hours else 0
        print("  steady state (%.1f min): %d requests = %.1f per node per hour"
              % (hours * 60, len(steady), per_node_hour))
        for request, n in sorted(by_request(steady).items()):
            print("    %-28s %d (%.1f per node per hour)" % (request, n, n / nodes / hours))
        print("  for %d nodes: start-up %d requests; steady state %.2f requests/s"
              % (args.scale, len(start) / nodes * args.scale, per_node_hour * args.scale / 3600))


if __name__ == "__main__":
    sys.exit(main())
