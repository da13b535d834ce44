"""The suite's own plain requests, from this process: `kubectl get ... -o json` answered by one
HTTPS GET, and `kubectl delete KIND NAME --ignore-not-found --wait=false` by one DELETE.

The suites poll objects every half second and delete what each test made. A kubectl process
costs about 0.2 s of CPU (start-up, its discovery cache, TLS), far more than the API server spends
answering, and on a 2-core machine running two suites those processes alone took a large share
of the CPU. Only the kinds below are served here, with kubectl's output: the object, or a List
whose items carry apiVersion and kind. Any other argument goes to kubectl itself (Cluster
decides)."""
import http.client
import json
import ssl
import threading
import urllib.parse

# kubectl's names for a kind (singular, plural, short) -> (API group, plural, namespaced).
_KINDS = {}
for _group, _plural, _namespaced, _names in (
        ("", "pods", True, ("pod", "po")),
        ("", "persistentvolumes", False, ("persistentvolume", "pv")),
        ("", "persistentvolumeclaims", True, ("persistentvolumeclaim", "pvc")),
        ("", "nodes", False, ("node", "no")),
        ("", "namespaces", False, ("namespace", "ns")),
        ("", "events", True, ("event", "ev")),
        ("", "secrets", True, ("secret",)),
        ("", "serviceaccounts", True, ("serviceaccount", "sa")),
        ("", "configmaps", True, ("configmap", "cm")),
        ("apps", "deployments", True, ("deployment", "deploy")),
        ("apps", "daemonsets", True, ("daemonset", "ds")),
        ("apps", "statefulsets", True, ("statefulset", "sts")),
        ("apps", "replicasets", True, ("replicaset", "rs")),
        ("storage.k8s.io", "storageclasses", False, ("storageclass", "sc")),
        ("storage.k8s.io", "csinodes", False, ("csinode",)),
        ("storage.k8s.io", "csidrivers", False, ("csidriver",)),
        ("storage.k8s.io", "volumeattachments", False, ("volumeattachment",)),
        ("coordination.k8s.io", "leases", True, ("lease",)),
        ("snapshot.storage.k8s.io", "volumesnapshots", True, ("volumesnapshot", "vs")),
        ("snapshot.storage.k8s.io", "volumesnapshotcontents", False,
         ("volumesnapshotcontent", "vsc"))):
    for _name in (_plural,) + _names:
        _KINDS[_name] = (_group, _plural, _namespaced)


class NotServed(Exception):
    """The request needs kubectl after all: discovery lists no version of the group serving the
    resource (CRDs not installed yet; CSINode on 1.10)."""


def knows(kind):
    """Whether requests for `kind` (any of kubectl's names for it) can be made here."""
    return kind in _KINDS


def parse_get(args):
    """kubectl arguments `get KIND [NAME] [-n NS] [-l SEL] [--field-selector SEL] [-A]` as a
    dict for ApiRequests.get; None for anything else."""
    if len(args) < 2 or args[0] != "get" or args[1] not in _KINDS:
        return None
    read = {"kind": args[1], "name": None, "ns": None, "labels": None, "fields": None,
            "all_namespaces": False}
    rest = list(args[2:])
    if rest and not rest[0].startswith("-"):
        read["name"] = rest.pop(0)
    while rest:
        flag = rest.pop(0)
        if flag in ("-n", "--namespace", "-l", "--selector", "--field-selector") and rest:
            key = {"-n": "ns", "--namespace": "ns", "-l": "labels", "--selector": "labels",
                   "--field-selector": "fields"}[flag]
            read[key] = rest.pop(0)
        elif flag in ("-A", "--all-namespaces"):
            read["all_namespaces"] = True
        else:
            return None
    if read["name"] is not None and (read["labels"] or read["fields"]):
        return None  # kubectl refuses that; let it say so
    return read


def _missing_object(kind, body):
    """The Status of a 404 that names a missing object; a bare "404 page not found" means the
    server does not serve the resource at all, raised as kubectl words it."""
    try:
        return json.loads(body)
    except ValueError:
        raise RuntimeError('error: the server doesn\'t have a resource type "%s"' % kind) from None


class ApiRequests:
    """Requests as the admin, over a TLS connection per call (callers poll from several
    threads)."""

    def __init__(self, server, ca, cert, key, default_namespace="default"):
        url = urllib.parse.urlsplit(server)
        self._host, self._port = url.hostname, url.port
        self._context = ssl.create_default_context(cafile=ca)
        self._context.load_cert_chain(cert, key)
        self._default_namespace = default_namespace
        self._versions = {}  # (API group, plural) -> the version serving it
        self._lock = threading.Lock()

    def get(self, kind, name=None, ns=None, labels=None, fields=None, all_namespaces=False):
        """What `kubectl get` prints with -o json; raises LookupError (NotFound, with kubectl's
        words) or RuntimeError (any other failure). Without `ns`, a namespaced kind is read in
        the kubeconfig's namespace, as kubectl does, unless `all_namespaces`."""
        path = self._path(kind, name, ns, all_namespaces and name is None)
        query = {k: v for k, v in (("labelSelector", labels), ("fieldSelector", fields)) if v}
        status, body = self._request("GET", path + (
            "?" + urllib.parse.urlencode(query) if query else ""))
        if status == 404:
            raise LookupError("Error from server (NotFound): "
                              + _missing_object(kind, body).get("message", body))
        if status != 200:
            raise RuntimeError("GET %s: %d %s" % (path, status, body.strip()))
        answer = json.loads(body)
        if name is None:
            item_kind = answer.get("kind", "")[:-len("List")]
            answer = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                      "items": [dict(item, apiVersion=answer.get("apiVersion"), kind=item_kind)
                                for item in answer.get("items") or []]}
        return answer

    def delete(self, kind, name, ns=None):
        """`kubectl delete KIND NAME [-n NS] --ignore-not-found --wait=false`: one DELETE with
        kubectl's background propagation; an object already gone is no error. Raises
        RuntimeError on any other failure."""
        path = self._path(kind, name, ns)
        status, body = self._request("DELETE", path, json.dumps(
            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}))
        if status == 404:
            _missing_object(kind, body)  # gone already, as --ignore-not-found; or not served
        elif status not in (200, 202):
            raise RuntimeError("DELETE %s: %d %s" % (path, status, body.strip()))

    def _path(self, kind, name, ns, all_namespaces=False):
        """The URL path of `kind` (its one object `name`, or all of them); a namespaced kind
        lies in `ns`, or in the kubeconfig's namespace as kubectl has it, unless in all."""
        group, plural, namespaced = _KINDS[kind]
        path = "/api/v1" if not group else "/apis/%s/%s" % (group, self._version(group, plural))
        if namespaced and not all_namespaces:
            path += "/namespaces/" + (ns or self._default_namespace)
        return path + "/" + plural + ("/" + name if name is not None else "")

    def _version(self, group, plural):
        """The group's version serving `plural`, as kubectl resolves it: the preferred version
        if it lists the resource, else the first other one that does (1.10 serves
        VolumeAttachments in storage.k8s.io/v1beta1 only, while v1 is preferred)."""
        with self._lock:
            if (group, plural) not in self._versions:
                groups = {g["name"]: g for g in self._json("/apis").get("groups", [])}
                if group not in groups:  # CRDs not installed (yet): kubectl says what is
                    raise NotServed(group)
                preferred = groups[group]["preferredVersion"]["version"]
                versions = [preferred] + [v["version"] for v in groups[group]["versions"]
                                          if v["version"] != preferred]
                for version in versions:
                    listed = self._json("/apis/%s/%s" % (group, version)).get("resources", [])
                    if any(r["name"] == plural for r in listed):
                        self._versions[(group, plural)] = version
                        break
                else:
                    raise NotServed(group + "/" + plural)
            return self._versions[(group, plural)]

    def status(self, path, timeout=60):
        """The HTTP status of a GET of `path` (a health endpoint, say); raises OSError or
        http.client.HTTPException when no answer comes."""
        return self._request("GET", path, timeout=timeout)[0]

    def _json(self, path):
        status, body = self._request("GET", path)
        if status != 200:
            raise RuntimeError("GET %s: %d %s" % (path, status, body.strip()))
        return json.loads(body)

    def _request(self, method, path, body=None, timeout=60):
        connection = http.client.HTTPSConnection(self._host, self._port, context=self._context,
                                                 timeout=timeout)
        headers = {"Accept": "application/json",
                   # Not kubectl's agent, and not starting with "flexcsi": suites pick flexcsi's
                   # own requests out of the audit log by their agent.
                   "User-Agent": "cluster-suite-requests"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()
