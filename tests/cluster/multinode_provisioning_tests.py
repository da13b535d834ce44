"""Issue 25, tests 2 and 3, on the multi-node suite's cluster (multinode_suite_test.py imports
this class; PLUGINS is the suite's list of NodePlugins, one per node, node-local csi-loopback
with its topology `topology.loopback.csi.flexcsi.io/node=<node>`; shape noattach, as node-local
drivers are). Only real Kubernetes controllers decide: the scheduler selects nodes, the PV
controller binds, kubelet mounts.

Where flexcsi-controller provisions: node-local csi-loopback creates volumes only on its own
node (CreateVolume whose requisite topology does not include it is RESOURCE_EXHAUSTED). One
controller reaching one driver instance (central mode, like external-provisioner's default) can
therefore serve one node only; with --node-deployment (external-provisioner's distributed mode)
one flexcsi-controller per node reaches that node's instance and takes the claims selected for
its node.

2. Topology: one flexcsi-controller --node-deployment per node. A WaitForFirstConsumer claim is
   provisioned for the node the scheduler selected (volume.kubernetes.io/selected-node), by that
   node's instance alone, and its pod runs and writes there, on each of the two nodes; an
   Immediate claim is taken by exactly one node's instance (it writes its node into the
   annotation; the API server lets one write through), its PV names that node, and a pod
   pinned to the other node is refused by the scheduler for its volume node affinity. Deleting
   the claims deletes each volume through its own node's instance; no CSI volume is left over
   or made twice. A central-mode controller beside them (its own provisioner name) refuses a
   claim selected for the node it does not reach instead of placing it elsewhere.
3. Two flexcsi-controller replicas with leader election (central mode): kill -9 the leader while
   claims are pending; the other takes the Lease and every claim ends with exactly one PV and
   one CSI volume."""
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


def controller_process(name, plugins, *args, resync="10s", provisioner=None):
    """A flexcsi-controller whose CSI endpoint is `plugins`' csi-loopback of SHAPE (that node's),
    with a configuration holding that driver alone (one provisioner per leader-elected process)
    and a journal of its own (each replica of a Deployment keeps its own); `provisioner`: the
    name StorageClasses use for it (default: the CSI driver's)."""
    c = clustertest.CLUSTER
    with open(plugins.config) as f:
        config = json.load(f)
    config["drivers"] = [d for d in config["drivers"] if d["rule"]["csiDriver"] == DRIVER]
    if provisioner:
        for d in config["drivers"]:
            d["provisioner"] = provisioner
    config_path = os.path.join(c.dir, name + ".json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=2)
    return Process(name, [
        os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
        "--kubeconfig", c.kubeconfig, "--bridge-config", config_path,
        "--journal", os.path.join(c.dir, name + "-journal.db"), "--resync-period", resync, *args],
        os.path.join(c.logs, name + ".log"))


def storage_class(name, mode, allowed_nodes=None, provisioner=DRIVER):
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
          "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": "Delete",
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

    def test_2_each_node_s_controller_provisions_for_its_node_and_deletes_its_volumes(self):
        c = clustertest.CLUSTER
        nodes = [n.name for n in c.nodes]
        a, b = nodes
        ns = "mn-topology"
        central_name = DRIVER + ".central"  # central mode beside them, with its own classes
        per_node = [controller_process(
            "flexcsi-controller-" + node, plugins, "--node-deployment", "--node-name", node,
            "--node-deployment-base-delay", "1s", "--node-deployment-max-delay", "4s")
            for node, plugins in zip(nodes, PLUGINS)]
        central = controller_process("flexcsi-controller-central", PLUGINS[0],
                                     provisioner=central_name)
        before = [volume_ids(p) for p in PLUGINS]  # other tests of the suite may keep volumes
        apply([clustertest.namespace_object(ns),
               storage_class("mn-wffc", "WaitForFirstConsumer"),
               storage_class("mn-immediate", "Immediate"),
               storage_class("mn-central", "WaitForFirstConsumer", provisioner=central_name),
               claim(ns, "wffc-a", "mn-wffc"), claim(ns, "wffc-b", "mn-wffc"),
               claim(ns, "immediate", "mn-immediate"), claim(ns, "central-on-b", "mn-central"),
               pod(ns, "wffc-a", "wffc-a", node=a), pod(ns, "wffc-b", "wffc-b", node=b),
               pod(ns, "central-on-b", "central-on-b", node=b)])
        logs = {}
        for node, proc in zip(nodes, per_node):
            logs[node] = (proc.log, os.path.getsize(proc.log) if os.path.exists(proc.log) else 0)
            proc.start()
        central.start()
        began, phases = time.monotonic(), []

        def phase(name):  # where the test's time goes, for CI logs
            phases.append("%s %.1f s" % (name, time.monotonic() - began))

        def log_of(node):
            return read_from(*logs[node])

        try:
            # Immediate: no scheduler involved; both instances want it, one writes its node into
            # the annotation first and provisions there.
            immediate = wait_for("the immediate claim to bind",
                                 lambda: clustertest.claims_bound(ns, ["immediate"]), 120)
            phase("immediate bound")
            owner = immediate["immediate"]["metadata"]["annotations"][SELECTED_NODE]
            other = b if owner == a else a
            self.assertEqual(affinity_nodes(pv_of(ns, "immediate")), [owner])
            apply([pod(ns, "immediate-elsewhere", "immediate", node=other),
                   pod(ns, "immediate-here", "immediate", node=owner)])
            # WaitForFirstConsumer: the scheduler picks the node (the pod's nodeSelector), the
            # PV controller hands its choice over in the annotation, that node's instance makes
            # the volume on its node and the pod runs and writes there; on both nodes.
            volumes = {}
            for i, node in enumerate(nodes):
                name = "wffc-" + "ab"[i]
                wait_pod_running(ns, name, timeout=180)
                phase(name + " running")
                self.assertEqual(get("pvc", name, ns)["metadata"]["annotations"][SELECTED_NODE],
                                 node)
                self.assertEqual(get("pod", name, ns)["spec"]["nodeName"], node)
                pv = pv_of(ns, name)
                self.assertEqual(affinity_nodes(pv), [node])
                volumes[name] = pv["spec"]["flexVolume"]["options"]["volumeID"]
                self.assertIn(volumes[name], volume_ids(PLUGINS[i]))
                self.assertEqual(exec_in(ns, name, "cat", "/data/file").strip(),
                                 "written-by-" + name)
            # The Immediate PV's node affinity is what the scheduler enforces.
            wait_for("the scheduler's refusal of immediate-elsewhere", lambda: "volume node "
                     "affinity conflict" in scheduling_failures(ns, "immediate-elsewhere"), 120)
            wait_pod_running(ns, "immediate-here", timeout=180)
            phase("immediate-here running")
            self.assertEqual(get("pod", "immediate-here", ns)["spec"]["nodeName"], owner)
            self.assertEqual(exec_in(ns, "immediate-here", "cat", "/data/file").strip(),
                             "written-by-immediate-here")
            self.assertFalse(get("pod", "immediate-elsewhere", ns)["spec"].get("nodeName"))
            # one list call for the rest (kubectl calls are slow on a loaded machine)
            pvs = {pv["spec"]["claimRef"]["name"]: pv for pv in pvs_of_namespace(ns)}
            self.assertEqual(set(pvs), {"wffc-a", "wffc-b", "immediate"})
            volumes["immediate"] = pvs["immediate"]["spec"]["flexVolume"]["options"]["volumeID"]
            # Central mode: the scheduler's pick is honoured, never overridden; node A's
            # driver, the one that controller reaches, refuses a volume for node B.
            wait_for("the central controller's refusal of central-on-b", lambda: any(
                "no requisite topology includes node " + a in m
                for _, m in controller_events(ns, "central-on-b", "ProvisioningFailed")), 120)
            phase("central-on-b refused")
            self.assertEqual(get("pvc", "central-on-b", ns)["status"]["phase"], "Pending")

            # Each PV by exactly one instance: one ProvisioningSucceeded, from its node (the
            # event's source host), one "provisioned" log line in that node's log alone; no
            # event at all from the other node's instance on the claim.
            where = {"wffc-a": a, "wffc-b": b, "immediate": owner}
            events = c.kubectl_json("get", "events", "-n", ns)["items"]
            for name, node in where.items():
                ours = [e for e in events if e["involvedObject"]["name"] == name and
                        e.get("source", {}).get("component") == "flexcsi-controller"]
                self.assertEqual({e.get("source", {}).get("host") for e in ours}, {node}, ours)
                self.assertEqual([e.get("count", 1) for e in ours
                                  if e["reason"] == "ProvisioningSucceeded"], [1])
                pv_name = pvs[name]["metadata"]["name"]
                for n in nodes:
                    self.assertEqual(log_of(n).count("provisioned PV %s " % pv_name),
                                     1 if n == node else 0, (n, pv_name))
            for n in nodes:  # the one write that went through
                self.assertEqual(log_of(n).count("claim %s/immediate (Immediate binding) taken "
                                                 "for node " % ns), 1 if n == owner else 0, n)
            # No CSI volume made twice or left without a PV, on either node.
            for i, node in enumerate(nodes):
                self.assertEqual(volume_ids(PLUGINS[i]) - before[i],
                                 {v for claim_name, v in volumes.items()
                                  if where[claim_name] == node}, node)
            print("\nper node: immediate taken by %s; central-on-b (selected %s): %s" % (
                owner, b, controller_events(ns, "central-on-b", "ProvisioningFailed")[0][1]),
                flush=True)

            # Deletion: each node's instance deletes its node's volumes, and only those.
            pv_names = {name: pvs[name]["metadata"]["name"] for name in where}
            delete_pods_and_claims(ns)
            phase("cleaned up")
            for name, node in where.items():
                for n in nodes:
                    # (a retry after a conflicting PV update repeats the idempotent DeleteVolume)
                    deleted = log_of(n).count("deleted volume %s of released PV %s"
                                              % (volumes[name], pv_names[name]))
                    self.assertTrue(deleted >= 1 if n == node else deleted == 0, (n, name))
            for i in range(len(nodes)):
                self.assertEqual(volume_ids(PLUGINS[i]) - before[i], set())
            print("after the controllers' start: " + ", ".join(phases), flush=True)
        finally:
            for proc in per_node + [central]:
                proc.stop()

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
            wait_for("every claim bound", lambda: clustertest.claims_bound(ns, names), 120)
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
