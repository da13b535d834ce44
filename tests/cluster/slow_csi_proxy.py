#!/usr/bin/env python3
"""A CSI driver that takes seconds to create a volume: a gRPC proxy in front of a real driver's
socket that holds every CreateVolume for --delay seconds before passing it on, as real drivers
take time (ceph-csi about 0.3 s, cloud drivers several seconds). Every other call passes at once.

A CreateVolume whose caller went away while it was held (killed, or it cancelled the call) is
not passed on, as a driver drops a cancelled call it has not begun.

--log gets one JSON line per CreateVolume event, {"event": "received" | "forwarded" |
"dropped", "name": <the request's name>, "caller": <the caller's user agent>, "at": <unix
time>}, so that a test counts what reached the driver, and from whom.

    slow_csi_proxy.py --listen /path/proxy.sock --driver /path/csi.sock --delay 5 --log F
"""
import argparse
import json
import os
import threading
import time
from concurrent import futures

import grpc


def request_name(message):
    """Field 1 (name) of a serialized CreateVolumeRequest: the only field read here."""
    i = 0
    while i < len(message):
        key, i = varint(message, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(message, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = varint(message, i)
            if field == 1:
                return message[i:i + size].decode("utf-8", "replace")
            i += size
        else:
            break
    return ""


def varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


class SlowCreateVolume(grpc.GenericRpcHandler):
    def __init__(self, driver, delay, log):
        self.channel = grpc.insecure_channel("unix://" + driver)
        self.delay, self.log, self.lock = delay, log, threading.Lock()

    def record(self, event, name, caller):
        with self.lock, open(self.log, "a") as f:
            f.write(json.dumps({"event": event, "name": name, "caller": caller,
                                "at": time.time()}) + "\n")

    def service(self, details):
        method = details.method
        forward = self.channel.unary_unary(method)  # bytes in, bytes out

        def handle(request, context):
            if method.endswith("/CreateVolume"):
                caller = dict(details.invocation_metadata).get("user-agent", "")
                name = request_name(request)
                self.record("received", name, caller)
                until = time.monotonic() + self.delay
                while time.monotonic() < until:
                    if not context.is_active():
                        self.record("dropped", name, caller)
                        return b""
                    time.sleep(0.02)
                self.record("forwarded", name, caller)
            try:
                return forward(request, timeout=context.time_remaining())
            except grpc.RpcError as e:
                context.abort(e.code(), e.details())

        return grpc.unary_unary_rpc_method_handler(handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="the proxy's Unix socket")
    parser.add_argument("--driver", required=True, help="the real driver's Unix socket")
    parser.add_argument("--delay", type=float, required=True, help="seconds per CreateVolume")
    parser.add_argument("--log", required=True, help="JSON lines of the CreateVolume calls")
    args = parser.parse_args()
    if os.path.exists(args.listen):
        os.unlink(args.listen)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    server.add_generic_rpc_handlers((SlowCreateVolume(args.driver, args.delay, args.log),))
    server.add_insecure_port("unix://" + args.listen)
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
