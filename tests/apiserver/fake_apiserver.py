#!/usr/bin/env python3
"""A strict local stand-in for kube-apiserver (and the controllers flexcsi depends on), for
tests. Python standard library only. See README.md in this directory for the launch contract,
the /_fake/ controls and the table of modelled rules.

    python3 fake_apiserver.py --dir DIR [--port 0] [--token TOKEN]... [--delay-ms N]
"""
import argparse
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakeapi.server import FakeApiServer  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, help="state directory (certificates, kubeconfigs, port)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--token", action="append", default=[],
                   help="accepted bearer token (repeatable; default fake-token)")
    p.add_argument("--delay-ms", type=int, default=0, help="latency added to every API request")
    p.add_argument("--snapshot-crds", action="store_true",
                   help="serve snapshot.storage.k8s.io/v1 (the external-snapshotter CRDs)")
    p.add_argument("--version", default="v1.28.0", help="gitVersion reported by /version")
    p.add_argument("--no-leases", action="store_true",
                   help="do not serve coordination.k8s.io (a cluster older than 1.14)")
    p.add_argument("--without", action="append", default=[], metavar="GROUP/VERSION/RESOURCE",
                   help="do not serve this resource (repeatable), e.g. storage.k8s.io/v1/csinodes "
                        "for a cluster older than 1.17; v1/RESOURCE for the core group")
    p.add_argument("--state-file", default="",
                   help="journal of every write, replayed at start (survives kill -9)")
    p.add_argument("--no-controllers", action="store_true",
                   help="run no controllers (the bare API server)")
    p.add_argument("--pod-termination-ms", type=int, default=300,
                   help="how long the kubelet stand-in takes to stop a deleted pod")
    p.add_argument("--detach-ms", type=int, default=300,
                   help="how long after its last pod a volume stays attached to a node")
    p.add_argument("--csi-attacher", action="store_true",
                   help="run the csi-attacher stand-in: VolumeAttachments and the "
                        "external-attacher finalizer on attached CSI PVs")
    args = p.parse_args(argv)

    fake = FakeApiServer(args.dir, port=args.port, tokens=args.token or ["fake-token"],
                         delay_ms=args.delay_ms, snapshot_crds=args.snapshot_crds,
                         version=args.version, state_file=args.state_file or None,
                         run_controllers=not args.no_controllers, leases=not args.no_leases,
                         without=args.without,
                         csi_attacher=args.csi_attacher,
                         controller_delays={"pod_termination": args.pod_termination_ms / 1000.0,
                                            "detach": args.detach_ms / 1000.0})
    done = threading.Event()

    def on_signal(signum, frame):
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    fake.start()
    while not done.wait(1.0):
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
