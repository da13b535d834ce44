"""What every real-cluster suite shares: how it starts (skip line, private mount namespace),
one cluster per test module, and waiting on Kubernetes objects the way a person would.

A suite module ends with `if __name__ == "__main__": clustertest.main()` and uses
`clustertest.CLUSTER` in its tests."""
import base64
import functools
import json
import os
import re
import subprocess
import sys
import time
import unittest

import assets
import cluster as kube_cluster
from kube_version import KubeVersion
import namespace

CLUSTER = None
SKIP = 77
BUSYBOX = "localhost/flexcsi/busybox:1"


def build_dir():
    return os.environ.get("FLEXCSI_BUILD_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")


def image_archive():
    """The flexcsi container image of this build (ctest's deploy_test_image fixture,
    tests/deploy/build_test_image.sh), as a docker archive for a node's containerd."""
    return os.environ.get("FLEXCSI_IMAGE_ARCHIVE") or os.path.join(
        build_dir(), "image", "flexcsi-image.tar")


def flexcsi_version():
    """The release of the top-level CMakeLists.txt's project(flexcsi VERSION ...), read as
    scripts/build-image.sh reads it to tag the image ("0.2.0"); the tests' install overlays
    under deploy/ name the same tag (ctest's versions_agree checks that)."""
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    with open(top) as f:
        found = re.search(r"^project\(flexcsi VERSION ([0-9.]+)", f.read(), re.MULTILINE)
    if not found:
        raise RuntimeError("no project(flexcsi VERSION ...) in " + top)
    return found.group(1)


def timed(label, seconds):
    """One line the CI log keeps: what was measured and how long it took."""
    print("\nMEASURED %s: %.1f s" % (label, seconds), flush=True)


def main(pod_network=False, failfast=False):
    """Skips with one line (exit 77) without assets; otherwise re-runs itself in a private
    mount namespace (and, for a suite whose pods use the pod network, a private network
    namespace) and runs the module's tests; failfast for suites whose tests are steps of one
    story."""
    try:
        bin_dir = assets.locate(os.environ.get("FLEXCSI_KUBE_ASSETS_CACHE")
                                or os.path.join(build_dir(), "kube-assets"))
    except assets.AssetsMissing as e:
        print("SKIP: " + str(e), flush=True)
        sys.exit(SKIP)
    release = os.environ.get(assets.RELEASE_VARIABLE)
    version = KubeVersion.of_binaries(bin_dir)
    if release and not str(version).startswith(release + "."):
        sys.exit("%s=%s, but the binaries in %s are %s" % (assets.RELEASE_VARIABLE, release,
                                                           bin_dir, version))
    namespace.enter_private_namespaces(sys.argv, network=pod_network)
    os.environ["FLEXCSI_KUBE_BIN"] = bin_dir
    runner = unittest.TextTestRunner(resultclass=_TimedResult, verbosity=2, failfast=failfast)
    unittest.main(module="__main__", testRunner=runner)


class _TimedResult(unittest.TextTestResult):
    """Prints each test's wall time after its verdict, so that a CI log shows where a suite's
    minutes go (Python 3.11's unittest has no --durations)."""

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.stream.writeln("    (%.1f s)" % (time.monotonic() - self._started))
        self.stream.flush()


def start_cluster(**options):
    """For setUpModule: one cluster for the module's tests (options: see Cluster)."""
    global CLUSTER
    CLUSTER = kube_cluster.Cluster(os.environ["FLEXCSI_KUBE_BIN"],
                                   keep=bool(os.environ.get("FLEXCSI_KEEP_TEST_DIR")), **options)
    CLUSTER.start()
    print("\ncluster up in %.1f s" % CLUSTER.timings["up"], flush=True)
    return CLUSTER


def needs(feature, reason):
    """Decorates a test that the cluster's Kubernetes must have `feature` for (a KubeVersion
    property); elsewhere the test is skipped with `reason` in one line."""
    def decorate(test):
        @functools.wraps(test)
        def run(self, *args, **kwargs):
            if not getattr(CLUSTER.version, feature):
                self.skipTest("Kubernetes %s: %s" % (CLUSTER.version, reason))
            return test(self, *args, **kwargs)
        return run
    return decorate


def stop_cluster(*components):
    """For tearDownModule: stops the suite's own `components` (anything with stop(); None is
    skipped), then the cluster, even when a stop failed; fails the run when anything was left
    behind."""
    try:
        for component in components:
            if component is not None:
                component.stop()
    finally:
        _stop_cluster()


def _stop_cluster():
    global CLUSTER
    if CLUSTER is None:
        return
    c, CLUSTER = CLUSTER, None
    left = c.stop()
    print("cluster down in %.1f s" % c.timings["down"], flush=True)
    if left:
        raise AssertionError("teardown left: " + ", ".join(left))


def controller_events(ns, name, reason):
    """flexcsi-controller's events of `reason` on the object: [(count, message)]."""
    items = CLUSTER.kubectl_json(
        "get", "events", "-n", ns, "--field-selector",
        "reason=%s,involvedObject.name=%s" % (reason, name))["items"]
    return [(e.get("count", 1), e["message"]) for e in items
            if e.get("source", {}).get("component") == "flexcsi-controller"]


def wait_for(what, check, timeout=90, interval=0.5):
    """Polls `check()` until it returns a truthy value, which is returned."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except Exception as e:  # noqa: BLE001 - the last error is reported on time-out
            result, last = None, e
        if result:
            return result
        time.sleep(interval)
    raise AssertionError("timed out after %d s waiting for %s%s"
                         % (timeout, what, " (last error: %s)" % last if last else ""))


def claims_bound(ns, names):
    """{name: claim} of the namespace's claims once every one of `names` is Bound, else None.
    One list call, not one get per claim: with 50 claims a poll of single gets took 12 s."""
    listed = {pvc["metadata"]["name"]: pvc
              for pvc in CLUSTER.kubectl_json("get", "pvc", "-n", ns)["items"]}
    return listed if all(listed.get(n, {}).get("status", {}).get("phase") == "Bound"
                         for n in names) else None


def pvs_by_name():
    """Every PV of the cluster, {name: PV}, in one list call."""
    return {pv["metadata"]["name"]: pv for pv in CLUSTER.kubectl_json("get", "pv")["items"]}


def run(args, **kwargs):
    """subprocess.run of a command that must succeed; its failure names the command and what it
    wrote to stderr, which check=True would leave out of the test's report."""
    r = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def apply(objects):
    """kubectl apply of one object or a list of them (dicts). Without kubectl's client-side
    schema validation: it costs 0.6 s of CPU an apply (the server's OpenAPI document parsed each
    time), more than anything else a suite runs. The API server still refuses an invalid object;
    the manifests users apply (deploy/) are validated (deploy suite, tests/deploy)."""
    items = objects if isinstance(objects, list) else [objects]
    CLUSTER.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": items}))


def get(kind, name, ns=None):
    args = ["get", kind, name] + (["-n", ns] if ns else [])
    try:
        return CLUSTER.kubectl_json(*args)
    except kube_cluster.ClusterError as e:
        if "NotFound" in str(e) or "not found" in str(e):
            return None
        raise


def pod_events(ns, pod):
    """The pod's events, one "REASON MESSAGE" line each; "" when they cannot be read."""
    try:
        items = CLUSTER.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                     "involvedObject.name=" + pod)["items"]
    except kube_cluster.ClusterError:
        return ""
    return "\n".join("%s %s" % (e.get("reason", ""), e.get("message", "")) for e in items)


def wait_pod_running(ns, name, timeout=120):
    def running():
        pod = get("pod", name, ns)
        if pod and pod.get("status", {}).get("phase") in ("Failed", "Succeeded"):
            raise AssertionError("pod %s/%s ended: %s" % (ns, name, pod["status"]))
        return pod and any(c["type"] == "Ready" and c["status"] == "True"
                           for c in pod.get("status", {}).get("conditions", []))
    try:
        return wait_for("pod %s/%s to run" % (ns, name), running, timeout)
    except AssertionError as e:
        raise AssertionError("%s\nevents:\n%s" % (e, pod_events(ns, name))) from None


def delete_and_wait(kind, name, ns=None, timeout=120):
    CLUSTER.delete(kind, name, ns)
    wait_for("%s %s to be gone" % (kind, name), lambda: get(kind, name, ns) is None, timeout)


# What kubectl exec answers while a restarted kubelet has not yet taken its pods back.
_KUBELET_CATCHING_UP = ("pod does not exist", "container not found", "No such container")


def exec_in(ns, pod, *command, container=None, check=True, timeout=60):
    args = ["exec", "-n", ns, pod] + (["-c", container] if container else []) + ["--", *command]
    deadline = time.monotonic() + timeout
    while True:
        r = subprocess.run(["kubectl", "--kubeconfig", CLUSTER.kubeconfig, *args],
                           capture_output=True, text=True, timeout=60)
        if not (r.returncode != 0 and any(m in r.stderr for m in _KUBELET_CATCHING_UP)
                and time.monotonic() < deadline):
            break
        time.sleep(0.5)
    if check and r.returncode != 0:
        raise AssertionError("exec in %s/%s %s: %s%s" % (ns, pod, command, r.stdout, r.stderr))
    return r.stdout


def service_account_kubeconfig(c, namespace, name):
    """A kubeconfig with a token of the service account, as its pod would have: a TokenRequest
    where the API serves one (1.20 on), else the token the token controller put in the service
    account's secret (Kubernetes 1.10)."""
    if c.version.at_least(20):
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 7200}}
        path = "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name)
        token = json.loads(c.kubectl("create", "--raw", path, "-f", "-",
                                     input=json.dumps(request)))["status"]["token"]
    else:
        secret = wait_for("the token secret of %s/%s" % (namespace, name), lambda: (
            (c.kubectl_json("get", "serviceaccount", name, "-n", namespace).get("secrets")
             or [{}])[0].get("name")), 60)
        token = base64.b64decode(c.kubectl_json("get", "secret", secret, "-n", namespace)
                                 ["data"]["token"]).decode()
    kubeconfig = os.path.join(c.dir, name + ".kubeconfig")
    with open(kubeconfig, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config",
                   "clusters": [{"name": "c", "cluster": {"server": c.server,
                                                          "certificate-authority": c.ca}}],
                   "users": [{"name": name, "user": {"token": token}}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": name}}],
                   "current-context": "c"}, f)
    os.chmod(kubeconfig, 0o600)
    return kubeconfig


def namespace_object(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def busybox_pod(ns, name, volumes, mounts, command="sleep 3600", fs_group=None,
                node=None):
    """A hostNetwork busybox pod (there is no CNI) that mounts `volumes`."""
    spec = {
        "hostNetwork": True,
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", command], "volumeMounts": mounts}],
        "volumes": volumes,
    }
    if fs_group is not None:
        spec["securityContext"] = {"fsGroup": fs_group}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": spec}
