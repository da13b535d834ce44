#!/usr/bin/env python3
"""Simulated nodes for scale tests: N Node objects with no kubelet behind them, kept Ready as
kubelet v1.24 keeps its node, and each registered for a CSI driver exactly as flexcsi-bridge
registers one. Pods bound to them never run; controllers and the scheduler see N healthy nodes.

What kubelet v1.24 does and what is done here (pkg/kubelet/kubelet_node_status.go,
nodelease/controller.go):
- registration: POST of the Node with its labels (hostname, os, arch; here also the zone a
  cloud provider's labels would give), capacity, allocatable, conditions and addresses;
- the Lease kube-node-lease/<node>, 40 s duration, renewed every 10 s (a quarter of it) by a PUT
  of the object last written: kube-controller-manager's node lifecycle controller counts a node
  healthy while its Lease is renewed, and never taints it;
- node status: kubelet computes it every 10 s (nodeStatusUpdateFrequency) from a GET served by
  the API server's cache, and PATCHes it only when it changed or every 5 min
  (nodeStatusReportFrequency). The PATCH (strategic merge of the conditions' heartbeats) is done
  here every 5 min; the 10 s cache GETs are not, unless --status-gets: they change nothing any
  controller watches, and on this machine they would only take CPU from what is measured.
- the driver: as bridge/node_registrar.cc does it, a GET of the Node, a merge PATCH of its
  topology label and csi.volume.kubernetes.io/nodeid annotation (with the resourceVersion), a
  GET of its CSINode (none yet) and a POST of the CSINode with the driver's entry (nodeID,
  topologyKeys, allocatable count) owned by the Node.

Every request carries the user agent `flexcsi-node-simulator`, so the audit log counts them apart.

    node_simulator.py --server URL --ca CA --cert CRT --key KEY --count 1000 --prefix sim \\
        --driver D --topology-key K --ready-file F [--zones 3]

Writes F once every node is registered and Ready; logs a line of counts every minute."""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keepalive_api import KeepAliveApi  # noqa: E402

USER_AGENT = "flexcsi-node-simulator"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40                 # kubelet's nodeLeaseDurationSeconds
RENEW_SECONDS = LEASE_SECONDS / 4  # nodelease.renewIntervalFraction 0.25
STATUS_REPORT_SECONDS = 300        # kubelet's nodeStatusReportFrequency
STATUS_UPDATE_SECONDS = 10         # kubelet's nodeStatusUpdateFrequency
ZONE_LABEL = "topology.kubernetes.io/zone"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
KUBELET_VERSION = "v1.24.17"


def zone_of(index, zones):
    return "zone-%s" % "abcdefghijklmnopqrstuvwxyz"[index % zones]


def micro_time():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_time():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(stamp):
    pressure = [("MemoryPressure", "KubeletHasSufficientMemory"),
                ("DiskPressure", "KubeletHasNoDiskPressure"),
                ("PIDPressure", "KubeletHasSufficientPID")]
    return ([{"type": t, "status": "False", "reason": r, "message": "simulated",
              "lastHeartbeatTime": stamp, "lastTransitionTime": stamp} for t, r in pressure]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status (simulated)",
                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}])


def node_object(name, index, zones):
    stamp = now_time()
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64", ZONE_LABEL: zone_of(index, zones)}},
            "spec": {},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": conditions(stamp),
                       # a documentation range: nothing is ever sent there
                       "addresses": [{"type": "InternalIP",
                                      "address": "203.0.%d.%d" % (index // 250, index % 250 + 1)},
                                     {"type": "Hostname", "address": name}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                       "nodeInfo": {"kubeletVersion": KUBELET_VERSION,
                                    "kubeProxyVersion": KUBELET_VERSION,
                                    "operatingSystem": "linux", "architecture": "amd64",
                                    "containerRuntimeVersion": "containerd://1.6.20",
                                    "osImage": "simulated", "kernelVersion": "simulated",
                                    "machineID": "", "systemUUID": "", "bootID": ""}}}


class SimulatedNode:
    def __init__(self, name, index):
        self.name, self.index = name, index
        self.uid = None
        self.lease = None        # the Lease as last written
        self.status_due = 0.0    # monotonic time of the next status report


class NodeSimulator:
    def __init__(self, api, count, prefix, driver, topology_key, zones=3, max_volumes=64,
                 workers=4, status_gets=False):
        self.api, self.driver, self.topology_key = api, driver, topology_key
        self.zones, self.max_volumes, self.workers = zones, max_volumes, workers
        self.status_gets = status_gets
        self.nodes = [SimulatedNode("%s-%05d" % (prefix, i), i) for i in range(count)]
        self.stopping = threading.Event()
        self.counts = collections.Counter()
        self.lock = threading.Lock()
        self.latest_renewal = 0.0  # the most a renewal came after it was due, seconds

    def count(self, what):
        with self.lock:
            self.counts[what] += 1

    # ----- registration -----------------------------------------------------------------

    def register_all(self):
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(self.register, self.nodes))

    def register(self, node):
        created = self.api.call("POST", "/api/v1/nodes",
                                node_object(node.name, node.index, self.zones), ok=(201, 409))
        if created.get("kind") != "Node":  # there from an earlier run: take it as it is
            created = self.api.call("GET", "/api/v1/nodes/" + node.name)
        node.uid = created["metadata"]["uid"]
        owner = [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}]
        node.lease = self.api.call(
            "POST", "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % LEASE_NAMESPACE,
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": node.name, "namespace": LEASE_NAMESPACE,
                          "ownerReferences": owner},
             "spec": {"holderIdentity": node.name, "leaseDurationSeconds": LEASE_SECONDS,
                      "renewTime": micro_time()}})
        self.register_driver(node)
        self.count("registered")

    def register_driver(self, node):
        """The bridge's RegisterDriverOnNode for a driver whose NodeGetInfo answers node id =
        the node's name, one topology segment {topology_key: node name}."""
        for attempt in range(10):  # as the bridge: a conflict reads the Node again
            current = self.api.call("GET", "/api/v1/nodes/" + node.name)
            self.api.call("GET", "/apis/storage.k8s.io/v1/csinodes/" + node.name, ok=(404,))
            patched = self.api.call(
                "PATCH", "/api/v1/nodes/" + node.name,
                {"metadata": {"labels": {self.topology_key: node.name},
                              "annotations": {NODE_ID_ANNOTATION: json.dumps(
                                  {self.driver: node.name}, separators=(",", ":"))},
                              "resourceVersion": current["metadata"]["resourceVersion"]}},
                content_type="application/merge-patch+json", ok=(200, 409))
            if patched.get("kind") == "Node":
                break
            self.count("registration conflicts")
        self.api.call("POST", "/apis/storage.k8s.io/v1/csinodes",
                      {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                       "metadata": {"name": node.name, "ownerReferences": [
                           {"apiVersion": "v1", "kind": "Node", "name": node.name,
                            "uid": node.uid}]},
                       "spec": {"drivers": [{"name": self.driver, "nodeID": node.name,
                                             "topologyKeys": [self.topology_key],
                                             "allocatable": {"count": self.max_volumes}}]}})

    # ----- heartbeats -------------------------------------------------------------------

    def run_heartbeats(self):
        """One thread per shard of nodes; each renews its nodes' Leases in turn, spread evenly
        over the renewal period, and reports each node's status every 5 min."""
        threads = [threading.Thread(target=self._heartbeat_shard, args=(self.nodes[k::self.workers],),
                                    daemon=True) for k in range(self.workers)]
        for t in threads:
            t.start()
        return threads

    def _heartbeat_shard(self, shard):
        if not shard:
            return
        start = time.monotonic()
        schedule = collections.deque(
            (start + RENEW_SECONDS * (i + 1) / len(shard), node) for i, node in enumerate(shard))
        for i, (_, node) in enumerate(schedule):
            node.status_due = start + STATUS_REPORT_SECONDS * (i + 1) / len(shard)
        while not self.stopping.is_set():
            due, node = schedule.popleft()
            wait = due - time.monotonic()
            if wait > 0 and self.stopping.wait(wait):
                return
            with self.lock:
                self.latest_renewal = max(self.latest_renewal, time.monotonic() - due)
            try:
                self.renew(node)
                if self.status_gets:
                    self.api.call("GET", "/api/v1/nodes/%s?resourceVersion=0" % node.name)
                if time.monotonic() >= node.status_due:
                    self.report_status(node)
                    node.status_due += STATUS_REPORT_SECONDS
            except Exception as e:  # noqa: BLE001 - a heartbeat thread must keep going
                self.count("error")
                print("heartbeat of %s: %s" % (node.name, e), flush=True)
            schedule.append((due + RENEW_SECONDS, node))

    def renew(self, node):
        lease = dict(node.lease)
        lease["spec"] = dict(lease["spec"], renewTime=micro_time())
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (LEASE_NAMESPACE,
                                                                           node.name)
        try:
            node.lease = self.api.call("PUT", path, lease)
        except Exception:  # noqa: BLE001 - a conflict: kubelet reads the Lease again
            node.lease = self.api.call("GET", path)
            raise
        self.count("lease renewals")

    def report_status(self, node):
        stamp = now_time()
        patch = {"status": {"conditions": [
            {"type": c["type"], "status": c["status"], "lastHeartbeatTime": stamp}
            for c in conditions(stamp)]}}
        self.api.call("PATCH", "/api/v1/nodes/%s/status" % node.name, patch,
                      content_type="application/strategic-merge-patch+json")
        self.count("status reports")


def log_counts(simulator, period=60):
    while not simulator.stopping.wait(period):
        with simulator.lock:
            print("%s counts %s, latest renewal %.1f s after due"
                  % (time.strftime("%H:%M:%S"), dict(simulator.counts),
                     simulator.latest_renewal), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--server", "--ca", "--cert", "--key", "--driver", "--topology-key",
                 "--ready-file"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--prefix", default="sim")
    parser.add_argument("--zones", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0,
                        help="heartbeat threads (default: one per 50 nodes, at least 4: a "
                             "thread renews its Leases one after the other, and on a loaded "
                             "API server a PUT can take 100 ms)")
    parser.add_argument("--status-gets", action="store_true",
                        help="also kubelet's GET of its Node every 10 s (from the API cache)")
    args = parser.parse_args()
    api = KeepAliveApi(args.server, args.ca, args.cert, args.key, USER_AGENT)
    args.workers = args.workers or max(4, args.count // 50)
    simulator = NodeSimulator(api, args.count, args.prefix, args.driver, args.topology_key,
                              zones=args.zones, workers=args.workers,
                              status_gets=args.status_gets)
    signal.signal(signal.SIGTERM, lambda *_: simulator.stopping.set())
    began = time.monotonic()
    simulator.register_all()
    simulator.run_heartbeats()
    print("%d nodes registered in %.1f s" % (args.count, time.monotonic() - began), flush=True)
    with open(args.ready_file + ".tmp", "w") as f:
        f.write("%d\n" % args.count)
    os.rename(args.ready_file + ".tmp", args.ready_file)
    log_counts(simulator)
    return 0


if __name__ == "__main__":
    sys.exit(main())
