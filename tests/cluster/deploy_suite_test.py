#!/usr/bin/env python3
"""deploy/ as a user applies it, on a real Kubernetes with a pod network (CNI bridge), with the
container image tests/deploy/build_test_image.sh built (scripts/build-image.sh) imported into the
node's containerd. On v1.24 the node keeps kubelet's root and both FlexVolume plugin dirs where
OpenShift does, not at kubeadm's paths, and the install changes only the documented paths
setting; on v1.10 and v1.14 the node has kubeadm's paths and the install is the old-clusters
overlay, rendered with `kubectl kustomize` and applied with `kubectl apply -f` as
docs/operations.md says (kubectl 1.14's own -k has a kustomize too old for its components):

1. the install (deploy/kubernetes/overlays/loopback-provisioner, or overlays/old-clusters, with
   the image reference and, on v1.24, the paths changed): both DaemonSets and the provisioner
   come up, flexexec lands in kubelet's and kube-controller-manager's plugin dirs
2. a claim of StorageClass flexcsi-loopback is provisioned by flexcsi-controller; a pod writes
   to it through kubelet's FlexVolume plugin, the node bridge and csi-loopback; so does the
   overlay's demo pod
3. the node DaemonSet is rolled to a new image tag while the pod writes: no write fails, the
   pod keeps its mount, the new bridge finds its records
4. the pod is deleted and its volume torn down (unmounted, detached, no record), the claim
   deleted and its PV with it
5. bad deployments fail loudly: a wrong kubelet root or plugin dir, a kubelet root that
   exists but is not kubelet's, a bridge configuration that does not parse, a CSI endpoint that
   is not there
6. `kubectl delete`: nothing left but what docs/operations.md says stays

Steps 3 and 5 run on v1.24 only: the old clusters' runs stay lean (CI time) and prove the
install, a pod writing through the bridge and the uninstall there; 7, the Debian package on the
node, runs on v1.10 alone.
"""
import base64
import functools
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clustertest  # noqa: E402
from clustertest import apply, exec_in, get, image_archive, wait_for  # noqa: E402
from cluster import KUBEADM_PATHS  # noqa: E402
from host_package import HostPackage  # noqa: E402
from kube_version import KubeVersion  # noqa: E402
import namespace  # noqa: E402
from rollout import (APPEND_EVERY_0_2_S, HUNG_VOLUME_S, WriteLog, rolled_out,  # noqa: E402
                     volume_mounts)
import yaml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALL = os.path.join(HERE, "deploy", "install")
UPGRADE = os.path.join(HERE, "deploy", "upgrade")
OLD_CLUSTERS_INSTALL = os.path.join(HERE, "deploy", "old-clusters")
IMAGE = "localhost/flexcsi:" + clustertest.flexcsi_version()
UPGRADE_IMAGE = IMAGE + "-upgrade"
NS = "flexcsi"
APP = "deploy-app"
DEMO = "flexcsi-demo"  # the overlay's demo pod, and its namespace
FLEX_DRIVER_DIR = "flexcsi~loopback"
# Host paths of deploy/'s pods (their hostPath volumes), private to the suite's namespace.
FLEXCSI_HOST_DIRS = ["/run/flexcsi", "/var/lib/flexcsi", "/var/lib/flexcsi-loopback"]
# Where kubelet and kube-controller-manager keep their files on the test node (KUBEADM_PATHS'
# keys); set in setUpModule.
PATHS = dict(KUBEADM_PATHS)
# On a node that keeps kubelet elsewhere, kubeadm's root exists but is not kubelet's: what a
# left-over or hand-made /var/lib/kubelet looks like (test 5).
NOT_KUBELETS_ROOT = KUBEADM_PATHS["kubelet_root"]
RENDERED = {}  # the old-clusters install as rendered (kubectl kustomize), for the uninstall
HOST_PACKAGE = {}  # test 7's HostPackage, stopped before the cluster
PACKAGE_CONFIG_DIR = "/etc/flexcsi"  # the package's configuration dir, private to the suite
STATE_DB = "/var/lib/flexcsi/state.db"
LOOPBACK_STATE = "/var/lib/flexcsi-loopback"
FIGURES = {}


def setUpModule():
    archive = image_archive()
    if not os.path.isfile(archive):
        raise AssertionError("no image archive at %s: run tests/deploy/build_test_image.sh "
                             "(ctest runs it as deploy_test_image)" % archive)
    if old_cluster():
        PATHS.update(KUBEADM_PATHS)
        host_paths = list(PATHS.values()) + FLEXCSI_HOST_DIRS + [PACKAGE_CONFIG_DIR]
    else:
        PATHS.update(install_paths())
        host_paths = list(PATHS.values()) + FLEXCSI_HOST_DIRS + [NOT_KUBELETS_ROOT]
    c = clustertest.start_cluster(host_paths=host_paths, pod_network=True, node_paths=PATHS)
    began = time.monotonic()
    c.import_image(archive)
    # The upgrade's tag: what an operator's `ctr images import` of the next release adds.
    subprocess.run(["ctr", "--address", c.containerd_socket, "-n", "k8s.io", "images", "tag",
                    IMAGE, UPGRADE_IMAGE], check=True, stdout=subprocess.DEVNULL)
    FIGURES["image import"] = "%.1f s" % (time.monotonic() - began)
    # What kubeadm gives its control-plane node; the controller side's pods select it.
    c.kubectl("label", "node", c.node_name, "node-role.kubernetes.io/control-plane=")


def tearDownModule():
    for k, v in FIGURES.items():
        print("figure: %s: %s" % (k, v), flush=True)
    clustertest.stop_cluster(HOST_PACKAGE.get("package"))


def kubectl(*args, **kw):
    return clustertest.CLUSTER.kubectl(*args, **kw)


@functools.lru_cache(maxsize=None)
def old_cluster():
    """Kubernetes before 1.18 (no startupProbe): installed with the old-clusters overlay. Read
    from the binaries, before the cluster is up."""
    return not KubeVersion.of_binaries(os.environ["FLEXCSI_KUBE_BIN"]).at_least(18)


def install_paths():
    """The paths the install overlay sets (its flexcsi-*-paths ConfigMaps), as KUBEADM_PATHS."""
    with open(os.path.join(INSTALL, "kustomization.yaml")) as f:
        generators = yaml.safe_load(f)["configMapGenerator"]
    values = dict(literal.split("=", 1) for g in generators for literal in g["literals"])
    return {"kubelet_root": values["kubeletRoot"], "plugin_dir": values["kubeletPluginDir"],
            "controller_plugin_dir": values["controllerPluginDir"]}


def install():
    """Applies the install as docs/operations.md tells the cluster's user to; returns kubectl's
    output."""
    if not old_cluster():
        return kubectl("apply", "-k", INSTALL)
    # kubectl 1.10 has no -k: the overlay is rendered with a newer kubectl, then applied.
    if "manifest" not in RENDERED:
        rendered = subprocess.run(["kubectl", "kustomize", OLD_CLUSTERS_INSTALL], check=True,
                                  capture_output=True, text=True).stdout
        RENDERED["manifest"] = os.path.join(clustertest.CLUSTER.dir, "flexcsi-old-clusters.yaml")
        with open(RENDERED["manifest"], "w") as f:
            f.write(rendered)
    return kubectl("apply", "-f", RENDERED["manifest"])


def uninstall():
    if old_cluster():
        kubectl("delete", "-f", RENDERED["manifest"], "--ignore-not-found", "--wait=true",
                timeout=180)
    else:
        kubectl("delete", "-k", INSTALL, "--ignore-not-found", "--wait=true", timeout=180)


def old_only(test):
    """Runs `test` on the v1.10 cluster only; the v1.24 and v1.14 runs say why in one line."""
    def run(self):
        if clustertest.CLUSTER.version.at_least(11):
            self.skipTest("Kubernetes %s: the package install is proven on the oldest cluster, "
                          "the one it is for" % clustertest.CLUSTER.version)
        return test(self)
    run.__name__ = test.__name__
    return run


def newest_only(test):
    """Runs `test` on the v1.24 cluster only; the old clusters' runs say why in one line."""
    def run(self):
        if old_cluster():
            self.skipTest("Kubernetes %s: covered by the v1.24 run; the old-cluster run stays "
                          "lean (install, a pod writing, uninstall)" % clustertest.CLUSTER.version)
        return test(self)
    run.__name__ = test.__name__
    return run


def node_pod():
    live = [p for p in pods_of(NODE_PODS) if not p["metadata"].get("deletionTimestamp")]
    return max(live, key=lambda p: p["metadata"]["creationTimestamp"]) if live else None


def bridge(*command, check=True):
    """Runs a command in the node bridge container, as docs/operations.md shows."""
    return exec_in(NS, node_pod()["metadata"]["name"], *command, container="bridge", check=check)


def records():
    """Every record in the node bridge's state database (read from the host path)."""
    if not os.path.exists(STATE_DB):
        return []
    db = sqlite3.connect("file:%s?mode=ro" % STATE_DB, uri=True)
    try:
        return [(table,) + row for table in ("attachments", "stagings", "publications")
                for row in db.execute("SELECT volume_name, state FROM " + table)]
    finally:
        db.close()


def flexcsi_mounts():
    root = PATHS["kubelet_root"] + "/"
    return [m for m in namespace.mount_points()
            if m.startswith(root) and ("flexcsi" in m or "loopback" in m)]


def node_volume_mounts(volume):
    with open("/proc/self/mountinfo") as f:  # the suite shares the node's mount namespace
        return volume_mounts(f.read(), volume)


def loop_devices():
    return namespace.loop_devices_of_files_below(LOOPBACK_STATE)


NODE_PODS = "app.kubernetes.io/component=node"
TOPOLOGY_LABEL = "topology.loopback.csi.flexcsi.io/node"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"


def pods_of(selector):
    return clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l", selector)["items"]


def pod_events_of(selector):
    return "\n".join(clustertest.pod_events(NS, p["metadata"]["name"]) for p in pods_of(selector))


def daemonset_copy(ds, case, host_paths):
    """flexcsi-node as deployed, under another name and selector, with the hostPaths of the
    volumes `host_paths` names at the paths it gives."""
    labels = {"flexcsi-test-case": case}
    spec = json.loads(json.dumps(ds["spec"]))
    spec["selector"] = {"matchLabels": labels}
    spec["template"]["metadata"]["labels"] = labels
    for v in spec["template"]["spec"]["volumes"]:
        if v["name"] in host_paths:
            v["hostPath"]["path"] = host_paths[v["name"]]
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "flexcsi-node-typo-" + case, "namespace": NS}, "spec": spec}


class DeploySuite(unittest.TestCase):

    def setUp(self):
        self.began = time.monotonic()

    def tearDown(self):
        print("(%.1f s) " % (time.monotonic() - self.began), end="", flush=True)

    def test_1_install(self):
        began = time.monotonic()
        out = install()
        self.assertIn("daemonset.apps/flexcsi-node", out)
        wait_for("flexcsi-node rolled out",
                 lambda: rolled_out("daemonset", "flexcsi-node", NS), 180)
        wait_for("flexcsi-controller rolled out",
                 lambda: rolled_out("daemonset", "flexcsi-controller", NS), 120)
        wait_for("flexcsi-provisioner available",
                 lambda: rolled_out("deployment", "flexcsi-provisioner", NS), 120)
        FIGURES["install to Ready"] = "%.1f s" % (time.monotonic() - began)
        for key in ("plugin_dir", "controller_plugin_dir"):
            exe = os.path.join(PATHS[key], FLEX_DRIVER_DIR, "loopback")
            self.assertTrue(os.path.isfile(exe) and os.access(exe, os.X_OK), exe)
        # The node bridge registered the driver with its token and the downward-API node name.
        wait_for("the driver's topology label on the node", lambda: "topology.loopback.csi."
                 "flexcsi.io/node" in get("node", clustertest.CLUSTER.node_name)["metadata"][
                     "labels"], 60)
        report = bridge("flexcsi", "doctor")
        self.assertNotIn("FAIL", report)

    def test_2_provisioned_claim_pod_writes(self):
        apply([clustertest.namespace_object(APP),
               {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": APP},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "flexcsi-loopback",
                         "resources": {"requests": {"storage": "64Mi"}}}},
               writer_pod()])
        clustertest.wait_pod_running(APP, "writer", 180)
        pv = get("pvc", "data", APP)["spec"]["volumeName"]
        self.assertIn("flexVolume", get("pv", pv)["spec"])
        wait_for("the writer's first lines", lambda: len(read_log()) >= 5, 30)
        self.assertTrue(any(r[0] == "publications" for r in records()), records())
        self.assertTrue(loop_devices(), "the volume's loop device is not found by its file")
        # The overlay's own demo: its claim provisioned too, its pod writes the date.
        clustertest.wait_pod_running(DEMO, DEMO, 120)
        self.assertRegex(kubectl("logs", "-n", DEMO, DEMO), r"\d{2}:\d{2}:\d{2}")

    @newest_only
    def test_3_rolling_upgrade_keeps_the_mount(self):
        pod = get("pod", "writer", APP)
        volume = get("pvc", "data", APP)["spec"]["volumeName"]
        mounts = node_volume_mounts(volume)
        self.assertTrue(mounts, "the writer's volume is not mounted on the node")
        before = read_log()
        old_bridge = node_pod()["metadata"]["name"]
        began = time.monotonic()
        kubectl("apply", "-k", UPGRADE)
        wait_for("flexcsi-node rolled to the new tag",
                 lambda: rolled_out("daemonset", "flexcsi-node", NS, UPGRADE_IMAGE), 180)
        FIGURES["node DaemonSet rollout"] = "%.1f s" % (time.monotonic() - began)
        rolled_at = len(read_log())
        wait_for("writes after the rollout", lambda: len(read_log()) >= rolled_at + 10, 30)
        self.assertNotEqual(node_pod()["metadata"]["name"], old_bridge)
        after = get("pod", "writer", APP)
        self.assertEqual(after["metadata"]["uid"], pod["metadata"]["uid"])
        self.assertEqual(after["status"]["containerStatuses"][0]["restartCount"], 0)
        lines = read_log()
        writes = WriteLog(lines)
        self.assertEqual((writes.missing, writes.in_order), ([], True), "a write is missing")
        gap = writes.longest_gap()[0]
        FIGURES["writes"] = "%d before the rollout, %d in all, longest gap %.2f s" % (
            len(before), len(lines), gap)
        self.assertEqual(node_volume_mounts(volume), mounts, "the volume was mounted again")
        self.assertLess(gap, HUNG_VOLUME_S, "the writer hung")
        log = kubectl("logs", "-n", APP, "writer")
        self.assertNotIn("FAILED", log)
        # The new bridge found the records the old one wrote.
        state = json.loads(bridge("flexcsi", "state", "-o", "json"))
        self.assertIn(get("pvc", "data", APP)["spec"]["volumeName"], json.dumps(state))

    def test_4_pod_deleted_volume_torn_down(self):
        pv = get("pvc", "data", APP)["spec"]["volumeName"]
        clustertest.delete_and_wait("pod", "writer", APP)
        attached = lambda: [v["name"] for v in get("node", clustertest.CLUSTER.node_name)[  # noqa: E731
            "status"].get("volumesAttached", [])]
        wait_for("the volume unmounted and detached, no record", lambda: not any(
            pv in m for m in flexcsi_mounts()) and not any(pv == r[1] for r in records())
            and not any(pv in name for name in attached()), 120)
        clustertest.delete_and_wait("pvc", "data", APP)
        wait_for("the provisioned PV deleted", lambda: get("pv", pv) is None, 120)

    @newest_only
    def test_5_bad_deployments_fail_loudly(self):
        ds = get("daemonset", "flexcsi-node", NS)
        volumes = [v["name"] for v in ds["spec"]["template"]["spec"]["volumes"]]

        # A wrong kubelet root or plugin dir: copies of the DaemonSet beside it. Their pods
        # never start a container; kubelet holds a pod whose volumes fail for two minutes before
        # it lets it go, so the real DaemonSet is not rolled through them.
        typos = {"root": ("kubelet-dir", "/var/lib/kubelet-typo"),
                 "plugins": ("flexvolume-dir", PATHS["plugin_dir"] + "-typo")}
        for case, (volume, path) in typos.items():
            apply(daemonset_copy(ds, case, {volume: path}))
        for case, (volume, path) in typos.items():
            wait_for("an event naming %s" % path,
                     lambda: path in pod_events_of("flexcsi-test-case=" + case), 90)
            self.assertFalse(any(ready(p) for p in pods_of("flexcsi-test-case=" + case)))
        self.assertFalse(os.path.exists(typos["plugins"][1]), "installed where kubelet never looks")
        for case in typos:
            kubectl("delete", "daemonset", "-n", NS, "flexcsi-node-typo-" + case, "--wait=false")
            kubectl("delete", "pods", "-n", NS, "-l", "flexcsi-test-case=" + case, "--force",
                    "--grace-period=0", "--wait=false")

        # A kubelet root that exists but is not kubelet's: kubeadm's default, left on this node
        # whose kubelet is elsewhere. The pod starts; the bridge says why it is not Ready. The
        # copy keeps its socket, database and driver state apart from the real bridge's.
        case = "not-kubelets"
        apply(daemonset_copy(ds, case, {
            "kubelet-dir": NOT_KUBELETS_ROOT,
            "socket-dir": NOT_KUBELETS_ROOT + "/flexcsi-run",
            "state-dir": NOT_KUBELETS_ROOT + "/flexcsi-state",
            "csi-driver-state": NOT_KUBELETS_ROOT + "/flexcsi-loopback"}))
        selector = "flexcsi-test-case=" + case
        wait_for("the bridge to say the root is not kubelet's", lambda: "is not kubelet's root "
                 "dir" in logs_of(selector, "bridge"), 120)
        wait_for("the readiness probe's event",
                 lambda: "Readiness probe failed" in pod_events_of(selector), 60)
        self.assertFalse(any(ready(p) for p in pods_of(selector)))
        print("\n  not kubelet's: " + next(line for line in logs_of(selector, "bridge")
                                          .splitlines() if "kubelet's root" in line), flush=True)
        kubectl("delete", "daemonset", "-n", NS, "flexcsi-node-typo-" + case, "--wait=false")
        clustertest.wait_for("the copy's pods gone", lambda: not pods_of(selector), 90)

        # A bridge configuration that does not parse, then one whose CSI endpoint is not there:
        # the DaemonSet itself, rolled to each (test 6 applies the install again).
        good = get("configmap", ds["spec"]["template"]["spec"]["volumes"][
            volumes.index("config")]["configMap"]["name"], NS)["data"]["bridge.yaml"]
        apply([{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "unparsable", "namespace": NS},
                "data": {"bridge.yaml": good.replace("drivers:", "drivers: [")}},
               {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "no-driver-socket", "namespace": NS},
                "data": {"bridge.yaml": good.replace("plugins/loopback.csi.flexcsi.io/csi.sock",
                                                     "plugins/typo.csi.flexcsi.io/csi.sock")}}])

        def use_config(name):
            kubectl("patch", "daemonset", "flexcsi-node", "-n", NS, "--type", "json", "-p",
                    json.dumps([{"op": "replace", "path": "/spec/template/spec/volumes/%d/"
                                 "configMap/name" % volumes.index("config"), "value": name}]))

        use_config("unparsable")
        # The log that names it, kept: install-driver fails and restarts, and a second read
        # may meet the next attempt's container with nothing written yet.
        def log_naming_the_file():
            text = install_driver_log()
            return text if "bridge.yaml" in text else None

        log = wait_for("install-driver to name the parse error", log_naming_the_file, 90)
        self.assertFalse(ready(node_pod()))
        print("\n  unparsable: " + log.strip().splitlines()[-1], flush=True)

        use_config("no-driver-socket")
        wait_for("a bridge that runs but is not Ready", lambda: running_not_ready(node_pod()), 90)
        wait_for("the readiness probe's event",
                 lambda: "Readiness probe failed" in pod_events_of(NODE_PODS), 30)
        self.assertTrue(running_not_ready(node_pod()))
        report = bridge("flexcsi", "doctor", check=False)
        self.assertIn("typo.csi.flexcsi.io", report)
        self.assertIn("FAIL", report)

    def test_6_delete_leaves_what_docs_say(self):
        install()  # back from test 5's broken configuration
        wait_for("flexcsi-node rolled back",
                 lambda: rolled_out("daemonset", "flexcsi-node", NS), 120)
        # As docs/operations.md says: the pods and claims that use flexcsi volumes go first
        # (their unmount and deletion need the bridge and the provisioner), then the install.
        demo_pv = get("pvc", "demo-data", DEMO)["spec"]["volumeName"]
        clustertest.delete_and_wait("pod", DEMO, DEMO)
        clustertest.delete_and_wait("pvc", "demo-data", DEMO)
        wait_for("the demo's PV deleted", lambda: get("pv", demo_pv) is None, 120)
        uninstall()
        wait_for("namespace flexcsi gone", lambda: get("namespace", NS) is None, 120)
        clustertest.delete_and_wait("namespace", APP)
        # Documented to stay (docs/operations.md, "Uninstall"): the executables in both plugin
        # dirs, flexcsi's state files (no record in them) and csi-loopback's own files.
        left = left_on_node()
        FIGURES["left on the node"] = " ".join(left)
        self.assertEqual([p for p in left if not p.startswith(LOOPBACK_STATE + "/")],
                         sorted(p.format(**PATHS) for p in DOCUMENTED_LEFTOVERS))
        self.assertEqual(records(), [])
        self.assertEqual(flexcsi_mounts(), [])
        self.assertEqual(loop_devices(), [])


# docs/operations.md, "Uninstall": what `kubectl delete` leaves on a node, besides the wrapped
# driver's data (LOOPBACK_STATE); empty directories end in "/".
DOCUMENTED_LEFTOVERS = [
    "{plugin_dir}/flexcsi~loopback/flexcsi.json", "{plugin_dir}/flexcsi~loopback/loopback",
    "{controller_plugin_dir}/flexcsi~loopback/flexcsi.json",
    "{controller_plugin_dir}/flexcsi~loopback/loopback",
    "/run/flexcsi/controller/",
    "/var/lib/flexcsi/state.db", "/var/lib/flexcsi/controller/state.db",
    "/var/lib/flexcsi/provisioner/journal.db"]


def left_on_node():
    """Every file, and every empty directory (with a trailing "/"), below the host paths of
    deploy/'s pods and in flexcsi's folders of both plugin dirs."""
    roots = FLEXCSI_HOST_DIRS + [os.path.join(PATHS[k], FLEX_DRIVER_DIR)
                                 for k in ("plugin_dir", "controller_plugin_dir")]
    left = []
    for root in roots:
        for path, dirs, files in os.walk(root):
            left += [os.path.join(path, f) for f in files]
            if not dirs and not files and path != root:
                left.append(path + "/")
    return sorted(left)


def package_kubeconfig(path):
    """A kubeconfig with the token of service account flexcsi-node, which deploy/'s rbac.yaml
    binds to the flexcsi-node ClusterRole: what the host install's `kubeconfig` names. Before
    1.24 the token controller writes the token into a Secret of the account."""
    base = os.path.join(HERE, "..", "..", "deploy", "kubernetes", "base", "node")
    for f in ("namespace.yaml", "rbac.yaml"):
        kubectl("apply", "-f", os.path.join(base, f))
    kubectl("apply", "-n", NS, "-f", os.path.join(base, "serviceaccount.yaml"))
    secret = wait_for("the service account's token secret", lambda: (get(
        "serviceaccount", "flexcsi-node", NS).get("secrets") or [{}])[0].get("name"), 60)
    token = base64.b64decode(get("secret", secret, NS)["data"]["token"]).decode()
    c = clustertest.CLUSTER
    with open(c.ca) as f:
        ca = base64.b64encode(f.read().encode()).decode()
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "flexcsi",
                   "clusters": [{"name": "c", "cluster": {"server": c.server,
                                                          "certificate-authority-data": ca}}],
                   "users": [{"name": "flexcsi-node", "user": {"token": token}}],
                   "contexts": [{"name": "flexcsi", "context": {"cluster": "c",
                                                                "user": "flexcsi-node"}}]}, f)
    os.chmod(path, 0o600)


def inline_pod(name, volume_id):
    """Writes a line to an inline FlexVolume of the package's driver and prints the file."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": APP},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": clustertest.BUSYBOX,
                                     "imagePullPolicy": "Never", "command": [
                                         "sh", "-c", "echo written-through-the-package >> "
                                         "/data/file && cat /data/file && sleep 1000000"],
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "flexVolume": {
                         "driver": "flexcsi/loopback", "fsType": "ext4",
                         "options": {"volumeID": volume_id}}}]}}


class PackageSuite(unittest.TestCase):
    """After the manifests are gone: the other way onto an old node (docs/operations.md,
    "Install on hosts"), with registration through a kubeconfig."""

    @old_only
    def test_7_debian_package_on_the_node(self):
        began = time.monotonic()
        debs = glob.glob(os.path.join(os.path.dirname(image_archive()), "deb", "flexcsi_*.deb"))
        self.assertEqual(len(debs), 1, "tests/deploy/build_test_image.sh leaves the .deb beside "
                         "the image: %s" % debs)
        package = HOST_PACKAGE["package"] = HostPackage(clustertest.CLUSTER, debs[0])
        package.install()
        # Registration through a kubeconfig; the label and annotation deploy/ left are removed
        # first, so that the package's bridge has to write them again.
        node = clustertest.CLUSTER.node_name
        package_kubeconfig(os.path.join(PACKAGE_CONFIG_DIR, "kubeconfig"))
        kubectl("label", "node", node, TOPOLOGY_LABEL + "-", check=False)
        kubectl("annotate", "node", node, NODE_ID_ANNOTATION + "-", check=False)
        config = os.path.join(PACKAGE_CONFIG_DIR, "bridge.yaml")
        with open(config) as f:
            text = f.read()
        for commented, value in (("# nodeName: node-1", "nodeName: " + node),
                                 ("# kubeconfig: /etc/flexcsi/kubeconfig",
                                  "kubeconfig: /etc/flexcsi/kubeconfig")):
            self.assertIn(commented, text, "the package's bridge.yaml changed: update the test")
            text = text.replace(commented, value)
        # the pod below mounts an inline volume: refused unless the driver allows them (issue #46)
        text, allowed = re.subn(r"^( *)#? *inlineVolumes:.*$", r"\1inlineVolumes: true", text,
                                count=1, flags=re.MULTILINE)
        if not allowed:
            anchor = "    accessMode: ReadWriteOnce\n"
            self.assertIn(anchor, text, "the package's bridge.yaml changed: update the test")
            text = text.replace(anchor, anchor + "    inlineVolumes: true\n", 1)
        with open(config, "w") as f:
            f.write(text)
        package.start_unit("csi-loopback.service")
        package.start_unit("flexcsi-bridge.service")
        endpoint = "unix://%s/plugins/loopback.csi.flexcsi.io/csi.sock" % PATHS["kubelet_root"]
        wait_for("the package's bridge to answer", lambda: subprocess.run(
            ["flexcsi", "state"], capture_output=True).returncode == 0, 60)
        # Into kubelet's plugin dir, and (a control plane on this host) kube-controller-manager's
        for key in ("plugin_dir", "controller_plugin_dir"):
            clustertest.run(["flexcsi", "install-driver", "--config", config, "--plugin-dir",
                             PATHS[key]])
        wait_for("the topology label and node id written through the kubeconfig", lambda: (
            TOPOLOGY_LABEL in get("node", node)["metadata"]["labels"]
            and NODE_ID_ANNOTATION in get("node", node)["metadata"].get("annotations", {})), 60)
        volume = clustertest.run(["flexcsi", "volume", "create", "--endpoint", endpoint, "--name",
                                  "package-vol", "--size", "64Mi", "--fs-type", "ext4"]).strip()
        apply([clustertest.namespace_object(APP), inline_pod("package-writer", volume)])
        clustertest.wait_pod_running(APP, "package-writer", 180)
        wait_for("the pod's line read back", lambda: "written-through-the-package" in kubectl(
            "logs", "-n", APP, "package-writer", check=False), 60)
        report = subprocess.run(["flexcsi", "doctor"], capture_output=True, text=True).stdout
        self.assertNotIn("FAIL", report)
        clustertest.delete_and_wait("pod", "package-writer", APP)
        wait_for("the volume torn down", lambda: records() == [] and flexcsi_mounts() == [], 120)
        FIGURES["package install to a pod's write and back"] = "%.1f s" % (
            time.monotonic() - began)


def writer_pod():
    """Appends a numbered, timed line every 0.2 s (rollout.APPEND_EVERY_0_2_S)."""
    script = APPEND_EVERY_0_2_S
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "writer", "namespace": APP},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": clustertest.BUSYBOX,
                                     "imagePullPolicy": "Never", "command": ["sh", "-c", script],
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data",
                                  "persistentVolumeClaim": {"claimName": "data"}}]}}


def read_log():
    return exec_in(APP, "writer", "cat", "/data/log").splitlines()


def ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions", []))


def running_not_ready(pod):
    statuses = {c["name"]: c for c in pod["status"].get("containerStatuses", [])}
    return ("running" in statuses.get("bridge", {}).get("state", {}) and not ready(pod))


def logs_of(selector, container):
    return "\n".join(kubectl("logs", "-n", NS, p["metadata"]["name"], "-c", container,
                              check=False) for p in pods_of(selector))


def install_driver_log():
    return kubectl("logs", "-n", NS, node_pod()["metadata"]["name"], "-c", "install-driver",
                   check=False)


if __name__ == "__main__":
    clustertest.main(pod_network=True, failfast=True)
