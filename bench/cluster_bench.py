"""What the real-cluster benchmarks share: finding Kubernetes' binaries and flexcsi in the build,
and one single-node v1.24 cluster of the tests/cluster harness, up for the length of a `with`
block and torn down (with what it left reported) however the block ends."""
import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
import assets  # noqa: E402
import cluster as kube_cluster  # noqa: E402
import namespace  # noqa: E402

SKIP = 77  # as the cluster suites: no Kubernetes binaries, nothing to measure


def build_dir():
    return os.environ.get("FLEXCSI_BUILD_DIR") or os.path.join(HERE, "..", "build")


def flexcsi_binary():
    return os.path.abspath(os.path.join(build_dir(), "cli", "flexcsi"))


@contextlib.contextmanager
def bench_cluster(script, keep=False, nodes=1, controller_manager_flags=()):
    """Re-runs `script` (with this process's arguments) in private namespaces, then yields a
    started cluster of `nodes` kubelet nodes, kube-controller-manager with
    `controller_manager_flags` too. Exits with SKIP, saying why in one line, where the binaries
    are missing."""
    try:
        bin_dir = assets.locate(os.environ.get("FLEXCSI_KUBE_ASSETS_CACHE")
                                or os.path.join(build_dir(), "kube-assets"))
    except assets.AssetsMissing as e:
        print("SKIP: " + str(e))
        sys.exit(SKIP)
    # several nodes: each in a network namespace of its own, made inside a private one
    namespace.enter_private_namespaces([os.path.abspath(script), *sys.argv[1:]],
                                       network=nodes > 1)
    # Kubernetes' own claim sync period (the tests' cluster makes it 5 s): the migrate
    # benchmarks measure a move as a real cluster paces it
    c = kube_cluster.Cluster(bin_dir, keep=keep, nodes=nodes,
                             controller_manager_flags=["--pvclaimbinder-sync-period=15s",
                                                       *controller_manager_flags])
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (c.timings["up"], c.dir), flush=True)
        yield c
    finally:
        left = c.stop()
        print("cluster down%s" % ("; LEFT: " + ", ".join(left) if left else ""), flush=True)
