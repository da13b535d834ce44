#!/usr/bin/env python3
"""flexcsi-controller on a cluster of 100 simulated nodes (issue #36's CI size of
bench/big_cluster_bench.py): the real v1.24 control plane and one kubelet node, 100 nodes of
node_simulator.py over 3 zones, each registered for csi-loopback as flexcsi-bridge registers a
driver, and one csi-loopback controller (scale_provisioning.py says how it serves them all).

1. 100 Immediate claims and 50 WaitForFirstConsumer claims (CI keeps it small: its whole run is paid on every CI run), each with a pod the scheduler
   places on a simulated node of its zone: every claim gets exactly one PV, and the driver got
   exactly one CreateVolume per PV; every simulated node is still Ready and untainted.
2. Idle with everything bound, through several resyncs (every 5 s here, 30 s by default):
   flexcsi-controller reads no claim and no PV one by one (the audit log), as csi-provisioner
   works from its informers; it used to GET every claim and PV at every resync.
3. The pods and claims deleted: every PV and every CSI volume is gone, nothing orphaned.

Correctness only: the figures are the benchmark's (bench/big_cluster_bench.py)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from scale_provisioning import ScaleHarness, audit_requests, wait_until  # noqa: E402

NODES = 100
IMMEDIATE = 100
WFFC = 50
RESYNC_SECONDS = 5
SCALE = None
CONTROLLER = None


def setUpModule():
    global SCALE, CONTROLLER
    c = clustertest.start_cluster()
    SCALE = ScaleHarness(c, nodes=NODES)
    SCALE.start()
    print("%d simulated nodes registered in %.1f s" % (NODES, SCALE.timings["nodes registered"]),
          flush=True)
    CONTROLLER = SCALE.provisioner("flexcsi-controller",
                                   extra=("--resync-period", "%ds" % RESYNC_SECONDS))


def tearDownModule():
    clustertest.stop_cluster(CONTROLLER, SCALE)


class ScaleSuite(unittest.TestCase):
    def test_1_every_claim_gets_exactly_one_pv(self):
        began = time.time()
        immediate = SCALE.provision(CONTROLLER, "imm", IMMEDIATE, wffc=False, timeout=600)
        wffc = SCALE.provision(CONTROLLER, "wffc", WFFC, wffc=True, timeout=600)
        clustertest.timed("%d Immediate claims to PVs" % IMMEDIATE, immediate["seconds"])
        clustertest.timed("%d WaitForFirstConsumer claims to PVs" % WFFC, wffc["seconds"])
        problems = (SCALE.check_one_pv_each("imm", IMMEDIATE)
                    + SCALE.check_one_pv_each("wffc", WFFC))
        self.assertEqual(problems, [])
        pvs = sum(len(v) for ns in ("imm", "wffc") for v in SCALE.watch.of_namespace(ns).values())
        calls = SCALE.create_volume_calls((began, time.time()))
        self.assertEqual(calls, pvs, "CreateVolume calls against PVs")
        self.assertEqual(len(SCALE.driver_volumes()), pvs)
        # the WaitForFirstConsumer claims went where the scheduler put their pods (it binds a
        # pod once its claim is bound: after the PV, at the PV controller's next sync)
        pods = wait_until("every pod bound to a node", lambda: [
            p for p in [SCALE.api.call("GET", "/api/v1/namespaces/wffc/pods")["items"]]
            if all(pod["spec"].get("nodeName") for pod in p)], 300)[0]
        claims = {c["metadata"]["name"]: c for c in SCALE.api.call(
            "GET", "/api/v1/namespaces/wffc/persistentvolumeclaims")["items"]}
        for pod in pods:
            selected = claims[pod["metadata"]["name"]]["metadata"]["annotations"].get(
                "volume.kubernetes.io/selected-node")
            self.assertEqual(selected, pod["spec"].get("nodeName"))
            self.assertTrue(selected.startswith("sim-"), selected)
        self.assertEqual(SCALE.unhealthy_nodes(), [])

    def test_1_idle_controller_reads_no_settled_claim_or_pv(self):
        SCALE.wait_bound(["imm", "wffc"], timeout=600)
        idle = SCALE.idle(CONTROLLER, 4 * RESYNC_SECONDS)  # at least three resyncs
        requests = audit_requests(SCALE.cluster, {("flexcsi-controller", "idle"): idle["window"]})
        kinds = requests[("flexcsi-controller", "idle")]["by_kind"]
        print("flexcsi-controller idle %d s: %s" % (idle["seconds"], kinds), flush=True)
        # Before the informers' copies answered resyncs: 2 x 150 GETs per resync.
        reads = kinds.get("get persistentvolumeclaims", 0) + kinds.get("get persistentvolumes", 0)
        self.assertLessEqual(reads, 5, kinds)

    def test_2_deleting_the_claims_leaves_nothing(self):
        SCALE.delete_all(CONTROLLER, ["imm", "wffc"], timeout=600)
        left = [pv for pv, claim in SCALE.watch.claim_of.items()
                if claim.startswith(("imm/", "wffc/"))]
        self.assertEqual(left, [])
        self.assertEqual(SCALE.driver_volumes(), [])
        listed = SCALE.api.call("GET", "/api/v1/persistentvolumes")["items"]
        self.assertEqual([pv["metadata"]["name"] for pv in listed], [])


if __name__ == "__main__":
    clustertest.main(failfast=True)
