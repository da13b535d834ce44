"""FakeApiServer: assembles store, API, controllers and the HTTPS listener; used by
fake_apiserver.py (the command) and in-process by the server's own tests."""
import os
import socket
import ssl
import threading
import time
from http.server import ThreadingHTTPServer

from . import tls_material
from .api_ops import Api
from .audit import Audit
from .control import Control, FailureInjector, ReadCounter
from .controllers.base import ControllerManager
from .handler import ApiHandler
from .open_watches import OpenWatches
from .resources import Registry
from .store import Store, HISTORY_LIMIT

BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class _TlsHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ssl_context = None

    def finish_request(self, request, client_address):
        # The TLS handshake runs here, in the connection's own thread, so one slow or broken
        # client cannot stall accept().
        try:
            # Replies go out as headers then body: without TCP_NODELAY, Nagle's algorithm and
            # the client's delayed ACK add ~40 ms to every request.
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request.settimeout(30)
            tls = self.ssl_context.wrap_socket(request, server_side=True)
            tls.settimeout(None)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        pass  # disconnects mid-request are normal for watch clients


class FakeApiServer(object):
    def __init__(self, directory, port=0, tokens=("fake-token",), delay_ms=0,
                 snapshot_crds=False, version="v1.28.0", state_file=None,
                 history_limit=HISTORY_LIMIT, run_controllers=True, controller_delays=None,
                 leases=True, csi_attacher=False, without=()):
        self.directory = os.path.abspath(directory)
        self.requested_port = port
        self.tokens = {}
        for i, tok in enumerate(tokens or ["fake-token"]):
            self.tokens[tok] = "user-%d" % (i + 1)
        self.first_token = (tokens or ["fake-token"])[0]
        self.delay_ms = delay_ms
        self.version = version
        self.stopping = False
        self.port = 0
        self.registry = Registry(snapshot_crds, leases, without)
        self.store = Store(history_limit, state_file)
        self.open_watches = OpenWatches(self.store)
        self.audit = Audit()
        self.api = Api(self.registry, self.store, self.audit)
        self.failures = FailureInjector()
        self.reads = ReadCounter()
        self.control = Control(self)
        self.delays = dict(controller_delays or {})
        self.csi_attacher = csi_attacher  # run the csi-attacher stand-in (VolumeAttachments)
        from .controllers import all_controllers
        self.controllers = ControllerManager(self, all_controllers(self) if run_controllers
                                             else [])
        self._httpd = None
        self._thread = None

    # ---- lifecycle ----

    def start(self):
        os.makedirs(self.directory, exist_ok=True)
        tls_material.ensure_certificates(self.directory)
        self._bootstrap()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(self.directory, "server.crt"),
                            os.path.join(self.directory, "server.key"))
        ctx.load_verify_locations(os.path.join(self.directory, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        handler = type("BoundApiHandler", (ApiHandler,), {"fake": self})
        self._httpd = _TlsHttpServer(("127.0.0.1", self.requested_port), handler)
        self._httpd.ssl_context = ctx
        self.port = self._httpd.server_address[1]
        tls_material.write_kubeconfigs(self.directory, self.port, self.first_token)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.2}, name="http", daemon=True)
        self._thread.start()
        self.controllers.start()
        port_file = os.path.join(self.directory, "port")
        with open(port_file + ".tmp", "w") as f:
            f.write("%d\n" % self.port)
        os.replace(port_file + ".tmp", port_file)
        return self

    def stop(self):
        self.stopping = True
        with self.store.lock:
            self.store.changed.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self.controllers.join(5)

    def _bootstrap(self):
        ns = self.registry.core("namespaces")
        for name in BOOTSTRAP_NAMESPACES:
            with self.store.lock:
                if self.store.get(ns.key, "", name) is None:
                    self.api.create(ns, "", {"metadata": {"name": name}},
                                    user="system:apiserver")

    # ---- per request ----

    def before_request(self, method, path, watching=False):
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000.0)
        self.failures.check(method, path, watching)

    # ---- discovery ----

    def version_info(self):
        v = self.version.lstrip("v").split(".")
        return {"major": v[0], "minor": v[1] if len(v) > 1 else "0",
                "gitVersion": self.version, "gitCommit": "fake", "gitTreeState": "clean",
                "buildDate": "2023-08-15T00:00:00Z", "goVersion": "go1.20",
                "compiler": "gc", "platform": "linux/amd64"}

    def _group_entry(self, group, version):
        gv = {"groupVersion": "%s/%s" % (group, version), "version": version}
        return {"name": group, "versions": [gv], "preferredVersion": gv}

    def group_list(self):
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self._group_entry(g, v) for g, v in self.registry.groups()]}

    def group(self, name):
        for g, v in self.registry.groups():
            if g == name:
                entry = self._group_entry(g, v)
                entry.update({"kind": "APIGroup", "apiVersion": "v1"})
                return entry
        return None
