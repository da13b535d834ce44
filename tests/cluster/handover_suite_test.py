#!/usr/bin/env python3
"""flexcsi-controller hands provisioning over to the real csi-provisioner v3.4.1 on a real
v1.24, for a CSI driver that takes seconds per CreateVolume (issue 38): no claim is ever
provisioned twice, whichever way flexcsi-controller stops. On v1.14 (as
cluster_handover_suite_v1_14) the same with that era's csi-provisioner v1.2.2 and its Endpoints
lock (issue 35).

The driver is csi-loopback behind tests/cluster/slow_csi_proxy.py, which holds every
CreateVolume for DELAY seconds and logs what it passes on and from whom; both provisioners
reach the driver only through it. Each claim must end with exactly one CreateVolume that reached
the driver, one PV, one CSI volume, and the provisioning events of one component.

1. Leader election (both with --leader-election on external-provisioner's Lease), ROUNDS
   rounds in a row, each with flexcsi-controller leading and claims in flight in the driver:
   a. SIGTERM: it stops taking claims, lets those in flight finish under a lease it still
      renews, writes their FlexVolume PVs, and only then releases the Lease;
   b. kill -9: csi-provisioner takes the Lease once it has expired and provisions the claims;
      the killed calls were never passed on;
   c. its API server unreachable for longer than the lease (a partition between it and the API
      server only): it stops acting once its renewals fail, cancels its calls in flight, writes
      nothing more, and exits; csi-provisioner takes over as in b.
2. Per node (--node-deployment on both, no lock): NODE_ROUNDS rounds of flexcsi-controller
   stopped with SIGTERM while its claims are in flight, then csi-provisioner started for the node.
3. csi-provisioner v1.x (1.14's v1.2.2; tests 1 and 2 need v2+ flags and are skipped there):
   both run, flexcsi-controller with --leader-election-lock endpoints, csi-provisioner with its
   default Endpoints lock and fixed 15 s lease; V1_CLAIMS claims while flexcsi-controller leads
   and csi-provisioner calls nothing; then kill -9 of each in turn with claims in flight and more
   created while nobody leads: the other takes the Endpoints lock and provisions them all, once.

FLEXCSI_HANDOVER_ROUNDS sets ROUNDS (20), FLEXCSI_HANDOVER_NODE_ROUNDS sets NODE_ROUNDS (as
ROUNDS); FLEXCSI_HANDOVER_CONTROLLER runs another flexcsi-controller binary (an older build's,
to see these tests fail on it).
"""
import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, wait_for  # noqa: E402
from cluster import Process  # noqa: E402
from node_plugins import NodePlugins, csi_driver  # noqa: E402
from partition_proxy import PartitionProxy  # noqa: E402

SHAPE = "default"
DRIVER = csi_driver(SHAPE)
DELAY = 6  # seconds per CreateVolume: longer than it takes to notice a lost lease (renew 2 s)
ROUNDS = int(os.environ.get("FLEXCSI_HANDOVER_ROUNDS", "20"))
NODE_ROUNDS = int(os.environ.get("FLEXCSI_HANDOVER_NODE_ROUNDS", str(ROUNDS)))
CLAIMS_PER_STEP = 2
V1_CLAIMS = 50  # test 3: claims while flexcsi-controller leads
V1_TAKEOVER_CLAIMS = 5  # test 3: claims in flight at each kill -9, and again while nobody leads
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
HERE = os.path.dirname(os.path.abspath(__file__))
OURS = "flexcsi-controller"

PLUGINS = None
SLOW_DRIVER = None
PARTITION = None


def setUpModule():
    global PLUGINS, SLOW_DRIVER, PARTITION
    c = clustertest.start_cluster()
    apply(clustertest.namespace_object("flexcsi"))
    c.kubectl("apply", "-n", "flexcsi", "-f",
              os.path.join(HERE, "../../deploy/kubernetes/base/node/serviceaccount.yaml"),
              "-f", os.path.join(HERE, "../../deploy/kubernetes/base/node/rbac.yaml"))
    # The bridge registers the driver (topology label, CSINode): csi-provisioner's topology
    # needs the CSINode entry, flexcsi-controller the label.
    PLUGINS = NodePlugins(c, shapes=[SHAPE], registration_kubeconfig=clustertest.
                          service_account_kubeconfig(c, "flexcsi", "flexcsi-node"))
    PLUGINS.start()
    SLOW_DRIVER = Process("slow-csi-proxy", [
        "/usr/bin/python3", os.path.join(HERE, "slow_csi_proxy.py"), "--listen", slow_socket(),
        "--driver", PLUGINS.csi_socket(SHAPE), "--delay", str(DELAY), "--log", calls_log()],
        os.path.join(c.logs, "slow-csi-proxy.log"))
    SLOW_DRIVER.start()
    wait_for("the slow driver's socket", lambda: os.path.exists(slow_socket()), 30)
    host, port = re.match(r"https://([^:]+):(\d+)$", c.server).groups()
    PARTITION = PartitionProxy(host, int(port))
    with open(c.kubeconfig) as f:
        text = f.read()
    with open(partitioned_kubeconfig(), "w") as f:
        f.write(text.replace(c.server, "https://127.0.0.1:%d" % PARTITION.port))
    with open(PLUGINS.config) as f:
        config = json.load(f)
    for driver in config["drivers"]:
        driver["csiEndpoint"] = "unix://" + slow_socket()
    with open(controller_config(), "w") as f:
        json.dump(config, f)
    wait_for("the driver's topology label on the node",
             lambda: (clustertest.get("node", c.node_name)["metadata"]["labels"]
                      .get("topology.loopback.csi.flexcsi.io/node")), 60)


def tearDownModule():
    if PARTITION:
        PARTITION.close()
    clustertest.stop_cluster(SLOW_DRIVER, PLUGINS)


def slow_socket():
    return os.path.join(clustertest.CLUSTER.dir, "slow-csi.sock")


def calls_log():
    return os.path.join(clustertest.CLUSTER.logs, "slow-csi-calls.jsonl")


def partitioned_kubeconfig():
    return os.path.join(clustertest.CLUSTER.dir, "partitioned.kubeconfig")


def controller_config():
    return os.path.join(clustertest.CLUSTER.dir, "controller-bridge.json")


def create_volume_calls():
    """The slow driver's CreateVolume log: [(event, volume name, 'ours' | 'theirs')]."""
    try:
        with open(calls_log()) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
    return [(c["event"], c["name"], "ours" if "grpc-c++" in c["caller"] else "theirs")
            for c in lines]


def create_volume_received(who, since, until=None):
    """Names of the CreateVolume calls of `who` the slow driver received between the times
    `since` and `until` (time.time())."""
    try:
        with open(calls_log()) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
    return [c["name"] for c in lines
            if c["event"] == "received" and ("ours" if "grpc-c++" in c["caller"] else "theirs")
            == who and c["at"] >= since and (until is None or c["at"] <= until)]


def skip_unless_csi_provisioner_takes_a_lease(test, needs):
    version = clustertest.CLUSTER.version
    if version.csi_provisioner_lock != "Lease":
        test.skipTest("Kubernetes %s: its csi-provisioner (v1.x) takes an %s lock with fixed "
                      "15/10/5 s timings and has no %s" % (version, version.csi_provisioner_lock,
                                                           needs))


def claim(ns, name, storage_class):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "16Mi"}}}}


class Provisioners:
    """flexcsi-controller and csi-provisioner for the slow driver, each started anew as often as
    a step needs; `extra` are the flags both get (leader election or per-node)."""

    def __init__(self, ns, ours_extra, theirs_extra, ours_kubeconfig,
                 theirs_success="ProvisioningSucceeded"):
        c = clustertest.CLUSTER
        self.ns = ns
        # The event each reports for a claim it provisioned. csi-provisioner v1.2.2 reports none
        # at the end: it sets CreateProvisionedPVLimiter, so its PVs are saved by
        # sig-storage-lib-external-provisioner's queueStore, which sends no
        # ProvisioningSucceeded (volume_store.go); there its 'Provisioning' stands for it.
        self.success = {"ours": "ProvisioningSucceeded", "theirs": theirs_success}
        self.ours = Process(OURS, [
            os.environ.get("FLEXCSI_HANDOVER_CONTROLLER") or
            os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
            "--kubeconfig", ours_kubeconfig, "--bridge-config", controller_config(),
            "--journal", os.path.join(c.dir, ns + "-journal.db"), "--identity", OURS,
            "--timeout", "60s", *ours_extra], os.path.join(c.logs, "%s-%s.log" % (OURS, ns)))
        self.theirs = Process("csi-provisioner", [
            os.path.join(c.bin, "csi-provisioner"), "--csi-address", slow_socket(),
            "--kubeconfig", c.kubeconfig, "--timeout", "60s", "--feature-gates=Topology=true",
            *theirs_extra], os.path.join(c.logs, "csi-provisioner-%s.log" % ns),
            env=dict(os.environ, NODE_NAME=c.node_name))
        self.count = 0
        self.begun_anew = 0  # test 1: steps begun anew after LeadLostEarly
        self.stats = {}
        self.failures = []

    def stop(self):
        self.theirs.stop(signal.SIGKILL)
        self.ours.stop(signal.SIGKILL)

    def new_claims(self, step, count=CLAIMS_PER_STEP):
        names = ["%s-%d" % (step, i) for i in range(count)]
        apply([claim(self.ns, n, self.ns) for n in names])
        listed = clustertest.CLUSTER.kubectl_json("get", "pvc", "-n", self.ns)["items"]
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in listed}
        return {n: "pvc-" + uids[n] for n in names}

    def wait_in_flight(self, volumes, who, still_leading=None):
        """Until every one of `volumes` (claim -> volume name) is held in the slow driver for
        `who`: its CreateVolume was made and has not been passed on yet. `still_leading`, if
        given, is asked meanwhile: LeadLostEarly when it answers False."""
        def held():
            if still_leading is not None and not still_leading():
                return "lead lost"
            calls = create_volume_calls()
            received = {n for e, n, w in calls if e == "received" and w == who}
            done = {n for e, n, w in calls if e != "received" and w == who}
            if set(volumes.values()) & done:
                raise AssertionError("a CreateVolume was done before the step could begin: "
                                     "the driver's delay is too short for this machine")
            return set(volumes.values()) <= received
        try:
            outcome = wait_for("%d CreateVolume calls of %s in the driver" % (len(volumes), who),
                               held, 60, interval=0.1)
        except AssertionError as e:
            raise AssertionError("%s\ncalls: %s\n%s's log ends:\n%s" % (
                e, create_volume_calls()[-10:], OURS, self.ours.tail())) from None
        if outcome == "lead lost":
            raise LeadLostEarly()

    def stopped(self, proc, timeout=90):
        """Waits for `proc` to exit by itself; its exit code."""
        wait_for("%s to exit" % proc.name, lambda: proc.popen.poll() is not None, timeout,
                 interval=0.1)
        code = proc.popen.returncode
        proc.popen = None
        return code

    def bound(self, volumes):
        # Generous: csi-provisioner backs a failed claim off exponentially (to 5 min), and a
        # machine loaded beyond its cores once took more than 120 s here. What is judged is who
        # provisioned each claim and how often, not how fast.
        try:
            listed = wait_for("%d claims bound" % len(volumes),
                              lambda: clustertest.claims_bound(self.ns, list(volumes)), 300)
        except AssertionError as e:
            raise AssertionError("%s\ncalls: %s\ncsi-provisioner's log ends:\n%s\n%s's log "
                                 "ends:\n%s" % (e, create_volume_calls()[-10:],
                                                 self.theirs.tail(), OURS, self.ours.tail())
                                 ) from None
        return {n: listed[n]["spec"]["volumeName"] for n in volumes}

    def check(self, step, volumes, kind, strict):
        """Each claim of `volumes` has one CreateVolume passed on to the driver, one PV of `kind`
        (flexVolume: flexcsi-controller's, csi: csi-provisioner's) named as the volume, and the
        success event of the component that made it (self.success); `strict`: no event of any
        other component (a provisioner that stopped cleanly never began), else the other's at
        most 'Provisioning' (begun before it was killed or cut off, never finished). What
        differs is kept in self.failures: every round runs, so that a binary without the fix
        shows how often each way of stopping goes wrong."""
        bound = self.bound(volumes)

        def settled():
            """No CreateVolume is held in the driver any more: a second one for a claim that is
            bound already would otherwise pass on unseen after this check."""
            open_calls = {}
            for event, name, who in create_volume_calls():
                key = (name, who)
                open_calls[key] = open_calls.get(key, 0) + (1 if event == "received" else -1)
            return not any(open_calls.values())
        wait_for("the driver's CreateVolume calls to be passed on or dropped", settled, 90,
                 interval=0.2)

        def provisioning_events():
            """Per claim of the namespace: {'ours' | 'theirs': {reasons}}."""
            events = {}
            for e in clustertest.CLUSTER.kubectl_json("get", "events", "-n", self.ns)["items"]:
                # the provisioners' own reasons (the PV controller's ExternalProvisioning aside)
                if (e["involvedObject"].get("kind") != "PersistentVolumeClaim" or
                        e.get("reason") not in ("Provisioning", "ProvisioningSucceeded",
                                                "ProvisioningFailed")):
                    continue
                component = ((e.get("source") or {}).get("component") or
                             e.get("reportingComponent"))
                who = "ours" if component == OURS else "theirs"
                events.setdefault(e["involvedObject"]["name"], {}).setdefault(
                    who, set()).add(e.get("reason"))
            return events

        maker = "ours" if kind == "flexVolume" else "theirs"

        def reported(by):
            return self.success[maker] in by.get(maker, set())

        # A provisioner sends its events on its own time, possibly after the claim is bound:
        # wait (bounded) for every claim's success event, then judge what is there.
        deadline = time.monotonic() + 30
        while True:
            events = provisioning_events()
            if time.monotonic() > deadline or all(reported(events.get(n, {})) for n in volumes):
                break
            time.sleep(0.5)
        pvs = clustertest.pvs_by_name()
        forwarded = {}
        for event, name, who in create_volume_calls():
            if event == "forwarded":
                forwarded.setdefault(name, []).append(who)
        for name, volume in volumes.items():
            by = events.get(name, {})
            allowed = set() if strict else {"Provisioning"}
            others = [reasons for w, reasons in by.items() if w != maker]
            problems = [what for what, wrong in (
                ("bound to %s, not %s" % (bound[name], volume), bound[name] != volume),
                ("%d CreateVolume calls passed on (%s)" % (len(forwarded.get(volume, [])),
                                                           forwarded.get(volume)),
                 len(forwarded.get(volume, [])) != 1),
                ("a PV with %s, not %s" % (sorted(pvs[bound[name]]["spec"]), kind),
                 kind not in pvs[bound[name]]["spec"]),
                ("provisioning events %s" % by,
                 not reported(by) or not all(r <= allowed for r in others))) if wrong]
            for problem in problems:
                self.failures.append("%s, claim %s: %s" % (step, name, problem))
        self.count += len(volumes)

    def timed(self, label, began):
        self.stats.setdefault(label, []).append(time.monotonic() - began)

    def report(self, test):
        steps = {}
        for failure in self.failures:
            print(failure, flush=True)
            step, claim_name = failure.split(":")[0].split(", claim ")
            steps.setdefault(step.split(" ", 2)[-1], set()).add(claim_name)
        print("claims provisioned wrongly, by way of stopping: %s"
              % ({step: len(names) for step, names in steps.items()} or "none"), flush=True)
        for label, times in sorted(self.stats.items()):
            print("%s: n=%d, min %.1f s, median %.1f s, max %.1f s"
                  % (label, len(times), min(times), sorted(times)[len(times) // 2], max(times)),
                  flush=True)
        test.assertEqual(steps, {}, "claims provisioned wrongly, of %d" % self.count)


class LeadLostEarly(Exception):
    """flexcsi-controller lost the lock before its calls for a step's claims reached the driver:
    the step cannot begin (a renewal slower than the 2 s renew deadline, on a busy machine)."""


def storage_class(ns):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": ns}, "provisioner": DRIVER, "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate"}


class HandOverSuite(unittest.TestCase):
    def test_1_leader_stops_its_work_before_the_lock_goes(self):
        skip_unless_csi_provisioner_takes_a_lease(self, "--leader-election-lease-duration")
        ns = "leader"
        election = ["--leader-election", "--leader-election-namespace", ns,
                    "--leader-election-lease-duration", "3s",
                    "--leader-election-renew-deadline", "2s",
                    "--leader-election-retry-period", "0.5s"]
        apply([clustertest.namespace_object(ns), storage_class(ns)])
        p = Provisioners(ns, election, election, partitioned_kubeconfig())
        lock = re.sub("[^a-zA-Z0-9-]", "-", DRIVER)

        def holder():
            lease = clustertest.get("lease", lock, ns)
            return lease["spec"].get("holderIdentity", "") if lease else ""

        def ours_leads():
            """flexcsi-controller leading and csi-provisioner waiting on the Lease."""
            if not p.ours.alive():
                p.ours.start()
            if holder() != OURS:
                began = time.monotonic()
                p.theirs.stop(signal.SIGKILL)  # v3.4.1 never releases: its lease runs out
                wait_for("flexcsi-controller to take the lock", lambda: holder() == OURS, 60,
                         interval=0.2)
                p.timed("flexcsi-controller took the lock after csi-provisioner's kill -9",
                        began)
            if not p.theirs.alive():
                p.theirs.start()

        def claims_in_flight(step):
            """New claims, once flexcsi-controller leads and holds their CreateVolume calls in
            the driver: ({claim: volume}, the time they were all held). Where it loses the lock
            before that, those claims go to csi-provisioner, are checked as after a kill -9,
            and the step begins anew (at most 3 times)."""
            for attempt in range(4):
                ours_leads()
                volumes = p.new_claims(step if attempt == 0 else "%s-again%d" % (step, attempt))
                try:
                    p.wait_in_flight(volumes, "ours",
                                     still_leading=lambda: p.ours.alive() and holder() == OURS)
                    return volumes, time.monotonic()
                except LeadLostEarly:
                    print("%s: flexcsi-controller lost the lock before its calls reached the "
                          "driver; its log ends:\n%s" % (step, p.ours.tail(10)), flush=True)
                    p.begun_anew += 1
                    theirs_take_over(time.monotonic(),
                                     "lock lost early to csi-provisioner leading")
                    p.check("%s lock lost early" % step, volumes, "csi", strict=False)
            self.fail("flexcsi-controller lost the lock 4 times in a row before a step began")

        def theirs_take_over(began, label):
            wait_for("csi-provisioner to take the lock",
                     lambda: holder() not in ("", OURS), 60, interval=0.2)
            p.timed(label, began)

        try:
            for r in range(ROUNDS):
                # a. SIGTERM with claims in flight
                volumes, began = claims_in_flight("term%d" % r)
                p.ours.popen.send_signal(signal.SIGTERM)
                self.assertEqual(p.stopped(p.ours), 0, p.ours.tail())
                p.timed("SIGTERM to exit, claims in flight", began)
                theirs_take_over(began, "SIGTERM to csi-provisioner leading")
                p.check("round %d SIGTERM" % r, volumes, "flexVolume", strict=True)

                # b. kill -9 with claims in flight
                volumes, began = claims_in_flight("kill%d" % r)
                p.ours.stop(signal.SIGKILL)
                theirs_take_over(began, "kill -9 to csi-provisioner leading")
                p.check("round %d kill-9" % r, volumes, "csi", strict=False)

                # c. the API server unreachable for longer than the lease
                volumes, began = claims_in_flight("cut%d" % r)
                PARTITION.cut()
                try:
                    theirs_take_over(began, "partition to csi-provisioner leading")
                    self.assertEqual(p.stopped(p.ours), 1, p.ours.tail())
                    p.timed("partition to flexcsi-controller's exit", began)
                    p.check("round %d partition" % r, volumes, "csi", strict=False)
                finally:
                    PARTITION.restore()
                print("round %d: %d claims so far, %d provisioned wrongly"
                      % (r + 1, p.count, len(p.failures)), flush=True)
            with open(p.ours.log) as f:
                log = f.read()
            print("\nleader hand-over, %d rounds, %d claims (lease 3 s, CreateVolume %d s):"
                  % (ROUNDS, p.count, DELAY), flush=True)
            print("flexcsi-controller log: %d 'waiting for N operation(s)', %d 'lost the lock'"
                  % (log.count("operation(s) in progress to end"), log.count("lost the lock")),
                  flush=True)
            print("steps begun anew, the lock lost before their calls reached the driver: %d"
                  % p.begun_anew, flush=True)
            p.report(self)
        finally:
            p.stop()
            PARTITION.restore()

    def test_2_per_node_instance_finishes_its_claims_before_it_exits(self):
        skip_unless_csi_provisioner_takes_a_lease(self, "--node-deployment")
        c = clustertest.CLUSTER
        ns = "pernode"
        apply([clustertest.namespace_object(ns), storage_class(ns)])
        per_node = ["--node-deployment", "--node-deployment-base-delay", "100ms",
                    "--node-deployment-max-delay", "200ms"]
        p = Provisioners(ns, per_node + ["--node-name", c.node_name], per_node,
                         c.kubeconfig)
        try:
            for r in range(NODE_ROUNDS):
                p.ours.start()
                volumes = p.new_claims("term%d" % r)
                p.wait_in_flight(volumes, "ours")
                began = time.monotonic()
                p.ours.popen.send_signal(signal.SIGTERM)
                self.assertEqual(p.stopped(p.ours), 0, p.ours.tail())
                p.timed("SIGTERM to exit, claims in flight (per node)", began)
                p.theirs.start()
                p.check("round %d per-node-SIGTERM" % r, volumes, "flexVolume", strict=True)
                volumes = p.new_claims("next%d" % r)
                p.check("round %d per-node-csi-provisioner" % r, volumes, "csi", strict=True)
                p.theirs.stop()
            print("\nper-node hand-over, %d rounds, %d claims:" % (NODE_ROUNDS, p.count),
                  flush=True)
            p.report(self)
        finally:
            p.stop()

    def test_3_csi_provisioner_v1_shares_its_endpoints_lock(self):
        """csi-provisioner v1.x (v1.2.2 on 1.14) locks an Endpoints object by default, with a
        fixed 15 s lease, 10 s renew deadline and 5 s retry, and exits at once when it loses it
        (never releasing); flexcsi-controller takes the very same lock with
        --leader-election-lock endpoints."""
        version = clustertest.CLUSTER.version
        if version.csi_provisioner_lock != "Endpoints":
            self.skipTest("Kubernetes %s: its csi-provisioner takes a %s lock (test 1)"
                          % (version, version.csi_provisioner_lock))
        c = clustertest.CLUSTER
        ns = "endpoints"
        apply([clustertest.namespace_object(ns), storage_class(ns)])
        # Our lease and renew deadline are v1.2.2's (it reads only its own, never the record's);
        # a short retry takes the lock back soon after it has run out.
        p = Provisioners(ns, ["--leader-election", "--leader-election-lock", "endpoints",
                              "--leader-election-namespace", ns,
                              "--leader-election-retry-period", "1s",
                              "--worker-threads", str(V1_CLAIMS)],
                         ["--enable-leader-election", "--leader-election-namespace", ns],
                         c.kubeconfig, theirs_success="Provisioning")
        lock = re.sub("[^a-zA-Z0-9-]", "-", DRIVER)

        def holder():
            endpoints = clustertest.get("endpoints", lock, ns)
            record = ((endpoints or {}).get("metadata", {}).get("annotations") or {}).get(
                LEADER_ANNOTATION)
            return json.loads(record).get("holderIdentity", "") if record else ""

        def a_candidate(proc, line):
            """Until `proc`, as last started, has said it campaigns (its log has `line`)."""
            def said():
                with open(proc.log, errors="replace") as f:
                    return line in f.read().rsplit("=== start:", 1)[-1]
            wait_for("%s to campaign for the lock" % proc.name, said, 60, interval=0.2)

        def in_flight(volumes, who):
            """Until the driver holds a CreateVolume of `who` for one of `volumes` and has passed
            none on: the moment to kill it."""
            def held():
                calls = [(e, n) for e, n, w in create_volume_calls()
                         if w == who and n in volumes.values()]
                if any(e != "received" for e, _ in calls):
                    raise AssertionError("a CreateVolume was done before the kill: the "
                                         "driver's delay is too short for this machine")
                return calls
            wait_for("a CreateVolume of %s in the driver" % who, held, 90, interval=0.1)

        def takeover(killed, by, check):
            """New claims; kill -9 of `killed` once the driver holds one of their CreateVolume
            calls (`by`: its caller name); more claims while nobody leads. Those claims, and the
            seconds from the kill until `check()` says the other holds the lock."""
            volumes = p.new_claims("inflight-" + killed.name, V1_TAKEOVER_CLAIMS)
            in_flight(volumes, by)
            began = time.monotonic()
            killed.stop(signal.SIGKILL)
            volumes.update(p.new_claims("leaderless-" + killed.name, V1_TAKEOVER_CLAIMS))
            wait_for("the other provisioner to take the lock", check, 90, interval=0.2)
            return volumes, time.monotonic() - began

        try:
            p.ours.start()
            wait_for("flexcsi-controller to take the lock", lambda: holder() == OURS, 60,
                     interval=0.2)
            p.theirs.start()
            a_candidate(p.theirs, "attempting to acquire leader lease")
            since, began = time.time(), time.monotonic()
            volumes = p.new_claims("ours", V1_CLAIMS)
            p.check("v1 flexcsi-controller leading", volumes, "flexVolume", strict=True)
            p.timed("%d claims created to bound and checked" % V1_CLAIMS, began)
            theirs_meanwhile = create_volume_received("theirs", since)
            self.assertEqual(holder(), OURS)
            self.assertIsNone(clustertest.get("lease", lock, ns), "a Lease beside the Endpoints")

            # flexcsi-controller killed: csi-provisioner takes the Endpoints lock.
            began = time.monotonic()
            volumes, taken = takeover(p.ours, "ours", lambda: holder() not in ("", OURS))
            theirs_id = holder()
            p.check("v1 kill-9 of flexcsi-controller", volumes, "csi", strict=False)
            p.timed("flexcsi-controller's kill -9 step (%d claims)" % len(volumes), began)

            # csi-provisioner killed: flexcsi-controller, waiting meanwhile, takes it back.
            since = time.time()
            p.ours.start()
            a_candidate(p.ours, "leader election: Endpoints %s/%s" % (ns, lock))
            began = time.monotonic()
            volumes, taken_back = takeover(p.theirs, "theirs", lambda: holder() == OURS)
            ours_meanwhile = create_volume_received("ours", since, time.time() - taken_back)
            p.check("v1 kill-9 of csi-provisioner", volumes, "flexVolume", strict=False)
            p.timed("csi-provisioner's kill -9 step (%d claims)" % len(volumes), began)
            self.assertEqual(holder(), OURS)

            pvs = [pv for pv in clustertest.pvs_by_name().values()
                   if pv["spec"].get("claimRef", {}).get("namespace") == ns]
            calls = [n for e, n, _ in create_volume_calls() if e == "forwarded"]
            print("\ncsi-provisioner v1.2.2 and flexcsi-controller on one Endpoints lock (lease "
                  "15 s, CreateVolume %d s): %d claims, %d PVs (%d FlexVolume, %d CSI), %d "
                  "CreateVolume calls passed to the driver for them; csi-provisioner (%s) led "
                  "%.1f s after flexcsi-controller's kill -9, flexcsi-controller %.1f s after "
                  "csi-provisioner's; CreateVolume calls of the one not leading: %d and %d"
                  % (DELAY, p.count, len(pvs), sum("flexVolume" in pv["spec"] for pv in pvs),
                     sum("csi" in pv["spec"] for pv in pvs),
                     len([n for n in calls if n in {pv["metadata"]["name"] for pv in pvs}]),
                     theirs_id, taken, taken_back, len(theirs_meanwhile),
                     len(ours_meanwhile)), flush=True)
            self.assertEqual(theirs_meanwhile, [], "csi-provisioner called the driver while "
                             "flexcsi-controller held the lock")
            self.assertEqual(ours_meanwhile, [], "flexcsi-controller called the driver while "
                             "csi-provisioner held the lock")
            self.assertEqual(len(pvs), p.count)
            p.report(self)
            # Neither takes the lock before 15 s have passed since it last saw it renewed, which
            # is at most one retry before the kill (csi-provisioner's 5 s, ours 1 s; it renews
            # every 5 s): 10 s at least.
            self.assertGreaterEqual(taken, 9.5)
            self.assertGreaterEqual(taken_back, 9.5)
            self.assertLess(taken, 60)
            self.assertLess(taken_back, 60)
        finally:
            p.stop()


if __name__ == "__main__":
    clustertest.main()
