"""Issue 25, tests 2 and 3, on the multi-node suite's cluster (multinode_suite_test.py imports
this class; PLUGINS is the suite's list of NodePlugins, one per node, node-local csi-loopback
with its topology `topology.loopback.csi.flexcsi.io/node=<node>`; shape noattach, as node-local
drivers are). Only real Kubernetes
controllers decide: the scheduler selects nodes, the PV controller binds, kubelet mounts.

Where flexcsi-controller provisions: like external-provisioner in its central mode, it reaches
one CSI controller endpoint per driver (the bridge configuration's csiEndpoint), here node A's
csi-loopback. Node-local csi-loopback creates volumes only on its own node (CreateVolume whose
requisite topology does not include it is RESOURCE_EXHAUSTED). So the controller provisions
exactly where topology says, and for a node whose driver instance it does not reach it refuses
instead of creating the volume elsewhere. It has no distributed mode (external-provisioner's
--node-deployment: one provisioner per node, each taking the claims selected for its node),
which is what serving every node of a one-driver-per-node storage would need.

2. Topology: a WaitForFirstConsumer claim is provisioned for the node the scheduler selected
   (volume.kubernetes.io/selected-node), and its pod runs and writes there; a claim selected for
   the other node is refused, not provisioned elsewhere; an Immediate claim's PV names node A
   and a pod pinned to node B is refused by the scheduler for its volume node affinity.
3. Two flexcsi-controller replicas with leader election: kill -9 the leader while claims are
   pending; the other takes the Lease and every claim ends with exactly one PV and one CSI
   volume."""
import json
import os
import re
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, exec_in, get, wait_for  # noqa: E402
from clustertest import controller_events, wait_pod_running  # noqa: E402
from cluster import Process  # noqa: E402
from node_plugins import csi_driver  # noqa: E402

# Node-local drivers have no ControllerPublish (a volume on a node's own disk needs no attach),
# so kube-controller-manager's attach/detach controller has nothing to do for these volumes.
SHAPE = "noattach"
DRIVER = csi_driver(SHAPE)
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
PLUGINS = []  # the suite's NodePlugins, one per node (multinode_suite_test.py fills it)


def controller_process(name, plugins, *args, resync="10s"):
    """A flexcsi-controller whose CSI endpoint is `plugins`' csi-loopback of SHAPE (that node's),
    with a configuration holding that driver alone (one provisioner per leader-elected process)
    and a journal of its own (each replica of a Deployment keeps its own)."""
    c = clustertest.CLUSTER
    with open(plugins.config) as f:
        config = json.load(f)
    config["drivers"] = [d for d in config["drivers"] if d["rule"]["csiDriver"] == DRIVER]
    config_path = os.path.join(c.dir, name + ".json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)
    return Process(name, [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", config_path,
        "--journal", os.path.join(c.dir, name + "-journal.db"), "--resync-period", resync, *args],
        os.path.join(c.logs, name + ".log"))


def storage_class(name, mode, allowed_nodes=None):
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
          "provisioner": DRIVER, "volumeBindingMode": mode, "reclaimPolicy": "Delete",
          "parameters": {"csi.storage.k8s.io/fstype": "ext4"}}
    if allowed_nodes:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": TOPOLOGY_KEY, "values": list(allowed_nodes)}]}]
    return sc


def claim(ns, name, storage_class_name, size="64Mi"):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class_name,
                     "resources": {"requests": {"storage": size}}}}


def pod(ns, name, claim_name, node=None):
    """A pod writing its name into the claim's volume; `node`: pinned by the node's topology
    label (a nodeSelector, so the scheduler still decides and says why it refuses)."""
    p = busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
                    [{"name": "data", "mountPath": "/data"}],
                    command="echo written-by-%s > /data/file; sleep 3600" % name)
    if node:
        p["spec"]["nodeSelector"] = {TOPOLOGY_KEY: node}
    return p


def volume_ids(plugins):
    return {v["id"] for v in plugins.driver_state(SHAPE)["volumes"]}


def pv_of(ns, claim_name):
    name = (get("pvc", claim_name, ns) or {}).get("spec", {}).get("volumeName")
    return get("pv", name) if name else None


def affinity_nodes(pv):
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    return sorted(v for t in terms for e in t["matchExpressions"] if e["key"] == TOPOLOGY_KEY
                  for v in e["values"])


def scheduling_failures(ns, name):
    """The scheduler's FailedScheduling messages for the pod, joined."""
    items = clustertest.CLUSTER.kubectl_json(
        "get", "events", "-n", ns, "--field-selector",
        "reason=FailedScheduling,involvedObject.name=" + name)["items"]
    return " | ".join(e["message"] for e in items)


def read_from(path, offset):
    with open(path, errors="replace") as f:
        f.seek(offset)
        return f.read()


def pvs_of_namespace(ns):
    return [pv for pv in clustertest.CLUSTER.kubectl_json("get", "pv")["items"]
            if pv["spec"].get("claimRef", {}).get("namespace") == ns]


def bound(ns, names):
    """True when every named claim of the namespace is Bound (one list call, not one per claim:
    a poll stays cheap on a loaded machine)."""
    phases = {pvc["metadata"]["name"]: pvc.get("status", {}).get("phase") for pvc in
              clustertest.CLUSTER.kubectl_json("get", "pvc", "-n", ns)["items"]}
    return all(phases.get(n) == "Bound" for n in names)


def delete_pods_and_claims(ns):
    """Every pod, then every claim of the namespace; reclaim policy Delete: flexcsi-controller
    deletes each volume, then its PV. Waits until no PV of the namespace is left."""
    c = clustertest.CLUSTER
    c.kubectl("delete", "pod", "--all", "-n", ns, "--wait=false")
    wait_for("the pods of %s to be gone" % ns,
             lambda: not c.kubectl_json("get", "pod", "-n", ns)["items"], 120)
    c.kubectl("delete", "pvc", "--all", "-n", ns, "--wait=false")
    wait_for("the PVs of %s to be deleted" % ns, lambda: not pvs_of_namespace(ns), 180)


class MultiNodeProvisioningTest(unittest.TestCase):
    def setUp(self):
        c = clustertest.CLUSTER
        for node in c.nodes:
            wait_for("%s's topology label" % node.name,
                     lambda: get("node", node.name)["metadata"]["labels"].get(TOPOLOGY_KEY)
                     == node.name, 60)

    def test_2_claims_are_provisioned_where_topology_says_and_used_only_there(self):
        c = clustertest.CLUSTER
        a, b = c.nodes[0].name, c.nodes[1].name
        ns = "mn-topology"
        controller = controller_process("flexcsi-controller-topology", PLUGINS[0])
        on_b_before = volume_ids(PLUGINS[1])  # other tests of the suite may keep volumes there
        apply([clustertest.namespace_object(ns),
               # the nodes this controller's driver instance serves: the scheduler must choose
               storage_class("mn-wffc-served", "WaitForFirstConsumer", allowed_nodes=[a]),
               storage_class("mn-wffc", "WaitForFirstConsumer"),
               storage_class("mn-immediate", "Immediate"),
               claim(ns, "wffc", "mn-wffc-served"), claim(ns, "wffc-on-b", "mn-wffc"),
               claim(ns, "immediate", "mn-immediate"),
               pod(ns, "wffc", "wffc"), pod(ns, "wffc-on-b", "wffc-on-b", node=b)])
        controller.start()
        began, phases = time.monotonic(), []

        def phase(name):  # where the test's time goes, for CI logs
            phases.append("%s %.1f s" % (name, time.monotonic() - began))

        try:
            # Immediate: placed where the driver answered (node A); the pods come once the claim
            # is bound, so that the scheduler's first answer is about the PV's node affinity.
            wait_for("the immediate claim to bind", lambda: bound(ns, ["immediate"]), 120)
            apply([pod(ns, "immediate-on-b", "immediate", node=b),
                   pod(ns, "immediate-on-a", "immediate", node=a)])
            # WaitForFirstConsumer: the scheduler picks the node (of two, the one the class
            # allows), the PV controller hands its choice over in the annotation, the volume is
            # made on that node and the pod runs and writes there.
            wait_pod_running(ns, "wffc", timeout=180)
            phase("wffc running")
            selected = get("pvc", "wffc", ns)["metadata"]["annotations"][SELECTED_NODE]
            self.assertEqual(selected, a)
            self.assertEqual(get("pod", "wffc", ns)["spec"]["nodeName"], a)
            pv = pv_of(ns, "wffc")
            self.assertEqual(affinity_nodes(pv), [a])
            volume = pv["spec"]["flexVolume"]["options"]["volumeID"]
            self.assertIn(volume, volume_ids(PLUGINS[0]))
            self.assertEqual(exec_in(ns, "wffc", "cat", "/data/file").strip(), "written-by-wffc")
            # The scheduler's pick is honoured, never overridden: a claim selected for node B
            # asks for B only, and node A's driver, the one this controller reaches, refuses.
            wait_for("the scheduler to select %s for wffc-on-b" % b, lambda: (
                get("pvc", "wffc-on-b", ns)["metadata"].get("annotations", {})
                .get(SELECTED_NODE) == b), 120)
            wait_for("flexcsi-controller's refusal of wffc-on-b", lambda: any(
                "no requisite topology includes node " + a in m
                for _, m in controller_events(ns, "wffc-on-b", "ProvisioningFailed")), 120)
            phase("wffc-on-b refused")
            print("\nwffc-on-b (selected %s): %s" % (
                b, controller_events(ns, "wffc-on-b", "ProvisioningFailed")[0][1]), flush=True)
            self.assertEqual(get("pvc", "wffc-on-b", ns)["status"]["phase"], "Pending")
            self.assertEqual(get("pod", "wffc-on-b", ns)["status"]["phase"], "Pending")
            # The immediate PV's node affinity is what the scheduler enforces: pinned to B, the
            # pod is refused for it; on A it runs.
            self.assertEqual(affinity_nodes(pv_of(ns, "immediate")), [a])
            wait_for("the scheduler's refusal of immediate-on-b", lambda: "volume node affinity "
                     "conflict" in scheduling_failures(ns, "immediate-on-b"), 120)
            print("immediate-on-b: %s" % scheduling_failures(ns, "immediate-on-b"), flush=True)
            phase("immediate-on-b refused")
            wait_pod_running(ns, "immediate-on-a", timeout=180)
            phase("immediate-on-a running")
            self.assertEqual(get("pod", "immediate-on-a", ns)["spec"]["nodeName"], a)
            self.assertEqual(exec_in(ns, "immediate-on-a", "cat", "/data/file").strip(),
                             "written-by-immediate-on-a")
            pod_b = get("pod", "immediate-on-b", ns)
            self.assertEqual(pod_b["status"]["phase"], "Pending")
            self.assertFalse(pod_b["spec"].get("nodeName"))
            # Nothing was created on node B's driver, nor for the refused claim.
            self.assertEqual(volume_ids(PLUGINS[1]), on_b_before)
            self.assertEqual(len(pvs_of_namespace(ns)), 2)
            delete_pods_and_claims(ns)
            self.assertEqual(volume_ids(PLUGINS[0]) & {volume}, set())
            phase("cleaned up")
            print("after the controller's start: " + ", ".join(phases), flush=True)
        finally:
            controller.stop()

    def test_3_two_replicas_hand_over_while_claims_are_pending(self):
        """Two flexcsi-controller processes, leader election, different identities; the leader
        is killed with -9 while claims are pending."""
        c = clustertest.CLUSTER
        ns, lease_seconds = "mn-replicas", 8
        lock = re.sub("[^a-zA-Z0-9-]", "-", DRIVER)  # external-provisioner's Lease name
        election = ["--leader-election", "--leader-election-namespace", ns,
                    "--leader-election-lease-duration", "%ds" % lease_seconds,
                    "--leader-election-renew-deadline", "5s", "--leader-election-retry-period", "1s"]
        replicas = [controller_process("flexcsi-controller-replica-%d" % i, PLUGINS[0],
                                       "--identity", "replica-%d" % i, *election,
                                       resync="5s")
                    for i in (1, 2)]
        apply([clustertest.namespace_object(ns), storage_class(ns, "Immediate")])
        volumes_before = volume_ids(PLUGINS[0])
        on_b_before = volume_ids(PLUGINS[1])

        def holder():
            lease = get("lease", lock, ns)
            return lease["spec"].get("holderIdentity", "") if lease else ""

        def pvs():
            return pvs_of_namespace(ns)

        def make_claims(prefix, count):
            names = ["%s-%d" % (prefix, i) for i in range(count)]
            apply([claim(ns, n, ns, size="16Mi") for n in names])
            return names

        try:
            replicas[0].start()
            wait_for("replica-1 to lead", lambda: holder() == "replica-1", 60)
            replicas[1].start()
            wait_for("replica-2 to campaign", lambda: "leader election:" in
                     read_from(replicas[1].log, 0), 30)
            # The kill comes right after the driver's first CreateVolume answer (its log, read
            # without an API round trip): replica-1 has volumes in flight with no PV yet.
            driver_log = PLUGINS[0].procs[SHAPE].log
            seen = os.path.getsize(driver_log)
            # kubectl creates the claims one by one while replica-1 already provisions: watch
            # the driver's log meanwhile, not after
            first = ["a-%d" % i for i in range(12)]
            creating = threading.Thread(target=make_claims, args=("a", len(first)))
            creating.start()
            wait_for("replica-1's first CreateVolume", lambda: re.search(
                r"CreateVolume name=pvc-\S+: OK", read_from(driver_log, seen)), 120, interval=0.02)
            killed_at = time.monotonic()
            replicas[0].stop(signal.SIGKILL)
            creating.join()
            bound_at_kill = len(pvs())
            # pending through the takeover whatever replica-1 finished before its kill
            second = make_claims("b", 6)
            names = first + second
            taken = first_pv = None
            while time.monotonic() - killed_at < 300:
                now = time.monotonic() - killed_at
                if taken is None and holder() == "replica-2":
                    taken = now
                if first_pv is None and any(pv["spec"]["claimRef"]["name"] in second
                                            for pv in pvs()):
                    first_pv = now
                if taken is not None and first_pv is not None and len(pvs()) >= len(names):
                    break
                time.sleep(0.2)
            all_bound = time.monotonic() - killed_at
            self.assertIsNotNone(taken, "replica-2 never took the Lease")
            self.assertIsNotNone(first_pv, "replica-2 provisioned nothing")
            wait_for("every claim bound", lambda: bound(ns, names), 120)
            # A second PV or volume for a claim would come from a later pass over the claims:
            # let one resync of replica-2 (5 s) pass before counting.
            wait_for("a resync of replica-2 after the last PV", lambda: time.monotonic() -
                     killed_at > all_bound + 6, 30)
            made = pvs()
            per_claim = {}
            for pv in made:
                per_claim[pv["spec"]["claimRef"]["name"]] = \
                    per_claim.get(pv["spec"]["claimRef"]["name"], 0) + 1
            volumes = volume_ids(PLUGINS[0]) - volumes_before
            print("\ntwo replicas: %d claims (%d with a PV when replica-1 was killed with -9), "
                  "%d PVs, %d CSI volumes; replica-2 took the Lease %.1f s after the kill "
                  "(lease %d s), its first PV %.1f s after, all PVs %.1f s after"
                  % (len(names), bound_at_kill, len(made), len(volumes), taken, lease_seconds,
                     first_pv, all_bound), flush=True)
            self.assertLess(bound_at_kill, len(first), "no claim was pending at the kill")
            self.assertEqual(set(per_claim), set(names))
            self.assertEqual(set(per_claim.values()), {1}, per_claim)
            self.assertEqual(volumes, {pv["spec"]["flexVolume"]["options"]["volumeID"]
                                       for pv in made}, "orphaned or duplicate CSI volumes")
            self.assertEqual(volume_ids(PLUGINS[1]), on_b_before)
            succeeded = {}
            for e in c.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                    "reason=ProvisioningSucceeded")["items"]:
                name = e["involvedObject"]["name"]
                succeeded[name] = succeeded.get(name, 0) + e.get("count", 1)
            self.assertLessEqual(set(succeeded.values()), {1}, succeeded)
            # The Lease can be taken once it expired (lease after the last renewal) and
            # replica-2 tries every retry period; the rest is room for a loaded machine.
            self.assertLess(taken, lease_seconds + 1 + 10)
            delete_pods_and_claims(ns)
            self.assertEqual(volume_ids(PLUGINS[0]) - volumes_before, set())
        finally:
            for r in replicas:
                r.stop()
