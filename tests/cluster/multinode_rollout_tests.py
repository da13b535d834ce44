"""Issue 25 test 4 and issue #37's real upgrade and downgrade: deploy/'s node DaemonSet
(flexcsi-node, `maxUnavailable: 1`) and flexcsi-controller's Deployment (flexcsi-provisioner)
installed with the previous release's image, upgraded to this build's image with one
`kubectl apply -k`, then downgraded to the previous release the same way, across both nodes,
while a pod on each node appends a line every 0.2 s to a FlexVolume PV the DaemonSet's bridge
serves. Asserted for each rollout: one node at a time (the pods' changes as the API server
streams them: never both nodes without a Ready bridge), no failed and no missing write on either
node, neither writer restarted (same uid, restartCount 0), the volumes' mounts untouched, the
new bridges took over the old ones' records (the downgrade: the previous bridge serves the
database this build's bridge wrote), and every node runs the release it was rolled to (the
running bridge's binary and the flexexec install-driver put into kubelet's plugin dir). The
Deployment rolls in the same apply: its pod is replaced by one that becomes Ready running the
release rolled to (its process 1's binary), takes the leader-election Lease, and provisions a
claim made after the rollout (one PV, its volume in the node's csi-loopback, the claim named in
that pod's log). Then the writers go and every volume is unmounted and unstaged by the previous
release: no mount left on either node, no record in either bridge; and both claims are deleted,
their PVs and CSI volumes deleted by the previous release's controller (the upgrade's claim was
provisioned by this build's). MEASURED lines: each rollout's time, each node's time without a
Ready bridge and its longest write gap, the controller's hand-over (old pod told to stop to the
new pod holding the Lease).

The previous release's image (previous_release_image.py) is this build's image with the
previous release's flexexec, flexcsi-bridge and flexcsi-controller (tests/upgrade/
build_release.sh's, from the commit CHANGELOG.md names) over its own; csi-loopback and the
flexcsi CLI in it stay this tree's: the skew a rollout puts on a node is flexexec against the
bridge and the bridge against its state database, and on the controller its intent journal (a
hostPath) and Lease. Skipped, with one line, where those binaries are not built (ctest's
upgrade_previous_release_build builds them) or the image was not.

The install is tests/cluster/deploy/multinode (deploy/kubernetes/base/node and
deploy/kubernetes/provisioner, the latter on the node plugin's csi-loopback socket as
overlays/loopback-provisioner does, at kubeadm's paths with the image of ctest's
deploy_test_image); the test adds the API server's address for the in-cluster clients of the
bridge and the controller (no Service address here), and labels the first node as kubeadm
labels a control-plane node, where the Deployment's nodeSelector puts the controller. Its
StorageClass (Immediate, allowedTopologies that node) makes the volumes there, in the csi-loopback
the controller reaches. Making the previous image, importing both
images into both nodes' containerd and the install start in the background when the suite's
cluster is up (start_install), so that the tests before this one hide them. The DaemonSet's
volumes are node-local (csi-loopback --no-attach): the rollout touches the node side alone, so
kube-controller-manager takes no part and there is nothing to detach; attach across nodes is
multinode_move_tests.py's. Its driver (flexcsi/loopback, loopback.csi.flexcsi.io,
/run/flexcsi/bridge.sock) is none of the suite's NodePlugins', which keep running beside it.

Imported by multinode_suite_test.py, whose cluster gives every node its own copy of
HOST_PATHS."""
import json
import os
import re
import subprocess
import threading
import time
import unittest

import clustertest
from clustertest import apply, busybox_pod, exec_in, get, timed, wait_for
from cluster import KUBEADM_PATHS
import previous_release_image
from rollout import (APPEND_EVERY_0_2_S, HUNG_VOLUME_S, WriteLog, rolled_out, uptime,
                     volume_mounts)

# A node's upgrade as the API server shows it: the old pod's deletionTimestamp set by the
# DaemonSet controller, the old pod deleted, the new pod created, the new pod Ready.
STEPS = ("old pod told to stop", "gone", "new pod created", "Ready")
HERE = os.path.dirname(os.path.abspath(__file__))
MANIFESTS = os.path.join(HERE, "deploy", "multinode")
NS = "flexcsi"
APP = "rollout"
DAEMONSET = "flexcsi-node"
NODE_PODS = "app.kubernetes.io/component=node"
IMAGE = "localhost/flexcsi"
TAG = clustertest.flexcsi_version()  # what scripts/build-image.sh tags the image
FLEX_DRIVER = "flexcsi/loopback"
KUBELET_ROOT, PLUGIN_DIR = KUBEADM_PATHS["kubelet_root"], KUBEADM_PATHS["plugin_dir"]
# Where install-driver puts flexexec for FLEX_DRIVER (<plugin dir>/<vendor~name>/<name>).
INSTALLED_FLEXEXEC = os.path.join(PLUGIN_DIR, "flexcsi~loopback", "loopback")
# flexcsi-controller's Deployment (deploy/kubernetes/provisioner), its pods, the label kubeadm
# gives a control-plane node (the Deployment's nodeSelector) and the StorageClass of its claims.
PROVISIONER = "flexcsi-provisioner"
PROVISIONER_PODS = "app.kubernetes.io/component=provisioner"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
CSI_DRIVER = "loopback.csi.flexcsi.io"
STORAGE_CLASS = "rollout-loopback"
TOPOLOGY_KEY = "topology.loopback.csi.flexcsi.io/node"
LOOPBACK_STATE = "/var/lib/flexcsi-loopback/state.json"  # the DaemonSet's csi-loopback's
# The controller's leader-election Lease: external-provisioner's name for the driver's lock
# (controller/provisioner_lock.h), in the Deployment's namespace.
LEASE = "loopback-csi-flexcsi-io"
CSI_ENDPOINT = "unix://%s/plugins/loopback.csi.flexcsi.io/csi.sock" % KUBELET_ROOT
BRIDGE_SOCKET = "/run/flexcsi/bridge.sock"
# Paths of which every node of the suite's cluster has its own copy (Cluster(host_paths=...)):
# kubelet's root and plugin dir, where deploy/ expects them, and the DaemonSet's hostPath folders.
HOST_PATHS = [KUBELET_ROOT, PLUGIN_DIR, "/run/flexcsi", "/var/lib/flexcsi",
              "/var/lib/flexcsi-loopback"]
# The install started in the background: its thread, then its times, its error or why the
# test is skipped; and the previous release ("release") with the sha256 of each program the
# previous image carries ("sha256": {program: digest}).
INSTALL, PREVIOUS = {}, {}


def start_install(c):
    """Makes the previous release's image, imports it with this build's (one archive, about
    330 MB, their shared layers once) into every node's containerd, and installs the previous
    release, in the background: the suite's setUpModule calls it, so that the tests before this
    one hide its time."""
    archive = clustertest.image_archive()
    if not os.path.isfile(archive):
        return

    def run():
        both = os.path.join(c.dir, "flexcsi-images.tar")
        try:
            began = time.monotonic()
            PREVIOUS["release"], PREVIOUS["sha256"] = previous_release_image.build_archive(
                os.path.join(os.path.dirname(archive), "podman"), IMAGE, TAG, both)
            INSTALL["image"] = time.monotonic() - began
            c.import_image(both)
            INSTALL["import"] = time.monotonic() - began - INSTALL["image"]
            c.kubectl("label", "node", provisioner_node(c).name, CONTROL_PLANE + "=",
                      "--overwrite")
            install(c, PREVIOUS["release"])
            INSTALL["applied"] = time.monotonic()
        except previous_release_image.Missing as e:
            INSTALL["skip"] = str(e)
        except Exception as e:  # noqa: BLE001 - setUpClass raises it
            INSTALL["error"] = e
        finally:
            if os.path.exists(both):
                os.remove(both)
    INSTALL["thread"] = threading.Thread(target=run, daemon=True)
    INSTALL["thread"].start()


def flexcsi_on(node, *args, check=True):
    """The build's flexcsi CLI in the node's namespaces (the DaemonSet's sockets are there)."""
    flexcsi = os.path.join(clustertest.build_dir(), "cli", "flexcsi")
    return node.in_node(flexcsi, *args, check=check).stdout


def writer(node):
    return "writer-" + node.name


def provisioner_node(c):
    """The node labelled as a control-plane node, where flexcsi-controller runs and makes its
    volumes (in that node's csi-loopback)."""
    return c.nodes[0]


def bridge_records(node):
    """Every record the node's bridge holds ({kind: [record]}), through its socket."""
    state = json.loads(flexcsi_on(node, "state", "--socket", BRIDGE_SOCKET, "-o", "json"))
    return {k: state[k] for k in ("attachments", "stagings", "publications") if state[k]}


def install(c, tag):
    """Applies the install with `tag`, as an operator's overlay of it would (kubectl apply -k);
    the overlay, written under the cluster's dir, adds the API server's address for the
    in-cluster clients of the bridge and the controller (KUBERNETES_SERVICE_HOST/PORT: no
    Service address here)."""
    overlay = os.path.join(c.dir, "rollout-" + tag)
    os.makedirs(overlay, exist_ok=True)
    host, port = c.server.split("//")[1].rsplit(":", 1)
    env = [{"op": "add", "path": "/spec/template/spec/containers/0/env/-",
            "value": {"name": "KUBERNETES_SERVICE_" + name, "value": value}}
           for name, value in (("HOST", host), ("PORT", port))]
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        json.dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                   "resources": [os.path.relpath(MANIFESTS, overlay)],
                   "images": [{"name": IMAGE, "newTag": tag}],
                   "patches": [{"target": {"kind": kind, "name": name}, "patch": json.dumps(env)}
                               for kind, name in (("DaemonSet", DAEMONSET),
                                                  ("Deployment", PROVISIONER))]}, f)
    c.kubectl("apply", "-k", overlay)


def volume_objects(node, volume_id):
    """A PV of the DaemonSet's driver on `node` (its volumes are that node's alone), its claim,
    and a pod there appending to it."""
    name = writer(node)
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
             "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                      "flexVolume": {"driver": FLEX_DRIVER, "fsType": "ext4",
                                     "options": {"volumeID": volume_id}},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "kubernetes.io/hostname", "operator": "In",
                           "values": [node.name]}]}]}}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": name, "namespace": APP},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "volumeName": name, "resources": {"requests": {"storage": "64Mi"}}}},
            busybox_pod(APP, name, [{"name": "data", "persistentVolumeClaim": {
                "claimName": name}}], [{"name": "data", "mountPath": "/data"}],
                command=APPEND_EVERY_0_2_S, node=node.name)]


def node_volume_mounts(node):
    """The mounts of the node's writer's volume (its PV is named as the writer)."""
    return volume_mounts(node.in_node("cat", "/proc/self/mountinfo").stdout, writer(node))


def read_log(node):
    return exec_in(APP, writer(node), "cat", "/data/log").splitlines()


def ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions", []))


def bridge_pod(node):
    """The name of the node's flexcsi-node pod that is Ready and not being deleted."""
    pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l", NODE_PODS,
                                            "--field-selector", "spec.nodeName=" + node.name)
    return next(p["metadata"]["name"] for p in pods["items"]
                if ready(p) and not p["metadata"].get("deletionTimestamp"))


def release_of(program, digest, version_output):
    """The release a binary is: the previous one when it is the copy the previous image carries
    (0.1.0 answers no --version), otherwise the one its --version names."""
    if digest == PREVIOUS["sha256"][program]:
        return PREVIOUS["release"]
    found = re.match(r"%s (\d+\.\d+\.\d+) " % program, version_output)
    return found.group(1) if found else "unknown: " + version_output.strip()[:100]


def running_releases(node):
    """(release of the bridge running on the node, of the flexexec kubelet runs there): the
    binary of the bridge container's process 1, and the file install-driver put into kubelet's
    plugin dir."""
    bridge = exec_in(NS, bridge_pod(node), "sh", "-c",
                     "sha256sum /proc/1/exe && { /proc/1/exe --version 2>&1 || true; }",
                     container="bridge")
    digest, _, version = bridge.partition("\n")
    flexexec = node.in_node("sha256sum", INSTALLED_FLEXEXEC).stdout.split()[0]
    return (release_of("flexcsi-bridge", digest.split()[0], version),
            release_of("flexexec", flexexec,
                       node.in_node(INSTALLED_FLEXEXEC, "--version", check=False).stdout))


def controller_pods():
    """flexcsi-controller's pods that are Ready and not being deleted."""
    pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l", PROVISIONER_PODS)
    return [p for p in pods["items"] if ready(p) and not p["metadata"].get("deletionTimestamp")]


def controller_release(pod):
    """The release of the flexcsi-controller running in the pod: its container's process 1."""
    out = exec_in(NS, pod, "sh", "-c",
                  "sha256sum /proc/1/exe && { /proc/1/exe --version 2>&1 || true; }",
                  container="controller")
    digest, _, version = out.partition("\n")
    return release_of("flexcsi-controller", digest.split()[0], version)


def lease_holder(lease):
    return lease.get("spec", {}).get("holderIdentity") or ""


def lease_taken(watch, pod):
    """The uptime at which a watch of the namespace's Leases first saw the pod hold the
    controller's Lease, or None."""
    return next((t for t, _, lease in watch.events if lease["metadata"]["name"] == LEASE
                 and lease_holder(lease) == pod), None)


def storage_class():
    """Immediate claims, their volumes made on the controller's node (node-local csi-loopback
    makes volumes only where requisite topology includes its own node)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS}, "provisioner": CSI_DRIVER,
            "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
            "parameters": {"csi.storage.k8s.io/fstype": "ext4"},
            "allowedTopologies": [{"matchLabelExpressions": [
                {"key": TOPOLOGY_KEY, "values": [provisioner_node(clustertest.CLUSTER).name]}]}]}


def claim_object(name):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": APP},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": STORAGE_CLASS,
                     "resources": {"requests": {"storage": "64Mi"}}}}


def pvs_of(claim_name):
    """The PVs whose claimRef is the claim (by name: one claim of that name in the test)."""
    return [pv for pv in clustertest.CLUSTER.kubectl_json("get", "pv")["items"]
            if (pv["spec"].get("claimRef") or {}).get("name") == claim_name
            and pv["spec"]["claimRef"].get("namespace") == APP]


def loopback_volumes(node):
    """The ids of the volumes the node's csi-loopback (the DaemonSet's) holds."""
    out = node.in_node("cat", LOOPBACK_STATE, check=False).stdout
    return {v["id"] for v in json.loads(out)["volumes"]} if out.strip() else set()


class PodWatch:
    """Every change of the `kind` objects (pods) `selector` picks, as the API server streams it
    (kubectl get --watch), with the uptime at which it arrived."""

    def __init__(self, ns, selector, kind="pods"):
        self.events = []  # (uptime, ADDED|MODIFIED|DELETED, object)
        self.proc = subprocess.Popen(
            ["kubectl", "--kubeconfig", clustertest.CLUSTER.kubeconfig, "get", kind, "-n", ns,
             *(["-l", selector] if selector else []), "--watch", "--output-watch-events",
             "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:  # with --output-watch-events: an event a line
            event = json.loads(line)
            self.events.append((uptime(), event["type"], event["object"]))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.thread.join(10)

    def availability(self, nodes):
        """[(uptime, {node: a Ready pod not being deleted runs there}, {node: its images})]
        after each event."""
        pods, out = {}, []
        for t, kind, pod in self.events:
            uid = pod["metadata"]["uid"]
            if kind == "DELETED":
                pods.pop(uid, None)
            else:
                pods[uid] = pod
            up, images = {n: False for n in nodes}, {n: set() for n in nodes}
            for p in pods.values():
                node = p["spec"].get("nodeName")
                if node in up and ready(p) and not p["metadata"].get("deletionTimestamp"):
                    up[node] = True
                    images[node] |= {ct["image"] for ct in p["spec"]["containers"]}
            out.append((t, up, images))
        return out


    def steps(self, node, new_image):
        """[(step, uptime)] of the node's upgrade, each step (STEPS) when first seen."""
        seen = {}
        for t, kind, pod in self.events:
            if pod["spec"].get("nodeName") != node:
                continue
            old = any(ct["image"] != new_image for ct in pod["spec"]["containers"])
            if old and pod["metadata"].get("deletionTimestamp"):
                seen.setdefault(STEPS[0], t)
            if old and kind == "DELETED":
                seen.setdefault(STEPS[1], t)
            if not old:
                seen.setdefault(STEPS[2], t)
                if ready(pod):
                    seen.setdefault(STEPS[3], t)
        return sorted(seen.items(), key=lambda item: item[1])


def outages(timeline, nodes):
    """{node: [(from, to)]}: the spans in which the node had no Ready bridge pod that was not
    being deleted."""
    spans = {n: [] for n in nodes}
    for t, up, _ in timeline:
        for n in nodes:
            if not up[n] and (not spans[n] or spans[n][-1][1] is not None):
                spans[n].append([t, None])
            elif up[n] and spans[n] and spans[n][-1][1] is None:
                spans[n][-1][1] = t
    return spans



class NodeDaemonSetRolloutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        archive = clustertest.image_archive()
        if not os.path.isfile(archive):
            raise unittest.SkipTest("no image archive at %s (ctest's deploy_test_image builds "
                                    "it)" % archive)
        c = clustertest.CLUSTER
        if "thread" not in INSTALL:
            start_install(c)
        began = time.monotonic()
        INSTALL["thread"].join(600)
        if "skip" in INSTALL:
            raise unittest.SkipTest("no previous release to upgrade from: " + INSTALL["skip"])
        cls.addClassCleanup(cls.uninstall)
        if "applied" not in INSTALL:
            raise AssertionError("the install: %s" % INSTALL.get("error", "not done"))
        wait_for("flexcsi-node rolled out on both nodes",
                 lambda: rolled_out("daemonset", DAEMONSET, NS), 180)
        wait_for("flexcsi-provisioner rolled out",
                 lambda: rolled_out("deployment", PROVISIONER, NS), 120)
        timed("previous release's image made (podman build and save of both images)",
              INSTALL["image"])
        timed("both images imported into both nodes' containerd", INSTALL["import"])
        timed("install of %s applied to both bridges and the controller Ready"
              % PREVIOUS["release"],
              time.monotonic() - INSTALL["applied"])
        timed("this test waited for the install started in the background",
              time.monotonic() - began)
        apply([clustertest.namespace_object(APP), storage_class()])
        objects = []
        for node in c.nodes:
            volume = flexcsi_on(node, "volume", "create", "--endpoint", CSI_ENDPOINT, "--name",
                                writer(node), "--size", "64Mi", "--fs-type", "ext4").strip()
            objects += volume_objects(node, volume)
        apply(objects)
        for node in c.nodes:
            clustertest.wait_pod_running(APP, writer(node), 120)

    @classmethod
    def uninstall(cls):
        """The claims, while a controller may still delete their volumes, the writers and their
        volumes, then the DaemonSet, the Deployment and what they installed; the suite's
        namespace, service account and RBAC (base/node's too) stay for the suite's bridges."""
        c = clustertest.CLUSTER
        began = time.monotonic()
        claims = [pv["spec"]["claimRef"]["name"] for pv in c.kubectl_json("get", "pv")["items"]
                  if (pv["spec"].get("claimRef") or {}).get("namespace") == APP
                  and pv["spec"].get("storageClassName") == STORAGE_CLASS]
        for name in claims:
            c.delete("pvc", name, APP)
        try:
            wait_for("the claims' PVs deleted by the controller", lambda: not any(
                pvs_of(name) for name in claims), 60)
        except AssertionError:  # the test failed with no controller left: the PVs go by hand
            c.kubectl("delete", "pv", *[pv["metadata"]["name"] for name in claims
                                        for pv in pvs_of(name)], "--wait=false", check=False)
        volumes = {n.name: (get("pv", writer(n)) or {}).get("spec", {}).get("flexVolume", {})
                   .get("options", {}).get("volumeID") for n in c.nodes}
        c.kubectl("delete", "pods", "-n", APP, "--all", "--wait=false")
        for node in c.nodes:
            clustertest.delete_and_wait("pod", writer(node), APP)
            wait_for("%s's bridge to hold no record" % node.name,
                     lambda: not bridge_records(node), 60)
            if volumes[node.name]:
                flexcsi_on(node, "volume", "delete", "--endpoint", CSI_ENDPOINT, "--id",
                           volumes[node.name])
        c.kubectl("delete", "daemonset", "-n", NS, DAEMONSET, "--ignore-not-found",
                  "--wait=false")
        c.kubectl("delete", "deployment", "-n", NS, PROVISIONER, "--ignore-not-found",
                  "--wait=false")
        c.kubectl("delete", "storageclass", STORAGE_CLASS, "--ignore-not-found", "--wait=false")
        for kind, name, ns in (("serviceaccount", PROVISIONER, NS), ("role", PROVISIONER +
                               "-leader-election", NS), ("rolebinding", PROVISIONER +
                               "-leader-election", NS), ("clusterrole", PROVISIONER, None),
                               ("clusterrolebinding", PROVISIONER, None)):
            c.delete(kind, name, ns)
        c.delete("lease", LEASE, NS)
        c.kubectl("label", "node", provisioner_node(c).name, CONTROL_PLANE + "-", check=False)
        c.kubectl("delete", "configmap", "-n", NS, "-l", "app.kubernetes.io/part-of=flexcsi",
                  "--wait=false")
        c.kubectl("delete", "namespace", APP, "--ignore-not-found", "--wait=false")
        c.kubectl("delete", "pv", *[writer(n) for n in c.nodes], "--ignore-not-found",
                  "--wait=false")
        wait_for("flexcsi-node's and flexcsi-provisioner's pods gone", lambda: not any(
            c.kubectl_json("get", "pods", "-n", NS, "-l", s)["items"]
            for s in (NODE_PODS, PROVISIONER_PODS)), 90)
        # the controller's intent journal (its hostPath), left for the operator as the others
        provisioner_node(c).in_node("rm", "-r", "/var/lib/flexcsi/provisioner", check=False)
        for node in c.nodes:  # docs/operations.md, "Uninstall": left for the operator
            node.in_node("rm", "-r", os.path.join(PLUGIN_DIR, "flexcsi~loopback"), check=False)
        print("\n(uninstalled in %.1f s)" % (time.monotonic() - began), flush=True)

    def assertRunning(self, release, when):
        c = clustertest.CLUSTER
        self.assertEqual({n.name: running_releases(n) for n in c.nodes},
                         {n.name: (release, release) for n in c.nodes},
                         "%s: (bridge, flexexec) per node" % when)

    def roll(self, tag, what):
        """Applies the install with `tag` while the writers write and checks the rollout
        (module docstring); returns its figures."""
        c = clustertest.CLUSTER
        nodes = [n.name for n in c.nodes]
        writers = {n.name: get("pod", writer(n), APP) for n in c.nodes}
        mounts = {n.name: node_volume_mounts(n) for n in c.nodes}
        self.assertTrue(all(mounts.values()), "a writer's volume is not mounted: %s" % mounts)
        old_controller = [p["metadata"]["uid"] for p in controller_pods()]
        self.assertEqual(len(old_controller), 1, "%s: one controller pod before" % what)
        watch = PodWatch(NS, NODE_PODS)
        controller_watch = PodWatch(NS, PROVISIONER_PODS)
        lease_watch = PodWatch(NS, None, kind="leases")
        new_image = "%s:%s" % (IMAGE, tag)
        try:
            wait_for("the watch's first state", lambda: watch.availability(nodes) and all(
                watch.availability(nodes)[-1][1].values()) and controller_watch.events
                and lease_watch.events, 30)
            began, since = time.monotonic(), uptime()
            install(c, tag)
            wait_for("flexcsi-node rolled to %s on both nodes" % tag,
                     lambda: rolled_out("daemonset", DAEMONSET, NS, new_image), 240)
            rollout, until = time.monotonic() - began, uptime()
            # the Deployment rolled in the same apply: one pod, a new one, Ready and leading
            controller = wait_for("flexcsi-provisioner rolled to %s" % tag, lambda: rolled_out(
                "deployment", PROVISIONER, NS, new_image) and self.new_leader(old_controller),
                180)
            controller_rollout = time.monotonic() - began
            # the watches, which may lag the reads above, see it too before they stop
            wait_for("the watches to see %s Ready and leading" % controller, lambda: STEPS[-1] in
                     dict(controller_watch.steps(provisioner_node(c).name, new_image))
                     and lease_taken(lease_watch, controller) is not None, 30)
        finally:
            for w in (watch, controller_watch, lease_watch):
                w.stop()
        rolled_at = {n.name: len(read_log(n)) for n in c.nodes}

        def written_after_the_rollout(node):
            lines = read_log(node)
            return lines if len(lines) >= rolled_at[node.name] + 5 else None
        logs = {n.name: wait_for("%s's writes after the %s" % (writer(n), what),
                                 lambda: written_after_the_rollout(n), 30) for n in c.nodes}

        # One node at a time: never both without a Ready bridge, and the second node's old pod
        # told to stop only once the first node's new pod was Ready. From the first state with
        # both up: the watch's first events may carry the same uptime as `since`.
        timeline = watch.availability(nodes)
        timeline = timeline[next(i for i, e in enumerate(timeline) if all(e[1].values())):]
        self.assertFalse([t for t, up, _ in timeline if not any(up.values())],
                         "%s: both nodes without a Ready bridge at once" % what)
        steps = {n: dict(watch.steps(n, new_image)) for n in nodes}
        for n in nodes:
            self.assertEqual(set(steps[n]), set(STEPS), "%s, %s: %s" % (what, n, steps[n]))
            self.assertEqual(timeline[-1][2][n], {new_image}, n)
        first, second = sorted(nodes, key=lambda n: steps[n]["old pod told to stop"])
        self.assertLessEqual(steps[first]["Ready"], steps[second]["old pod told to stop"])
        down = {n: sum(b - a for a, b in outages(timeline, nodes)[n]) for n in nodes}

        gaps = {}
        for node in c.nodes:
            after = get("pod", writer(node), APP)
            self.assertEqual(after["metadata"]["uid"], writers[node.name]["metadata"]["uid"])
            self.assertEqual(after["status"]["containerStatuses"][0]["restartCount"], 0)
            writes = WriteLog(logs[node.name])
            self.assertEqual((writes.missing, writes.in_order), ([], True),
                             "%s, %s: a write is missing" % (what, node.name))
            self.assertNotIn("FAILED", c.kubectl("logs", "-n", APP, writer(node)))
            gaps[node.name] = writes.longest_gap(since, until)[0]
            self.assertEqual(node_volume_mounts(node), mounts[node.name],
                             "%s: %s's volume was mounted again" % (what, node.name))
            # the new bridge took over the old one's records of the writer's volume
            self.assertIn(writer(node), json.dumps(bridge_records(node)))
        timed("%s: node DaemonSet rolled across both nodes (apply to both new bridges Ready)"
              % what, rollout)
        self.assertEqual(controller_release(controller), tag, "%s: the controller" % what)
        self.controller_handover(what, controller, controller_watch, lease_watch, new_image,
                                 since)
        timed("%s: controller Deployment rolled (apply to the new pod Ready and leading)" % what,
              controller_rollout)
        for n in (first, second):
            print("\nMEASURED %s: %s rolled, from the apply: %s; without a Ready bridge %.1f s; "
                  "longest write gap %.2f s (a write every 0.2 s)" % (
                      what, n, ", ".join("%s %.1f s" % (step, steps[n][step] - since)
                                         for step in STEPS), down[n], gaps[n]), flush=True)
        return gaps

    def new_leader(self, old_uids):
        """The name of flexcsi-controller's pod once it is the only one, not one of `old_uids`,
        Ready and holding the Lease; else None."""
        pods = clustertest.CLUSTER.kubectl_json("get", "pods", "-n", NS, "-l",
                                                PROVISIONER_PODS)["items"]
        if len(pods) != 1 or pods[0]["metadata"]["uid"] in old_uids or not ready(pods[0]):
            return None
        name = pods[0]["metadata"]["name"]
        return name if lease_holder(get("lease", LEASE, NS) or {}) == name else None

    def controller_handover(self, what, pod, pods, leases, new_image, since):
        """Checks the controller's rollout as the watches saw it and prints its steps and its
        hand-over: from the old pod told to stop to the new pod holding the Lease."""
        node = provisioner_node(clustertest.CLUSTER).name
        steps = dict(pods.steps(node, new_image))
        self.assertEqual(set(steps), set(STEPS), "%s, the controller: %s" % (what, steps))
        # maxSurge 0 (tests/cluster/deploy/multinode): the old pod goes before the new one
        self.assertLessEqual(steps["gone"], steps["new pod created"], what)
        taken = lease_taken(leases, pod)
        restarts = get("pod", pod, NS)["status"]["containerStatuses"][0]["restartCount"]
        self.assertEqual(restarts, 0, "%s: the new controller restarted" % what)
        handover = taken - steps[STEPS[0]]
        print("\nMEASURED %s: controller rolled, from the apply: %s, Lease taken %.1f s; "
              "hand-over (old pod told to stop to the new one leading) %.1f s" % (
                  what, ", ".join("%s %.1f s" % (step, steps[step] - since) for step in STEPS),
                  taken - since, handover), flush=True)

    def assertProvisions(self, claim, when):
        """A claim made now is provisioned by the running controller: Bound to one PV of the
        FlexVolume driver whose volume is in the node's csi-loopback, the claim named in the
        controller pod's log. Returns (PV name, volume id)."""
        c = clustertest.CLUSTER
        began = time.monotonic()
        apply([claim_object(claim)])
        wait_for("claim %s Bound" % claim, lambda: (get("pvc", claim, APP) or {}).get(
            "status", {}).get("phase") == "Bound", 120)
        timed("%s: claim %s made to Bound" % (when, claim), time.monotonic() - began)
        pvs = pvs_of(claim)
        self.assertEqual(len(pvs), 1, "%s: PVs of %s" % (when, claim))
        pv = pvs[0]
        self.assertEqual(pv["spec"]["flexVolume"]["driver"], FLEX_DRIVER)
        volume = pv["spec"]["flexVolume"]["options"]["volumeID"]
        self.assertIn(volume, loopback_volumes(provisioner_node(c)), when)
        pod = controller_pods()[0]["metadata"]["name"]
        self.assertIn("provisioned PV %s (volume %s) for claim %s/%s" % (
            pv["metadata"]["name"], volume, APP, claim),
            c.kubectl("logs", "-n", NS, pod, "-c", "controller"), when)
        return pv["metadata"]["name"], volume

    def test_upgrade_then_downgrade_roll_node_by_node_while_pods_write(self):
        c = clustertest.CLUSTER
        previous = PREVIOUS["release"]
        for node in c.nodes:
            wait_for("%s's first writes" % writer(node), lambda: len(read_log(node)) >= 5, 30)
        self.assertRunning(previous, "installed")
        self.assertEqual(controller_release(controller_pods()[0]["metadata"]["name"]), previous)
        upgrade = "upgrade %s -> %s" % (previous, TAG)
        gaps = {upgrade: self.roll(TAG, upgrade)}
        self.assertRunning(TAG, upgrade)
        claims = {"after-upgrade": self.assertProvisions("after-upgrade", upgrade)}
        downgrade = "downgrade %s -> %s" % (TAG, previous)
        gaps[downgrade] = self.roll(previous, downgrade)
        self.assertRunning(previous, downgrade)
        claims["after-downgrade"] = self.assertProvisions("after-downgrade", downgrade)
        for what, per_node in gaps.items():
            for n, gap in per_node.items():
                self.assertLess(gap, HUNG_VOLUME_S, "%s: %s's writer hung" % (what, n))

        # Afterwards the previous release unmounts and unstages every volume (there is no
        # attach: module docstring).
        began = time.monotonic()
        c.kubectl("delete", "pods", "-n", APP, "--all", "--wait=false")
        for node in c.nodes:
            clustertest.delete_and_wait("pod", writer(node), APP)
            wait_for("%s's volume unmounted" % node.name, lambda: not node_volume_mounts(node),
                     60)
            wait_for("%s's bridge to hold no record" % node.name,
                     lambda: not bridge_records(node), 60)
        timed("after the downgrade, both writers deleted to every volume unmounted and "
              "unstaged", time.monotonic() - began)

        # and the previous release's controller deletes both claims' PVs and volumes, the one
        # this build's controller made too
        began = time.monotonic()
        for claim in claims:
            c.delete("pvc", claim, APP)
        wait_for("both claims' PVs deleted", lambda: not any(pvs_of(n) for n in claims), 120)
        node = provisioner_node(c)
        self.assertFalse({v for _, v in claims.values()} & loopback_volumes(node),
                         "a claim's CSI volume is left in csi-loopback")
        log = c.kubectl("logs", "-n", NS, controller_pods()[0]["metadata"]["name"],
                        "-c", "controller")
        for pv, volume in claims.values():
            self.assertIn("deleted volume %s of released PV %s" % (volume, pv), log)
        timed("after the downgrade, both claims deleted to their PVs and volumes deleted by %s's "
              "controller" % previous, time.monotonic() - began)
