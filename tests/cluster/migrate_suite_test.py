#!/usr/bin/env python3
"""`flexcsi migrate` on a real Kubernetes v1.24, with kubelet's own CSI plugin on the far side:
csi-loopback registered with kubelet by csi-node-driver-registrar, attached by csi-attacher.
Also on v1.14.6 (cluster_migrate_suite_v1_14), where users leave FlexVolume, with that era's
sidecars (registrar v1.1.0 chrooted onto kubelet's plugins_registry, csi-attacher v1.1.1,
csi-provisioner v1.2.2; kubelet_csi.py), every test as on v1.24.

0. a Deployment whose claim, StorageClass and provisioning all move: flexcsi-controller
   provisions its FlexVolume PV from a default StorageClass; `plan --leftovers` lists it and an
   in-tree class (exit 3); the PV moves, provisioning is handed over (flexcsi-controller stopped,
   the real csi-provisioner started), both classes are replaced by their CSI twins, killed with
   -9 between the first class's delete and create: a claim created then stays Pending, and after
   the resume gets exactly one CSI PV, as does a new claim; data intact; `--leftovers` exits 0;
   `rollback --all` restores the PV and both classes field for field, and names the two CSI PVs
   csi-provisioner made meanwhile, which stay CSI
1. a Deployment writing through a FlexVolume PV moves to CSI with `--scale-down`, killed with
   -9 after a step on the way and resumed; its pod comes back on the CSI PV through kubelet's
   CSI plugin with the data's checksum unchanged
2. idle FlexVolume and in-tree (awsElasticBlockStore) PVs, one killed with -9 after every step
   and after every step's writes (`<step>`, `<step>+`), then resumed: all moved, claims kept
4. rollback of test 1's PV while the Deployment still runs on it (csi-attacher's VolumeAttachment
   and external-attacher finalizer in place): refused naming the pod, nothing written; then with
   `--scale-down` the pod comes back on the FlexVolume PV with the checksum of test 1
5. a StatefulSet (3 replicas x 2 volumeClaimTemplates claims, an HPA on it) moves under one
   scale-down with `apply --all --parallel`, killed with -9 and resumed: scaled to 0 once and
   back once (audit log), pods back with their data; then `rollback --all --scale-down` takes
   the six back to their FlexVolume PVs under one scale-down too (audit log), data unchanged
6. 12 idle PVs with `--parallel 6`, killed with -9 while several move, resumed: all moved
7. 3 idle PVs with a small `--qps`/`--burst`: in the audit log no window of flexcsi's requests
   holds more than burst + qps x (its length + 1 s) (client-go's token bucket), and the limit
   did hold requests back
9. last, over everything above: the real API server's audit log holds flexcsi to the stand-in's
   rules: no claim deleted, none written but the claim-sync annotation, no secret read, every PV delete with a uid precondition
   on a Retain PV
"""
import concurrent.futures
import datetime
import json
import os
import random
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, busybox_pod, exec_in, get, wait_for  # noqa: E402
from cluster import Process  # noqa: E402
import kubelet_csi  # noqa: E402
import migrate_run  # noqa: E402
import namespace  # noqa: E402
from node_plugins import NodePlugins, csi_driver, flex_driver  # noqa: E402

SHAPE = "default"
DRIVER = csi_driver(SHAPE)
STEPS = ["checked", "scaling-down", "retaining", "releasing", "deleting-old", "creating-new",
         "binding", "restoring-policy", "restoring-replicas", "done"]
PLUGINS = None
SIDECARS = []
CONTROLLER = None
RULES = None
ORDERS_CHECKSUM = None  # the payload's sha256 as test 1 first read it
FLEXCSI_WRITES = ("create", "update", "patch", "delete", "deletecollection")


def setUpModule():
    global PLUGINS, RULES
    # A moved claim binds again at the PV controller's next periodic sync: 5 s in the test
    # cluster (cluster.py), 15 s by default (the benchmark, bench/migrate_cluster_bench.py).
    c = clustertest.start_cluster()
    print("Kubernetes %s, sidecars %s" % (c.version, kubelet_csi.sidecar_versions(c)), flush=True)
    PLUGINS = NodePlugins(c, shapes=[SHAPE])
    PLUGINS.start()
    socket = PLUGINS.csi_socket(SHAPE)
    # kubelet's CSI plugin finds the driver through its plugin registration socket
    SIDECARS.extend([kubelet_csi.registrar(c, socket), kubelet_csi.attacher(c, socket)])
    for p in SIDECARS:
        p.start()
    apply(kubelet_csi.csi_driver_objects(c, DRIVER, "ebs.csi.aws.com"))
    wait_for("kubelet to register csi-loopback (CSINode)",
             lambda: kubelet_csi.registered(c.node_name, DRIVER), 60)
    RULES = migrate_run.write_rules(os.path.join(c.dir, "rules.yaml"), flex_driver(SHAPE), DRIVER)


def tearDownModule():
    clustertest.stop_cluster(CONTROLLER, *SIDECARS, PLUGINS)


def migrate(*args, crash_after=None, journal, timeout=300):
    return migrate_run.migrate(PLUGINS.flexcsi_bin, RULES, clustertest.CLUSTER.kubeconfig, *args,
                               crash_after=crash_after, journal=journal, timeout=timeout)


def leftovers(output="json"):
    """`flexcsi migrate plan --leftovers`: (exit code, items), or (exit code, table)."""
    done = subprocess.run(
        [PLUGINS.flexcsi_bin, "migrate", "plan", "--leftovers", "--rules", RULES, "-o", output,
         "--kubeconfig", clustertest.CLUSTER.kubeconfig],
        capture_output=True, text=True, timeout=120)
    if output != "json" or not done.stdout.strip():
        return done.returncode, done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)["items"]


# What a StorageClass swap must keep (and rollback restore) exactly.
CLASS_FIELDS = ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode",
                "allowedTopologies", "mountOptions", "allowVolumeExpansion")


def class_fields(sc):
    md = sc["metadata"]
    return {"labels": md.get("labels"), "annotations": md.get("annotations"),
            **{f: sc.get(f) for f in CLASS_FIELDS}}


def pvs_of_claim(ns, name):
    return [pv for pv in clustertest.CLUSTER.kubectl_json("get", "pv")["items"]
            if (pv["spec"].get("claimRef") or {}).get("namespace") == ns
            and pv["spec"]["claimRef"].get("name") == name]


def flex_pv(name, volume_id, claim_ns, reclaim="Retain"):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "320Mi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": reclaim, "storageClassName": "",
                     "claimRef": {"namespace": claim_ns, "name": name},
                     "flexVolume": {"driver": flex_driver(SHAPE), "fsType": "xfs",
                                    "options": {"volumeID": volume_id}}}}


def audit_seconds(stamp):
    """An audit event's RFC 3339 time (microseconds, UTC) as seconds."""
    return datetime.datetime.strptime(stamp[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def bound_claim(ns, name):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "volumeName": name, "resources": {"requests": {"storage": "320Mi"}}}}


def claim_bound(ns, name):
    claim = get("pvc", name, ns)
    return claim and claim.get("status", {}).get("phase") == "Bound"


def idle_bound_flex_claims(ns, prefix, count):
    """`count` claims in a new namespace `ns`, each bound to its own FlexVolume PV (reclaim
    Delete) that no pod uses; returns them, {name: claim}, once all are bound."""
    names = ["%s-%d" % (prefix, i) for i in range(count)]
    objects = [clustertest.namespace_object(ns)]
    for n in names:
        objects += [flex_pv(n, "%s-volume-%s" % (prefix, n), ns, reclaim="Delete"),
                    bound_claim(ns, n)]
    apply(objects)
    listed = wait_for("every claim to bind", lambda: clustertest.claims_bound(ns, names), 60)
    return {n: listed[n] for n in names}


def payload_deployment(ns, name, size):
    """A Deployment of one pod that writes `size` random bytes to /data/payload on its claim
    `name` once (a later pod finds the file and keeps it), then sleeps."""
    pod = busybox_pod(ns, name, [{"name": "data", "persistentVolumeClaim": {"claimName": name}}],
                      [{"name": "data", "mountPath": "/data"}],
                      command="test -f /data/payload || head -c %d /dev/urandom "
                              "> /data/payload; sleep 3600" % size)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]}}}


def running_pod(ns, selector):
    pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", ns, "-l", selector)["items"]
    ready = [p for p in pods if not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in p.get("status", {}).get("conditions", []))]
    return ready[0]["metadata"]["name"] if ready else None


class MigrateSuite(unittest.TestCase):
    def test_0_claim_storage_class_and_provisioning_move_to_csi(self):
        global CONTROLLER
        c = clustertest.CLUSTER
        ns, name, flex_class, ebs_class = "catalog", "shelf", "loop-fast", "ebs-gp2"
        journal = os.path.join(PLUGINS.dir, "journal-classes")
        topology = [{"matchLabelExpressions": [{"key": "topology.loopback.csi.flexcsi.io/node",
                                                "values": [c.node_name]}]}]
        classes = [
            # served by flexcsi-controller (provisioner: the CSI driver name, its default)
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": flex_class, "labels": {"tier": "fast"}, "annotations": {
                 "storageclass.kubernetes.io/is-default-class": "true",
                 "storageclass.beta.kubernetes.io/is-default-class": "true", "team": "shop"}},
             "provisioner": DRIVER, "parameters": {"csi.storage.k8s.io/fstype": "xfs"},
             "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate",
             "allowVolumeExpansion": True, "allowedTopologies": topology},
            # in-tree: its parameters and zone key go through the translator's class rules
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": ebs_class, "labels": {"cloud": "aws"}},
             "provisioner": "kubernetes.io/aws-ebs",
             "parameters": {"type": "gp2", "fsType": "ext4"},
             "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
             "mountOptions": ["noatime"], "allowVolumeExpansion": False,
             "allowedTopologies": [{"matchLabelExpressions": [
                 {"key": "topology.kubernetes.io/zone", "values": ["eu-west-1a"]}]}]}]
        apply([clustertest.namespace_object(ns)] + classes)
        originals = {sc["metadata"]["name"]: class_fields(get("storageclass", sc["metadata"]["name"]))
                     for sc in classes}
        CONTROLLER = Process("flexcsi-controller", [
            os.path.join(clustertest.build_dir(), "controller", "flexcsi-controller"),
            "--kubeconfig", c.kubeconfig, "--bridge-config", PLUGINS.config,
            "--journal", os.path.join(PLUGINS.dir, "controller-journal.db")],
            os.path.join(c.logs, "flexcsi-controller.log"))
        CONTROLLER.start()

        def claim(claim_name):  # no storageClassName: the default class
            return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim_name, "namespace": ns},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "320Mi"}}}}
        apply(claim(name))
        wait_for("flexcsi-controller to provision the claim", lambda: claim_bound(ns, name), 120)
        pv_name = get("pvc", name, ns)["spec"]["volumeName"]
        self.assertIn("flexVolume", get("pv", pv_name)["spec"])
        apply(payload_deployment(ns, name, 4 << 20))
        first = wait_for("the Deployment's pod on FlexVolume", lambda: running_pod(ns, "app=" + name),
                         120)
        checksum = exec_in(ns, first, "sha256sum", "/data/payload").split()[0]

        # kubelet reports the attached FlexVolume in the node's status at its next update
        items = wait_for("--leftovers to see the node use the FlexVolume", lambda: next(
            (items for code, items in [leftovers()] if code == 3
             and ("Node", c.node_name) in {(i["kind"], i["name"]) for i in items}), None), 60)
        print("\n" + leftovers("table")[1], flush=True)
        kinds = {(i["kind"], i["name"]) for i in items}
        for expected in (("PersistentVolume", pv_name), ("StorageClass", flex_class),
                         ("StorageClass", ebs_class)):
            self.assertIn(expected, kinds, items)
        plan = json.loads(subprocess.run(
            [PLUGINS.flexcsi_bin, "migrate", "plan", "--rules", RULES, "-o", "json",
             "--kubeconfig", c.kubeconfig], capture_output=True, text=True).stdout)
        twins = {p["name"]: p["twin"] for p in plan["storageClasses"]}
        self.assertEqual(twins[ebs_class]["provisioner"], "ebs.csi.aws.com")
        self.assertEqual(twins[ebs_class]["allowedTopologies"][0]["matchLabelExpressions"][0]["key"],
                         "topology.ebs.csi.aws.com/zone")
        self.assertEqual(twins[flex_class]["provisioner"], DRIVER)

        moved = migrate("apply", "--pv", pv_name, "--scale-down", journal=journal)
        self.assertEqual(moved.returncode, 0, moved.stdout + moved.stderr)
        # flexcsi-controller's finalizer stays behind: csi-provisioner v1.2.2 would never remove
        # it from the CSI PV (rollback waited on it for good on 1.14)
        self.assertNotIn("external-provisioner.volume.kubernetes.io/finalizer",
                         get("pv", pv_name)["metadata"].get("finalizers", []))
        # Hand provisioning over, in the documented order.
        CONTROLLER.stop()
        provisioner = Process("csi-provisioner", [
            os.path.join(c.bin, "csi-provisioner"), "--csi-address", PLUGINS.csi_socket(SHAPE),
            "--kubeconfig", c.kubeconfig, *c.version.csi_provisioner_without_leader_election,
            "--timeout", "30s", "--feature-gates=Topology=true"],
            os.path.join(c.logs, "csi-provisioner.log"))
        provisioner.start()
        SIDECARS.append(provisioner)

        crashed = migrate("apply", "--storage-class", flex_class, "--storage-class", ebs_class,
                          crash_after="sc-deleting+", journal=journal)
        self.assertEqual(crashed.returncode, -9, crashed.stdout + crashed.stderr)
        self.assertIsNone(get("storageclass", flex_class), "killed after the delete")
        apply(dict(claim("during"), spec=dict(claim("during")["spec"],
                                              storageClassName=flex_class)))
        began = time.monotonic()
        while time.monotonic() - began < 12:  # two claim syncs of the PV controller (5 s)
            self.assertEqual(pvs_of_claim(ns, "during"), [])
            self.assertEqual(get("pvc", "during", ns)["status"].get("phase"), "Pending")
            time.sleep(1)
        failed = [e["message"] for e in c.kubectl_json(
            "get", "events", "-n", ns, "--field-selector",
            "involvedObject.name=during,reason=ProvisioningFailed")["items"]
            if e.get("source", {}).get("component") == "persistentvolume-controller"]
        self.assertTrue(any("not found" in m for m in failed), failed)
        print("claim created while %s was absent: Pending, %s" % (flex_class, failed[0]),
              flush=True)
        resumed = migrate("apply", "--all", journal=journal)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
        for sc_name, original in originals.items():
            twin = class_fields(get("storageclass", sc_name))
            for kept in ("labels", "reclaimPolicy", "volumeBindingMode", "mountOptions",
                         "allowVolumeExpansion"):
                self.assertEqual(twin[kept], original[kept], "%s: %s" % (sc_name, kept))
            self.assertEqual(twin["annotations"]["flexcsi.io/migrated-from-provisioner"],
                             original["provisioner"])
        self.assertEqual(get("storageclass", ebs_class)["provisioner"], "ebs.csi.aws.com")
        self.assertEqual(get("storageclass", flex_class)["metadata"]["annotations"][
            "storageclass.kubernetes.io/is-default-class"], "true")

        apply(claim("after"))
        for claim_name in ("during", "after"):
            wait_for("claim %s provisioned by csi-provisioner" % claim_name,
                     lambda: claim_bound(ns, claim_name), 120)
        began = time.monotonic()
        while time.monotonic() - began < 10:  # bound; and no second PV comes meanwhile
            self.assertEqual([len(pvs_of_claim(ns, n)) for n in ("during", "after")], [1, 1])
            time.sleep(1)
        for claim_name in ("during", "after"):
            pvs = pvs_of_claim(ns, claim_name)
            self.assertEqual(len(pvs), 1, pvs)
            self.assertEqual(pvs[0]["spec"]["csi"]["driver"], DRIVER)
            self.assertEqual(pvs[0]["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
                             DRIVER)
        after_pod = wait_for("the Deployment's pod on CSI", lambda: running_pod(ns, "app=" + name),
                             180)
        self.assertIn("csi", get("pv", pv_name)["spec"])
        self.assertEqual(exec_in(ns, after_pod, "sha256sum", "/data/payload").split()[0], checksum)
        wait_for("--leftovers to find nothing", lambda: leftovers()[0] == 0, 90)
        print(leftovers("table")[1], flush=True)

        rolled = migrate("rollback", "--all", "--scale-down", journal=journal)
        self.assertEqual(rolled.returncode, 0, rolled.stdout + rolled.stderr)
        for sc_name, original in originals.items():
            self.assertEqual(class_fields(get("storageclass", sc_name)), original, sc_name)
        # Going back (docs/migration.md): the claims csi-provisioner provisioned from the twin
        # keep their CSI PVs, and rollback names them (none of the in-tree class: its CSI
        # driver's own provisioner keeps serving them).
        meanwhile = [pvs_of_claim(ns, n)[0] for n in ("during", "after")]
        for pv in meanwhile:
            self.assertEqual(pv["spec"]["csi"]["driver"], DRIVER, pv["metadata"]["name"])
            self.assertIn(pv["metadata"]["name"], rolled.stderr)
        self.assertIn("note: 2 CSI PVs of StorageClass %s were provisioned by external-provisioner"
                      % flex_class, rolled.stderr)
        self.assertNotIn("StorageClass %s was" % ebs_class, rolled.stderr)
        self.assertNotIn("StorageClass %s were" % ebs_class, rolled.stderr)
        self.assertIn("flexVolume", get("pv", pv_name)["spec"])
        back = wait_for("the Deployment's pod on FlexVolume again",
                        lambda: running_pod(ns, "app=" + name), 180)
        self.assertEqual(exec_in(ns, back, "sha256sum", "/data/payload").split()[0], checksum)
        code, items = leftovers()
        self.assertEqual(code, 3, items)
        self.assertTrue({("PersistentVolume", pv_name), ("StorageClass", flex_class),
                         ("StorageClass", ebs_class)} <= {(i["kind"], i["name"]) for i in items},
                        items)
        # The classes go (a default class would catch later tests' claims); csi-provisioner too.
        provisioner.stop()
        c.kubectl("delete", "storageclass", flex_class, ebs_class)
    def test_1_deployment_moves_to_csi_and_runs_through_kubelets_csi_plugin(self):
        ns, name = "shop", "orders"
        volume_id = PLUGINS.create_volume(SHAPE, name)
        apply([clustertest.namespace_object(ns), flex_pv(name, volume_id, ns),
               bound_claim(ns, name)])
        wait_for("the claim to bind", lambda: claim_bound(ns, name))
        apply(payload_deployment(ns, name, 16 << 20))
        first = wait_for("the Deployment's pod", lambda: running_pod(ns, "app=" + name), 120)
        before = exec_in(ns, first, "sha256sum", "/data/payload").split()[0]
        global ORDERS_CHECKSUM
        ORDERS_CHECKSUM = before

        journal = os.path.join(PLUGINS.dir, "journal-orders")
        step = random.Random(os.environ.get("FLEXCSI_FAULT_SEED", "1")).choice(STEPS[1:-1])
        crashed = migrate("apply", "--pv", name, "--scale-down", crash_after=step,
                          journal=journal)
        self.assertEqual(crashed.returncode, -9, "killed after %s?\n%s%s"
                         % (step, crashed.stdout, crashed.stderr))
        resumed = migrate("apply", "--pv", name, "--scale-down", journal=journal)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)

        pv = get("pv", name)
        self.assertEqual(pv["spec"]["csi"]["driver"], DRIVER)
        self.assertEqual(pv["spec"]["csi"]["volumeHandle"], volume_id)
        after_pod = wait_for("the Deployment's pod on the CSI PV",
                             lambda: running_pod(ns, "app=" + name), 180)
        self.assertEqual(exec_in(ns, after_pod, "sha256sum", "/data/payload").split()[0], before)
        attachments = [va for va in clustertest.CLUSTER.kubectl_json(
            "get", "volumeattachments")["items"]
            if va["spec"]["source"].get("persistentVolumeName") == name]
        self.assertTrue(attachments and attachments[0].get("status", {}).get("attached"),
                        "csi-attacher did not attach the CSI PV: %s" % attachments)
        csi_mounts = [m for m in namespace.mount_points()
                      if "kubernetes.io~csi/%s/mount" % name in m]
        self.assertTrue(csi_mounts, "the pod's volume is not mounted by kubelet's CSI plugin")

    def test_2_killed_after_every_step_and_resumed(self):
        ns = "idle"
        points = [s + suffix for s in STEPS for suffix in ("", "+")]
        objects = [clustertest.namespace_object(ns)]
        for i, _ in enumerate(points):
            objects += [flex_pv("idle-%d" % i, "idle-volume-%d" % i, ns), bound_claim(ns, "idle-%d" % i)]
        for zone in ("a", "b"):
            objects += [{"apiVersion": "v1", "kind": "PersistentVolume",
                         "metadata": {"name": "ebs-" + zone},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "persistentVolumeReclaimPolicy": "Delete",
                                  "storageClassName": "",
                                  "claimRef": {"namespace": ns, "name": "ebs-" + zone},
                                  "awsElasticBlockStore": {"volumeID":
                                                           "aws://eu-west-1%s/vol-0%s" % (zone, zone),
                                                           "fsType": "ext4"}}},
                        dict(bound_claim(ns, "ebs-" + zone), spec={
                            "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                            "volumeName": "ebs-" + zone,
                            "resources": {"requests": {"storage": "1Gi"}}})]
        apply(objects)
        names = ["idle-%d" % i for i in range(len(points))] + ["ebs-a", "ebs-b"]
        listed = wait_for("every idle claim to bind", lambda: clustertest.claims_bound(ns, names),
                          120)
        uids = {n: listed[n]["metadata"]["uid"] for n in names}

        def crash_then_resume(i_point):
            i, point = i_point
            journal = os.path.join(PLUGINS.dir, "journal-idle-%d" % i)
            first = migrate("apply", "--pv", "idle-%d" % i, crash_after=point, journal=journal)
            second = migrate("apply", "--pv", "idle-%d" % i, journal=journal)
            return point, first.returncode, second.returncode, second.stdout + second.stderr

        # All at once: each waits mostly on the PV controller's periodic claim sync, not on us.
        with concurrent.futures.ThreadPoolExecutor(len(points)) as pool:
            results = list(pool.map(crash_then_resume, enumerate(points)))
        in_tree = migrate("apply", "--pv", "ebs-a", "--pv", "ebs-b",
                          journal=os.path.join(PLUGINS.dir, "journal-ebs"))
        self.assertEqual(in_tree.returncode, 0, in_tree.stdout + in_tree.stderr)
        crashed = [p for p, first, _, _ in results if first == -9]
        print("\nkilled with -9 after: %s" % crashed, flush=True)
        for point, first, second, out in results:
            self.assertEqual(second, 0, "resume after %s: %s" % (point, out))
        self.assertGreaterEqual(len(crashed), len(points) - 2, results)
        listed = wait_for("every claim bound to its CSI PV",
                          lambda: clustertest.claims_bound(ns, names), 60)
        volumes = clustertest.pvs_by_name()
        for n in names:
            pv = volumes[n]
            self.assertIn("csi", pv["spec"], n)
            self.assertEqual(listed[n]["metadata"]["uid"], uids[n], "claim %s was re-created" % n)
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uids[n])
        self.assertEqual(get("pv", "ebs-a")["spec"]["persistentVolumeReclaimPolicy"], "Delete")
        self.assertEqual(get("pv", "ebs-a")["spec"]["csi"]["driver"], "ebs.csi.aws.com")

    def test_5_a_statefulset_moves_under_one_scale_down(self):
        """3 replicas x 2 volumeClaimTemplates claims on FlexVolume PVs, an autoscaling/v2 HPA
        (v2beta2 before 1.23; minReplicas 3) on the StatefulSet: one `apply --all --scale-down`, killed with -9 at a
        point chosen by FLEXCSI_FAULT_SEED and resumed, scales it to 0 once and back to 3 once
        (the API server's audit log, bodies included), and the HPA never scales it up meanwhile
        (its controller disables itself while the target is at 0)."""
        ns, name, replicas = "stateful", "web", 3
        claims = ["%s-%s-%d" % (t, name, i) for i in range(replicas) for t in ("data", "logs")]
        objects = [clustertest.namespace_object(ns)]
        for claim in claims:
            objects += [flex_pv(claim, PLUGINS.create_volume(SHAPE, claim), ns),
                        bound_claim(ns, claim)]
        apply(objects)
        listed = wait_for("the claims to bind", lambda: clustertest.claims_bound(ns, claims), 60)
        uids = {c: listed[c]["metadata"]["uid"] for c in claims}
        template = busybox_pod(ns, name, [], [{"name": "data", "mountPath": "/data"},
                                              {"name": "logs", "mountPath": "/logs"}],
                               command="for d in data logs; do test -f /$d/payload || "
                                       "head -c 1048576 /dev/urandom > /$d/payload; done; "
                                       "sleep 3600")
        claim_template = lambda t: {"metadata": {"name": t}, "spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "resources": {"requests": {"storage": "320Mi"}}}}
        apply([{"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": replicas, "serviceName": name,
                         "podManagementPolicy": "Parallel",
                         "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}},
                                      "spec": template["spec"]},
                         "volumeClaimTemplates": [claim_template("data"),
                                                  claim_template("logs")]}},
               {"apiVersion": clustertest.CLUSTER.version.hpa_api_version,
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                            "name": name},
                         "minReplicas": replicas, "maxReplicas": replicas + 2,
                         "metrics": [{"type": "Resource", "resource": {
                             "name": "cpu", "target": {"type": "Utilization",
                                                       "averageUtilization": 80}}}]}}])
        pods = ["%s-%d" % (name, i) for i in range(replicas)]
        wait_for("the StatefulSet's pods", lambda: all(
            running_pod(ns, "statefulset.kubernetes.io/pod-name=" + p) for p in pods), 120)
        before = {(p, d): exec_in(ns, p, "sha256sum", "/%s/payload" % d).split()[0]
                  for p in pods for d in ("data", "logs")}
        seen = len(clustertest.CLUSTER.audit_events())

        journal = os.path.join(PLUGINS.dir, "journal-stateful")
        point = random.Random(os.environ.get("FLEXCSI_FAULT_SEED", "1")).choice(
            ["group-scaling-down+", "group-moving", "releasing", "binding", "restoring-replicas+",
             "group-restoring-replicas"])
        started = time.monotonic()
        crashed = migrate("apply", "--all", "-n", ns, "--scale-down", "--parallel", "6",
                          crash_after=point, journal=journal)
        self.assertEqual(crashed.returncode, -9, "killed after %s?\n%s%s"
                         % (point, crashed.stdout, crashed.stderr))
        resumed = migrate("apply", "--all", "-n", ns, "--scale-down", "--parallel", "6",
                          journal=journal)
        print("\nStatefulSet, 6 PVs: killed after %s, resumed; %.1f s in all"
              % (point, time.monotonic() - started), flush=True)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
        for claim in claims:
            pv = get("pv", claim)
            self.assertEqual(pv["spec"]["csi"]["driver"], DRIVER, claim)
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uids[claim], claim)
            self.assertEqual(get("pvc", claim, ns)["metadata"]["uid"], uids[claim])
        self.assertEqual(get("statefulset", name, ns)["spec"]["replicas"], replicas)

        self.assert_scaled_once(seen, replicas, "apply")
        self.assert_pods_back_with(ns, pods, before, "the CSI PVs")

        # Back again, the six under one scale-down as well.
        seen = len(clustertest.CLUSTER.audit_events())
        started = time.monotonic()
        rolled = migrate("rollback", "--all", "--scale-down", "--parallel", "6", journal=journal)
        print("StatefulSet, 6 PVs: rollback --all --scale-down in %.1f s"
              % (time.monotonic() - started), flush=True)
        self.assertEqual(rolled.returncode, 0, rolled.stdout + rolled.stderr)
        for claim in claims:
            pv = get("pv", claim)
            self.assertIn("flexVolume", pv["spec"], claim)
            self.assertNotIn("csi", pv["spec"], claim)
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uids[claim], claim)
            self.assertTrue(claim_bound(ns, claim), claim)
            self.assertEqual(get("pvc", claim, ns)["spec"]["volumeName"], claim)
        self.assertEqual(get("statefulset", name, ns)["spec"]["replicas"], replicas)
        self.assert_scaled_once(seen, replicas, "rollback")
        self.assert_pods_back_with(ns, pods, before, "the FlexVolume PVs")

    def assert_scaled_once(self, seen, replicas, what):
        """The StatefulSet's /scale writes since audit event `seen`: flexcsi's to 0 and back."""
        # 1.14 records no body of a /scale update (requestObject null); its answer, the Scale
        # as written, carries the same replicas.
        events = [dict(e, requestObject=e.get("requestObject") or e.get("responseObject"))
                  for e in clustertest.CLUSTER.audit_events()[seen:]]
        written = migrate_run.scale_writes(events, "statefulsets")
        print("%s: StatefulSet scale writes %s" % (what, written), flush=True)
        self.assertEqual(written, [("flexcsi", 0), ("flexcsi", replicas)],
                         "%s: the StatefulSet was not scaled to 0 once and back once by flexcsi "
                         "alone" % what)

    def assert_pods_back_with(self, ns, pods, checksums, where):
        for p in pods:
            wait_for("pod %s back on %s" % (p, where),
                     lambda: running_pod(ns, "statefulset.kubernetes.io/pod-name=" + p), 180)
            for d in ("data", "logs"):
                self.assertEqual(exec_in(ns, p, "sha256sum", "/%s/payload" % d).split()[0],
                                 checksums[(p, d)], "%s:/%s" % (p, d))

    def test_6_parallel_apply_killed_mid_way_resumes_every_pv(self):
        ns, count = "parallel", 12
        claims = idle_bound_flex_claims(ns, "par", count)
        names = list(claims)
        uids = {n: claim["metadata"]["uid"] for n, claim in claims.items()}
        journal = os.path.join(PLUGINS.dir, "journal-parallel")
        started = time.monotonic()
        # The first of the 6 workers to reach `binding` kills the run: the others are half-way.
        crashed = migrate("apply", "--all", "-n", ns, "--parallel", "6", crash_after="binding",
                          journal=journal)
        self.assertEqual(crashed.returncode, -9, crashed.stdout + crashed.stderr)
        status = subprocess.run([PLUGINS.flexcsi_bin, "migrate", "status", "--journal", journal,
                                 "-o", "json"], capture_output=True, text=True, check=True)
        rows = json.loads(status.stdout)["items"]
        in_progress = [r for r in rows if r["state"] == "in-progress"]
        print("\nkilled after binding with %d PVs journaled, %d in progress: %s"
              % (len(rows), len(in_progress), sorted(r["step"] for r in in_progress)),
              flush=True)
        self.assertGreater(len(in_progress), 1, "no PVs were moving at once: %s" % rows)
        resumed = migrate("apply", "--all", "-n", ns, "--parallel", "6", journal=journal)
        print("12 idle PVs, --parallel 6, killed and resumed: %.1f s"
              % (time.monotonic() - started), flush=True)
        self.assertEqual(resumed.returncode, 0, resumed.stdout + resumed.stderr)
        wait_for("every claim bound to its CSI PV", lambda: clustertest.claims_bound(ns, names),
                 60)
        volumes = clustertest.pvs_by_name()
        for n in names:
            pv = volumes[n]
            self.assertEqual(pv["spec"]["csi"]["driver"], DRIVER, n)
            self.assertEqual(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete", n)
            self.assertEqual(pv["spec"]["claimRef"]["uid"], uids[n], n)

    def test_7_a_small_qps_bounds_flexcsis_request_rate_in_the_audit_log(self):
        ns, count, qps, burst = "limited", 3, 10, 10
        names = list(idle_bound_flex_claims(ns, "lim", count))
        seen = len(clustertest.CLUSTER.audit_events())
        started = time.monotonic()
        moved = migrate("apply", "--all", "-n", ns, "--parallel", "3", "--qps", str(qps),
                        "--burst", str(burst), journal=os.path.join(PLUGINS.dir, "journal-lim"))
        elapsed = time.monotonic() - started
        self.assertEqual(moved.returncode, 0, moved.stdout + moved.stderr)
        for n in names:
            self.assertEqual(get("pv", n)["spec"]["csi"]["driver"], DRIVER, n)
        stamps = sorted(audit_seconds(e["requestReceivedTimestamp"])
                        for e in clustertest.CLUSTER.audit_events()[seen:]
                        if e.get("userAgent", "").startswith("flexcsi"))
        # The server stamps a request when it arrives, a little after the client let it go, and
        # the first requests also wait for their TLS handshakes: requests let go over a little
        # more than a window may arrive within it. Up to a second of such delay is allowed for
        # (+ qps); without the limit the run sends far more (its lists and watches at the start, then
        # about 10 requests a PV, bench/README.md).
        worst = {}
        for window in (0.5, 1, 2, 5, 10, 30):
            most, i = 0, 0
            for j, t in enumerate(stamps):
                while t - stamps[i] > window:
                    i += 1
                most = max(most, j - i + 1)
            worst[window] = most
            self.assertLessEqual(most, burst + qps * (window + 1),
                                 "%d requests within %.1f s" % (most, window))
        held = re.search(r"held (\d+) of them back", moved.stderr)
        print("\n%d PVs with --qps %d --burst %d: %d requests in %.1f s (%.1f/s), the most in a "
              "window: %s; %s" % (count, qps, burst, len(stamps), elapsed,
                                  len(stamps) / elapsed, worst,
                                  held.group(0) if held else moved.stderr[-300:]), flush=True)
        self.assertTrue(held and int(held.group(1)) > 0,
                        "the limit held nothing back: " + moved.stderr[-500:])

    def test_9_the_real_audit_log_keeps_the_stand_ins_rules(self):
        # flexcsi migrate's own requests (flexcsi-controller, run by test 0, has its own agent)
        events = [e for e in clustertest.CLUSTER.audit_events()
                  if e.get("userAgent", "").startswith("flexcsi")
                  and not e.get("userAgent", "").startswith("flexcsi-controller")]
        self.assertTrue(events, "no request of flexcsi in the audit log")
        # Discovery (/version, read before apply decides whether the cluster mounts CSI PVs)
        # names no object: such requests may only read.
        non_resource = [e for e in events if "objectRef" not in e]
        self.assertEqual([e["requestURI"] for e in non_resource if e["verb"] != "get"], [],
                         "flexcsi wrote to a path that names no object")
        events = [e for e in events if "objectRef" in e]
        writes = [e for e in events if e["verb"] in ("create", "update", "patch", "delete")]
        claim_writes = [e for e in writes
                        if e["objectRef"].get("resource") == "persistentvolumeclaims"]
        # The one write to a claim: the merge patch of the claim-sync annotation, metadata only
        # (docs/migration.md, Binding at once), guarded by the claim's uid.
        for e in claim_writes:
            body = e.get("requestObject") or {}
            self.assertEqual(e["verb"], "patch", "flexcsi wrote a claim: %s" % e["requestURI"])
            self.assertEqual(set(body), {"metadata"}, "claim patch beyond metadata: %s" % body)
            self.assertEqual(set(body["metadata"]), {"uid", "annotations"}, str(body))
            self.assertEqual(set(body["metadata"]["annotations"]),
                             {"flexcsi.io/claim-sync-requested"}, str(body))
            self.assertTrue(body["metadata"]["uid"], str(body))
        self.assertTrue(claim_writes, "no claim-sync annotation written: binding waited for the "
                        "periodic claim sync")
        secrets = [e for e in events if e["objectRef"].get("resource") == "secrets"]
        self.assertEqual(secrets, [], "flexcsi read a secret")
        deletes = [e for e in writes if e["verb"] == "delete"
                   and e["objectRef"].get("resource") == "persistentvolumes"
                   and e["responseStatus"]["code"] < 300]
        self.assertTrue(deletes)
        for e in deletes:
            options = e.get("requestObject") or {}
            self.assertTrue(options.get("preconditions", {}).get("uid"),
                            "PV %s deleted without a uid precondition" % e["objectRef"]["name"])
            deleted = e.get("responseObject") or {}
            self.assertEqual(deleted.get("spec", {}).get("persistentVolumeReclaimPolicy"),
                             "Retain", "PV %s deleted while not Retain" % e["objectRef"]["name"])
        print("\naudit: %d requests by flexcsi (%d of them discovery), %d writes, %d PV deletes, "
              "all with a uid precondition on a Retain PV"
              % (len(events) + len(non_resource), len(non_resource), len(writes), len(deletes)),
              flush=True)

    def test_4_rollback_with_the_workload_running_is_refused_then_done_with_scale_down(self):
        ns, name = "shop", "orders"
        self.assertIsNotNone(ORDERS_CHECKSUM, "test 1 did not get as far as the checksum")
        journal = os.path.join(PLUGINS.dir, "journal-orders")
        pod = wait_for("the Deployment's pod on the CSI PV", lambda: running_pod(ns, "app=" + name),
                       180)
        pv, claim = get("pv", name), get("pvc", name, ns)
        self.assertIn("csi", pv["spec"])
        attacher = [f for f in pv["metadata"].get("finalizers", [])
                    if f.startswith("external-attacher/")]
        print("\nCSI PV %s finalizers: %s" % (name, pv["metadata"].get("finalizers")), flush=True)
        seen = len(clustertest.CLUSTER.audit_events())

        # A short timeout: the refusal needs none, and an old flexcsi that does not refuse fails
        # in a minute instead of five.
        started = time.monotonic()
        refused = migrate("rollback", "--pv", name, journal=journal, timeout=60)
        print("rollback without --scale-down: exit %d after %.1f s"
              % (refused.returncode, time.monotonic() - started), flush=True)
        self.assertNotEqual(refused.returncode, 0, refused.stdout + refused.stderr)
        self.assertEqual(refused.returncode, 3, refused.stdout + refused.stderr)
        self.assertIn("%s/%s" % (ns, pod), refused.stdout, refused.stdout + refused.stderr)
        self.assertIn("--scale-down", refused.stdout)
        after_pv, after_claim = get("pv", name), get("pvc", name, ns)
        self.assertEqual(after_pv["metadata"]["resourceVersion"], pv["metadata"]["resourceVersion"])
        self.assertEqual(after_claim["metadata"]["resourceVersion"],
                         claim["metadata"]["resourceVersion"])
        self.assertEqual(after_claim["status"]["phase"], "Bound")
        writes = [e for e in clustertest.CLUSTER.audit_events()[seen:]
                  if e.get("userAgent", "").startswith("flexcsi") and e["verb"] in FLEXCSI_WRITES]
        self.assertEqual(writes, [], "the refused rollback wrote")
        self.assertEqual(running_pod(ns, "app=" + name), pod)

        started = time.monotonic()
        done = migrate("rollback", "--pv", name, "--scale-down", journal=journal)
        elapsed = time.monotonic() - started
        print("rollback --scale-down: exit %d after %.1f s" % (done.returncode, elapsed),
              flush=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertLess(elapsed, 300)
        pv = get("pv", name)
        self.assertIn("flexVolume", pv["spec"])
        self.assertNotIn("csi", pv["spec"])
        self.assertEqual(pv["spec"]["claimRef"]["uid"], claim["metadata"]["uid"])
        self.assertEqual(get("pvc", name, ns)["metadata"]["uid"], claim["metadata"]["uid"])
        self.assertEqual(get("deployment", name, ns)["spec"]["replicas"], 1)
        back = wait_for("the Deployment's pod on the FlexVolume PV",
                        lambda: running_pod(ns, "app=" + name), 180)
        self.assertNotEqual(back, pod)
        self.assertEqual(exec_in(ns, back, "sha256sum", "/data/payload").split()[0],
                         ORDERS_CHECKSUM)
        if attacher:
            # csi-attacher let the CSI PV go only once nothing was attached: the delete finished
            self.assertFalse([va for va in clustertest.CLUSTER.kubectl_json(
                "get", "volumeattachments")["items"]
                if va["spec"]["source"].get("persistentVolumeName") == name
                and va["spec"]["attacher"] == DRIVER])


if __name__ == "__main__":
    clustertest.main()
