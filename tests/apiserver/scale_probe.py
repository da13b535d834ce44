#!/usr/bin/env python3
"""Figures for the fake API server itself (not a test): request latency, controller pass cost
and settle time with N bound PV/claim/pod triples. The numbers in README.md come from
`python3 tests/apiserver/scale_probe.py 1500`.
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakeapi.server import FakeApiServer  # noqa: E402
from testlib import PV, Client, claim, flex_pv, node, ns_path, pod  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    d = tempfile.mkdtemp(prefix="fake-apiserver-probe-")
    server = FakeApiServer(d, controller_delays={"pod_termination": 0.1, "detach": 0.1}).start()
    api = Client(server.port, d)
    try:
        api.create("/api/v1/nodes", node("node-1"))
        t = time.time()
        for _ in range(50):
            api.get("/version")
        print("GET /version: %.2f ms" % ((time.time() - t) / 50 * 1000))
        t = time.time()
        for i in range(n):
            api.create(PV, flex_pv("p%d" % i))
            api.create(ns_path("default", "persistentvolumeclaims"),
                       claim("p%d" % i, volume_name="p%d" % i))
            api.create(ns_path("default", "pods"), pod("p%d" % i, claim_name="p%d" % i,
                                                        node="node-1"))
        print("create: %.2f ms per object (%d objects)" % ((time.time() - t) / (3 * n) * 1000,
                                                            3 * n))
        t = time.time()
        settled = api.settle(600)["settled"]
        print("bind and run all: %.1f s (settled: %s)" % (time.time() - t, settled))
        t = time.time()
        server.controllers.run_pass()
        print("one controller pass: %.3f s" % (time.time() - t))
        t = time.time()
        items = api.get(PV)["items"]
        print("LIST of %d PVs: %.3f s" % (len(items), time.time() - t))
    finally:
        api.close()
        server.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
