#!/usr/bin/env python3
"""One command for a real single-node Kubernetes under a temp dir:

    FLEXCSI_KUBE_ASSETS=../shared/kube-assets tests/cluster/run_in_cluster.py [--keep] [-- CMD...]

Brings the cluster up in a private mount namespace, runs CMD with KUBECONFIG and the
FLEXCSI_CLUSTER_* variables set (without CMD: a shell line to paste, then waits for Ctrl-C),
and tears it down, leaving no process, mount, loop device or cgroup. The exit status is CMD's;
77 (with one line saying why) when FLEXCSI_KUBE_ASSETS is not set."""
import argparse
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import cluster as kube_cluster  # noqa: E402
import namespace  # noqa: E402

SKIP = 77


def default_cache():
    return os.environ.get("FLEXCSI_KUBE_ASSETS_CACHE",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                       "build", "kube-assets"))


def cluster_environment(c):
    env = dict(os.environ)
    env.update({
        "KUBECONFIG": c.kubeconfig,
        "FLEXCSI_CLUSTER_DIR": c.dir,
        "FLEXCSI_CLUSTER_NODE": c.node_name,
        "FLEXCSI_CLUSTER_KUBELET_ROOT": c.kubelet_root,
        "FLEXCSI_CLUSTER_PLUGIN_DIR": c.plugin_dir,
        "FLEXCSI_CLUSTER_CONTROLLER_PLUGIN_DIR": c.controller_plugin_dir,
        "FLEXCSI_CLUSTER_CONTAINERD": c.containerd_socket,
        "FLEXCSI_KUBE_BIN": c.bin,
    })
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    parser.add_argument("--cache", default=default_cache(), help="where the tarball is unpacked")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    try:
        bin_dir = assets.locate(os.path.abspath(args.cache))
    except assets.AssetsMissing as e:
        print("SKIP: " + str(e), flush=True)
        return SKIP
    if os.geteuid() != 0:
        print("run_in_cluster: needs root (kubelet, containerd, mounts)", file=sys.stderr)
        return 2
    namespace.enter_private_namespaces([os.path.abspath(__file__), *sys.argv[1:]])

    c = kube_cluster.Cluster(bin_dir, keep=args.keep)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (c.timings["up"], c.dir), flush=True)
        env = cluster_environment(c)
        if command:
            status = subprocess.run(command, env=env).returncode
        else:
            print("export KUBECONFIG=%s   # Ctrl-C tears the cluster down" % c.kubeconfig,
                  flush=True)
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
            status = 0
    finally:
        left = c.stop()
        print("cluster down in %.1f s%s" % (c.timings.get("down", 0),
                                           "; LEFT: " + ", ".join(left) if left else ""),
              flush=True)
    return status if not left else (status or 1)


if __name__ == "__main__":
    sys.exit(main())
