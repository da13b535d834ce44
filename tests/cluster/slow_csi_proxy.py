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

--topology-as-asked imitates a driver whose volumes can live anywhere the provisioner asks, for
the scale tests: CreateVolume reaches the driver without its accessibility_requirements, and its
answer's volume is accessible from the first preferred segment of those requirements (else the
first requisite one). One csi-loopback, whose volumes live on its own node, then serves a
cluster of simulated nodes (node_simulator.py), and each PV names the node the provisioner chose
(a WaitForFirstConsumer claim's selected node), while the provisioners compute and send the
topology of every node as they would to a real topology-aware driver.
"""
import argparse
import json
import os
import threading
import time
from concurrent import futures

import grpc

# field numbers in csi.proto
ACCESSIBILITY_REQUIREMENTS = 7  # CreateVolumeRequest.accessibility_requirements
REQUISITE, PREFERRED = 1, 2     # TopologyRequirement.requisite, .preferred
RESPONSE_VOLUME = 1             # CreateVolumeResponse.volume
VOLUME_ACCESSIBLE_TOPOLOGY = 5  # Volume.accessible_topology


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


def fields(message):
    """The top-level fields of a serialized message: [(number, raw bytes, payload of a
    length-delimited field or None)]."""
    out, i = [], 0
    while i < len(message):
        start = i
        key, i = varint(message, i)
        wire, payload = key & 7, None
        if wire == 0:
            _, i = varint(message, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = varint(message, i)
            payload = message[i:i + size]
            i += size
        else:
            raise ValueError("wire type %d (groups are not in CSI)" % wire)
        out.append((key >> 3, message[start:i], payload))
    return out


def length_delimited(number, payload):
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def asked_topology(request):
    """(the CreateVolumeRequest without accessibility_requirements, the serialized Topology
    asked for first: preferred[0], else requisite[0], else None)."""
    kept, asked = b"", None
    for number, raw, payload in fields(request):
        if number != ACCESSIBILITY_REQUIREMENTS:
            kept += raw
            continue
        requirement = fields(payload)
        preferred = [p for n, _, p in requirement if n == PREFERRED]
        requisite = [p for n, _, p in requirement if n == REQUISITE]
        asked = (preferred or requisite or [None])[0]
    return kept, asked


def with_accessible_topology(response, topology):
    """The CreateVolumeResponse with its volume's accessible_topology replaced by `topology`."""
    out = b""
    for number, raw, payload in fields(response):
        if number == RESPONSE_VOLUME:
            volume = b"".join(r for n, r, _ in fields(payload) if n != VOLUME_ACCESSIBLE_TOPOLOGY)
            raw = length_delimited(RESPONSE_VOLUME,
                                   volume + length_delimited(VOLUME_ACCESSIBLE_TOPOLOGY, topology))
        out += raw
    return out


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
    def __init__(self, driver, delay, log, topology_as_asked=False):
        self.channel = grpc.insecure_channel("unix://" + driver)
        self.delay, self.log, self.lock = delay, log, threading.Lock()
        self.topology_as_asked = topology_as_asked

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
                if self.topology_as_asked:
                    request, asked = asked_topology(request)
                    try:
                        response = forward(request, timeout=context.time_remaining())
                    except grpc.RpcError as e:
                        context.abort(e.code(), e.details())
                    return response if asked is None else with_accessible_topology(response,
                                                                                   asked)
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
    parser.add_argument("--topology-as-asked", action="store_true",
                        help="volumes accessible where CreateVolume asks (see above)")
    parser.add_argument("--workers", type=int, default=64)
    args = parser.parse_args()
    if os.path.exists(args.listen):
        os.unlink(args.listen)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers))
    server.add_generic_rpc_handlers((SlowCreateVolume(args.driver, args.delay, args.log,
                                                      args.topology_as_asked),))
    server.add_insecure_port("unix://" + args.listen)
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
