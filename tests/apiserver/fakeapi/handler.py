"""HTTP routing: discovery, resource paths, watch streams, authentication and the /_fake/ test
controls. Everything is JSON; anything unserved answers a 404/405/415 Status.
"""
import json
import urllib.parse
from http.server import BaseHTTPRequestHandler

from . import errors
from .api_ops import begin_request, request_warnings
from .watch_stream import serve_watch

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
}


class Route(object):
    def __init__(self, rtype, namespace, name, subresource):
        self.rtype, self.namespace, self.name, self.subresource = (rtype, namespace, name,
                                                                   subresource)


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver"
    # Set by the server: the FakeApiServer instance.
    fake = None

    def log_message(self, fmt, *args):  # quiet: tests read the audit log instead
        pass

    # ---- plumbing ------------------------------------------------------------------------------

    def _send_json(self, code, body, headers=None):
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for warning in request_warnings():
            self.send_header("Warning", '299 - "%s"' % warning.replace('"', '\\"'))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_text(self, code, text):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, err):
        self._send_json(err.code, err.status(), err.headers)

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json_body(self, raw, allow_empty=False):
        if not raw:
            if allow_empty:
                return None
            raise errors.bad_request("the request body is empty")
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request("the body of the request could not be decoded as JSON: %s"
                                     % e)

    def _user(self):
        """The authenticated user, or None. A client certificate verified against the CA, or a
        bearer token given with --token."""
        cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v
            return "unknown-cert-user"
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth[len("Bearer "):].strip()
            if token in self.fake.tokens:
                return "token:" + self.fake.tokens[token]
        return None

    # ---- verbs ---------------------------------------------------------------------------------

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_OPTIONS(self):
        self._dispatch("OPTIONS")

    def _dispatch(self, method):
        try:
            raw = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        except (ValueError, OSError):
            self.close_connection = True
            return
        url = urllib.parse.urlsplit(self.path)
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query,
                                                              keep_blank_values=True).items()}
        field_validation = params.get("fieldValidation") or "Warn"
        begin_request(field_validation)
        try:
            user = self._user()
            if user is None:
                raise errors.unauthorized()
            if url.path.startswith("/_fake/"):
                code, body = self.fake.control.handle(method, url.path, params, raw)
                self._send_json(code, body)
                return
            if field_validation not in ("Strict", "Warn", "Ignore"):
                raise errors.bad_request('fieldValidation must be one of "Ignore", "Warn" or '
                                         '"Strict", got "%s"' % field_validation)
            self.fake.before_request(method, url.path,
                                     params.get("watch") in ("1", "true", "True")
                                     or "/watch/" in url.path)
            self._api(method, url.path, params, raw, user)
        except errors.ApiError as e:
            self._send_error(e)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug here must still answer, and be visible
            import traceback
            traceback.print_exc()
            self._send_error(errors.internal("%s: %s" % (type(e).__name__, e)))

    def _api(self, method, path, params, raw, user):
        parts = [p for p in path.split("/") if p]
        fake = self.fake
        if path in ("/healthz", "/readyz", "/livez"):
            return self._send_text(200, "ok")
        if path == "/version":
            return self._send_json(200, fake.version_info())
        if parts == ["api"]:
            return self._send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                         "serverAddressByClientCIDRs": [
                                             {"clientCIDR": "0.0.0.0/0",
                                              "serverAddress": "127.0.0.1:%d" % fake.port}]})
        if parts == ["apis"]:
            return self._send_json(200, fake.group_list())
        if len(parts) == 2 and parts[0] == "apis":
            group = fake.group(parts[1])
            if group is None:
                raise errors.resource_not_found()
            return self._send_json(200, group)
        if parts == ["api", "v1"]:
            return self._send_json(200, fake.registry.discovery_list("", "v1"))
        if len(parts) == 3 and parts[0] == "apis":
            if not fake.registry.in_group_version(parts[1], parts[2]):
                raise errors.resource_not_found()
            return self._send_json(200, fake.registry.discovery_list(parts[1], parts[2]))
        route, watch_path = self._route(parts)
        if watch_path:
            params["watch"] = "true"
        self._resource(method, route, params, raw, user)

    def _route(self, parts):
        """Parses /api/v1/... and /apis/<g>/<v>/... resource paths (and legacy /watch/ ones)."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.resource_not_found()
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path, rest = True, rest[1:]
        reg = self.fake.registry
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and reg.lookup(group, version, rest[2]):
            namespace, rest = rest[1], rest[2:]
            rtype = reg.lookup(group, version, rest[0])
            if not rtype.namespaced:
                raise errors.resource_not_found()
        else:
            rtype = reg.lookup(group, version, rest[0]) if rest else None
            if rtype is None:
                raise errors.resource_not_found()
            if rtype.namespaced and len(rest) > 1:
                # /api/v1/pods/x is not a path: named namespaced objects need their namespace.
                raise errors.resource_not_found()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or (sub and sub not in rtype.subresources):
            raise errors.resource_not_found()
        return Route(rtype, namespace, name, sub), watch_path

    def _dry_run(self, params):
        value = params.get("dryRun")
        if value is None or value == "":
            return False
        if value != "All":
            raise errors.bad_request('Invalid dryRun value: "%s". dryRun must be "All" or empty'
                                     % value)
        return True

    def _resource(self, method, r, params, raw, user):
        api = self.fake.api
        rtype = r.rtype
        if method in ("GET", "HEAD"):
            watching = params.get("watch") in ("1", "true", "True")
            self.fake.reads.record("watch" if watching else "get" if r.name else "list",
                                   rtype.plural, r.subresource)
            if r.name and watching and not r.subresource:
                # Watching a named path watches the collection narrowed to that name.
                selector = "metadata.name=" + r.name
                if params.get("fieldSelector"):
                    selector += "," + params["fieldSelector"]
                params["fieldSelector"] = selector
                return serve_watch(self, self.fake, r, params)
            if r.name:
                return self._send_json(200, api.get(rtype, r.namespace, r.name, r.subresource))
            if watching:
                return serve_watch(self, self.fake, r, params)
            limit = params.get("limit") or "0"
            try:
                limit = int(limit)
            except ValueError:
                raise errors.bad_request("invalid limit: %s" % limit)
            return self._send_json(200, api.list(rtype, r.namespace or None,
                                                 params.get("labelSelector", ""),
                                                 params.get("fieldSelector", ""), limit,
                                                 params.get("continue") or None))
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if method == "POST":
            if r.name:
                raise errors.method_not_allowed()
            self._require_json(content_type)
            body = self._json_body(raw)
            obj = api.create(rtype, r.namespace, body, self._dry_run(params), user)
            return self._send_json(201, obj)
        if method == "PUT":
            if not r.name:
                raise errors.method_not_allowed()
            self._require_json(content_type)
            body = self._json_body(raw)
            with self.fake.store.lock:  # reentrant: api.update takes it again
                existed = self.fake.store.get(rtype.key, r.namespace, r.name) is not None
                obj = api.update(rtype, r.namespace, r.name, body, self._dry_run(params), user,
                                 r.subresource)
            return self._send_json(200 if existed else 201, obj)
        if method == "PATCH":
            if not r.name:
                raise errors.method_not_allowed()
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None:
                raise errors.unsupported_media_type(content_type)
            body = self._json_body(raw)
            return self._send_json(200, api.patch(rtype, r.namespace, r.name, patch_type, body,
                                                  self._dry_run(params), user, r.subresource))
        if method == "DELETE":
            if r.subresource:
                raise errors.method_not_allowed()
            options = self._json_body(raw, allow_empty=True) or {}
            if not isinstance(options, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
            for key in ("propagationPolicy", "gracePeriodSeconds"):
                if key in params and key not in options:
                    options[key] = (int(params[key]) if key == "gracePeriodSeconds"
                                    else params[key])
            dry_run = self._dry_run(params) or options.get("dryRun") == ["All"]
            if not r.name:
                return self._send_json(200, api.delete_collection(
                    rtype, r.namespace, params.get("labelSelector", ""),
                    params.get("fieldSelector", ""), options, dry_run, user))
            code, body = api.delete(rtype, r.namespace, r.name, options, dry_run, user)
            return self._send_json(code, body)
        raise errors.method_not_allowed()

    def _require_json(self, content_type):
        if content_type not in ("application/json", ""):
            raise errors.unsupported_media_type(content_type)
