#!/usr/bin/python3
"""Offline validation of flexcsi's Kubernetes manifests, so that a typo cannot ship.

For every kustomization given (base and overlays) this
  1. renders it with the real `kubectl kustomize` (catches kustomize errors, bad patches,
     failed JSON-patch `test` guards, missing files);
  2. checks every object against the Kubernetes API schema, taken from the official Python
     client's generated models (Debian's python3-kubernetes, generated from the OpenAPI spec):
     unknown fields anywhere (a typo such as `mountPropogation`), wrong types, and required
     fields missing;
  3. applies the API server's own validation rules that a client dry-run would need a server
     for: DNS names, unique container/volume names, every volumeMount backed by a volume,
     Bidirectional propagation only in privileged containers, named probe ports that exist,
     selectors that match the pod template, references to ConfigMaps and ServiceAccounts that
     are part of the same rendering, hostPath types, explicit image tags;
  4. checks flexcsi's own wiring: each bridge configuration in a ConfigMap parses, names valid
     drivers, and every CSI endpoint it calls is served by a sidecar through the same volume,
     and its socket sits on a hostPath that the host's flexexec can reach;
  5. NetworkPolicies select pods of the rendering and name ports those pods declare;
  6. ValidatingAdmissionPolicies (and their bindings), which python3-kubernetes 22 has no model
     for: their fields against the admissionregistration.k8s.io/v1 schema written out below,
     every CEL expression parsed (cel_subset.py) and its references resolved (variables defined
     before use, only the roots Kubernetes declares), each binding naming a rendered policy.
     What the expressions decide is tested by validate_manifests_test.py, which evaluates them.

Usage: validate_manifests.py [--kubectl PATH] KUSTOMIZATION_DIR...
Exit status 0 when everything is valid; 1 with one line per problem otherwise; 77 when nothing is
invalid but this kubectl could not render a directory (its kustomize predates components).
"""

import argparse
import re
import subprocess
import sys

import yaml
from kubernetes.client import ApiClient
from kubernetes.client import models

import cel_subset

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
HOSTPATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                  "CharDevice", "BlockDevice"}
FLEX_DRIVER = re.compile(r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")
NAMESPACED_KINDS = {"ServiceAccount", "ConfigMap", "Secret", "DaemonSet", "Deployment", "Pod",
                    "Role", "RoleBinding", "Service", "PersistentVolumeClaim", "NetworkPolicy"}
# Primitive types of the generated models; "object" is anything (IntOrString, Quantity, ...).
PRIMITIVES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
              "date": (str,), "datetime": (str,), "object": (object,)}


# admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and ...Binding (Kubernetes 1.30),
# which python3-kubernetes 22 predates: field -> type, in the notation of the generated models;
# "!" marks a required field. From the API reference of admissionregistration.k8s.io/v1.
HAND_TYPES = {
    "VapValidatingAdmissionPolicy": {"apiVersion": "str", "kind": "str",
                                     "metadata": "V1ObjectMeta", "spec": "!VapPolicySpec"},
    "VapPolicySpec": {"paramKind": "VapParamKind", "matchConstraints": "!VapMatchResources",
                      "validations": "list[VapValidation]", "failurePolicy": "str",
                      "auditAnnotations": "list[VapAuditAnnotation]",
                      "matchConditions": "list[VapNamedExpression]",
                      "variables": "list[VapNamedExpression]"},
    "VapParamKind": {"apiVersion": "str", "kind": "str"},
    "VapMatchResources": {"namespaceSelector": "V1LabelSelector",
                          "objectSelector": "V1LabelSelector",
                          "resourceRules": "list[VapNamedRule]",
                          "excludeResourceRules": "list[VapNamedRule]", "matchPolicy": "str"},
    "VapNamedRule": {"resourceNames": "list[str]", "operations": "list[str]",
                     "apiGroups": "list[str]", "apiVersions": "list[str]",
                     "resources": "list[str]", "scope": "str"},
    "VapValidation": {"expression": "!str", "message": "str", "reason": "str",
                      "messageExpression": "str"},
    "VapAuditAnnotation": {"key": "!str", "valueExpression": "!str"},
    "VapNamedExpression": {"name": "!str", "expression": "!str"},
    "VapValidatingAdmissionPolicyBinding": {"apiVersion": "str", "kind": "str",
                                            "metadata": "V1ObjectMeta",
                                            "spec": "!VapBindingSpec"},
    "VapBindingSpec": {"policyName": "!str", "paramRef": "VapParamRef",
                       "matchResources": "VapMatchResources",
                       "validationActions": "!list[str]"},
    "VapParamRef": {"name": "str", "namespace": "str", "selector": "V1LabelSelector",
                    "parameterNotFoundAction": "str"},
}
HAND_KINDS = {("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
              ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding")}
# The names a policy's expressions may start from (Kubernetes' CEL environment for admission).
CEL_ROOTS = {"object", "oldObject", "request", "params", "namespaceObject", "authorizer",
             "variables"}
REASONS = {"Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"}
OPERATIONS = {"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}


class Problems:
    def __init__(self):
        self.items = []

    def add(self, where, message):
        self.items.append(f"{where}: {message}")


def model_class(api_version, kind):
    version = api_version.split("/")[-1]
    name = version[0].upper() + version[1:] + kind
    return name if hasattr(models, name) else None


def check_schema(value, type_name, path, problems):
    """Walks `value` against the generated model type `type_name`, reporting unknown fields and
    wrong types (the generated deserializer silently drops unknown fields, so it cannot)."""
    if value is None:
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            problems.add(path, f"expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_schema(item, type_name[5:-1], f"{path}[{i}]", problems)
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            problems.add(path, f"expected a map, got {type(value).__name__}")
            return
        inner = type_name[type_name.index(",") + 1:-1].strip()
        for k, v in value.items():
            check_schema(v, inner, f"{path}.{k}", problems)
        return
    if type_name in PRIMITIVES:
        if type_name in ("int", "float") and isinstance(value, bool):
            problems.add(path, f"expected {type_name}, got a boolean")
        elif not isinstance(value, PRIMITIVES[type_name]):
            problems.add(path, f"expected {type_name}, got {type(value).__name__} ({value!r})")
        return
    if type_name in HAND_TYPES:
        if not isinstance(value, dict):
            problems.add(path, f"expected an object ({type_name}), got {type(value).__name__}")
            return
        fields = HAND_TYPES[type_name]
        for key, v in value.items():
            if key not in fields:
                problems.add(path, f"unknown field \"{key}\" in {type_name[3:]}")
                continue
            check_schema(v, fields[key].lstrip("!"), f"{path}.{key}", problems)
        for key, t in fields.items():
            if t.startswith("!") and key not in value:
                problems.add(path, f"{type_name[3:]} lacks required field {key}")
        return
    cls = getattr(models, type_name, None)
    if cls is None:
        problems.add(path, f"schema has no type {type_name}")
        return
    if not isinstance(value, dict):
        problems.add(path, f"expected an object ({type_name}), got {type(value).__name__}")
        return
    json_to_attr = {v: k for k, v in cls.attribute_map.items()}
    for key, v in value.items():
        if key not in json_to_attr:
            problems.add(path, f"unknown field \"{key}\" in {type_name}")
            continue
        check_schema(v, cls.openapi_types[json_to_attr[key]], f"{path}.{key}", problems)


def check_required(obj, class_name, where, problems):
    """The generated constructors reject missing required fields (client-side validation)."""
    try:
        ApiClient()._ApiClient__deserialize(obj, class_name)
    except (ValueError, TypeError) as e:
        problems.add(where, f"invalid {class_name}: {e}")


def check_metadata(obj, where, problems):
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    if not DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        problems.add(where, f"metadata.name \"{name}\" is not a DNS-1123 subdomain")
    if obj.get("kind") in NAMESPACED_KINDS and not meta.get("namespace"):
        problems.add(where, "namespaced object without a namespace")
    for section in ("labels",):
        for k, v in (meta.get(section) or {}).items():
            if not isinstance(v, str) or not LABEL_VALUE.match(v) or len(v) > 63:
                problems.add(where, f"label {k}={v!r} is not a valid label value")


def container_mount_map(container):
    return {(m.get("mountPath") or "").rstrip("/") or "/": m
            for m in container.get("volumeMounts") or []}


def resolve(container, path):
    """(volume name, path inside the volume) through which `container` sees `path`, taking
    the deepest mount; None when no mount covers it."""
    best = None
    for mount_path, m in container_mount_map(container).items():
        if path == mount_path or path.startswith(mount_path + "/"):
            if best is None or len(mount_path) > len(best[0]):
                best = (mount_path, m)
    if best is None:
        return None
    mount_path, m = best
    rel = path[len(mount_path):].lstrip("/")
    sub = m.get("subPath", "")
    return m["name"], "/".join(p for p in (sub, rel) if p)


def check_pod_spec(spec, where, rendered, namespace, problems):
    volumes = {}
    for v in spec.get("volumes") or []:
        if v.get("name") in volumes:
            problems.add(where, f"volume \"{v.get('name')}\" defined twice")
        volumes[v.get("name")] = v
        if "hostPath" in v and v["hostPath"].get("type", "") not in HOSTPATH_TYPES:
            problems.add(where, f"volume {v['name']}: bad hostPath type {v['hostPath']['type']}")
        if "configMap" in v:
            ref = v["configMap"].get("name")
            if ("ConfigMap", namespace, ref) not in rendered:
                problems.add(where, f"volume {v['name']} uses ConfigMap \"{ref}\" that is not "
                                    f"part of this rendering")
    names = set()
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    for c in containers:
        cw = f"{where} container {c.get('name')}"
        if c.get("name") in names:
            problems.add(cw, "container name used twice")
        names.add(c.get("name"))
        if not DNS1123_LABEL.match(c.get("name") or ""):
            problems.add(cw, "container name is not a DNS-1123 label")
        image = c.get("image", "")
        if ":" not in image.split("/")[-1] and "@" not in image:
            problems.add(cw, f"image \"{image}\" has no explicit tag")
        privileged = bool((c.get("securityContext") or {}).get("privileged"))
        seen_paths = set()
        for m in c.get("volumeMounts") or []:
            m = {"name": None, "mountPath": "", **m}
            if m["name"] not in volumes:
                problems.add(cw, f"volumeMount {m['mountPath']} names missing volume "
                                 f"\"{m['name']}\"")
            if m["mountPath"] in seen_paths:
                problems.add(cw, f"mountPath {m['mountPath']} mounted twice")
            seen_paths.add(m["mountPath"])
            prop = m.get("mountPropagation", "None")
            if prop not in ("None", "HostToContainer", "Bidirectional"):
                problems.add(cw, f"mountPropagation {prop} is not a valid value")
            if prop == "Bidirectional" and not privileged:
                problems.add(cw, "Bidirectional mount propagation requires privileged: true")
        ports = {}
        for p in c.get("ports") or []:
            if "name" in p:
                if not IANA_SVC_NAME.match(p["name"]) or len(p["name"]) > 15:
                    problems.add(cw, f"port name \"{p['name']}\" is not an IANA service name")
                ports[p["name"]] = p
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            pr = c.get(probe)
            if not pr:
                continue
            for handler in ("httpGet", "tcpSocket", "grpc"):
                port = (pr.get(handler) or {}).get("port")
                if isinstance(port, str) and port not in ports:
                    problems.add(cw, f"{probe} uses port \"{port}\" the container does not name")
    sa = spec.get("serviceAccountName")
    if sa and sa != "default" and ("ServiceAccount", namespace, sa) not in rendered:
        problems.add(where, f"serviceAccountName \"{sa}\" is not part of this rendering")
    return volumes, containers


def endpoint_flag(container):
    for arg in (container.get("command") or []) + (container.get("args") or []):
        if isinstance(arg, str) and arg.startswith("--endpoint="):
            return arg[len("--endpoint="):]
    return None


def host_path_of(volumes, resolved):
    """The host path behind a (volume, path inside it) pair, or None if not a hostPath."""
    if resolved is None or "hostPath" not in volumes.get(resolved[0], {}):
        return None
    base = volumes[resolved[0]]["hostPath"]["path"].rstrip("/")
    return base + ("/" + resolved[1] if resolved[1] else "")


def served_host_sockets(docs):
    """Host paths of every CSI socket some container in the rendering serves (--endpoint)."""
    served = set()
    for d in docs:
        spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or d.get("spec") or {}
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        for c in spec.get("containers") or []:
            ep = endpoint_flag(c)
            if ep and ep.startswith("unix://"):
                hp = host_path_of(volumes, resolve(c, ep[len("unix://"):]))
                if hp:
                    served.add(hp)
    return served


def check_bridge_wiring(obj, where, rendered, volumes, containers, problems, served_on_host):
    """The bridge container's configuration must name CSI endpoints that a sidecar serves
    through the same volume (or, for a hostPath, some container on the same host path), and a
    socket on a hostPath (the host's flexexec connects to it)."""
    bridge = next((c for c in containers if c.get("name") == "bridge"), None)
    if bridge is None:
        return
    config_volume = resolve(bridge, "/etc/flexcsi/bridge.yaml")
    if config_volume is None or "configMap" not in volumes.get(config_volume[0], {}):
        problems.add(where, "bridge container does not mount its ConfigMap at /etc/flexcsi")
        return
    cm_name = volumes[config_volume[0]]["configMap"]["name"]
    cm = rendered.get(("ConfigMap", obj["metadata"].get("namespace"), cm_name))
    if cm is None:
        return  # reported by check_pod_spec
    text = (cm.get("data") or {}).get("bridge.yaml")
    if text is None:
        problems.add(where, f"ConfigMap {cm_name} has no bridge.yaml key")
        return
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        problems.add(where, f"ConfigMap {cm_name} bridge.yaml does not parse: {e}")
        return
    cw = f"{where} ConfigMap {cm_name}"
    if not isinstance(config, dict):
        problems.add(cw, "bridge.yaml is not a map")
        return
    socket = config.get("socket", "/run/flexcsi/bridge.sock")
    vol = resolve(bridge, socket)
    if vol is None or "hostPath" not in volumes.get(vol[0], {}):
        problems.add(cw, f"socket {socket} is not on a hostPath volume of the bridge container, "
                         f"so the host's flexexec cannot reach it")
    for key in ("stateDatabase",):
        if key in config and resolve(bridge, config[key]) is None:
            problems.add(cw, f"{key} {config[key]} is not on a volume (lost on restart)")
    metrics = str(config.get("metricsAddress", ""))
    port_numbers = {p.get("containerPort") for p in bridge.get("ports") or []}
    if metrics and int(metrics.rsplit(":", 1)[1]) not in port_numbers:
        problems.add(cw, f"metricsAddress {metrics} is not a declared container port "
                         f"(the probes would fail)")
    drivers = config.get("drivers") or []
    if not drivers:
        problems.add(cw, "no drivers configured")
    for d in drivers:
        flex = d.get("flexDriver", "")
        if not FLEX_DRIVER.match(flex) or flex.split("/")[0].startswith("."):
            problems.add(cw, f"flexDriver \"{flex}\" is not vendor/name")
        rule = d.get("rule") or {}
        if not rule.get("csiDriver"):
            problems.add(cw, f"{flex}: rule.csiDriver missing")
        handle = rule.get("volumeHandle") or {}
        if ("fromOption" in handle) == ("template" in handle):
            problems.add(cw, f"{flex}: volumeHandle needs exactly one of fromOption, template")
        if not isinstance(d.get("attach", True), bool):
            problems.add(cw, f"{flex}: attach must be true or false")
        endpoint = d.get("csiEndpoint", "")
        if not endpoint.startswith("unix:///"):
            problems.add(cw, f"{flex}: csiEndpoint {endpoint} is not unix:///...")
            continue
        seen_by_bridge = resolve(bridge, endpoint[len("unix://"):])
        if seen_by_bridge is None:
            problems.add(cw, f"{flex}: the bridge has no volume holding {endpoint}")
            continue
        served = host_path_of(volumes, seen_by_bridge) in served_on_host
        for c in containers:
            ep = endpoint_flag(c)
            if c is bridge or not ep or not ep.startswith("unix://"):
                continue
            if resolve(c, ep[len("unix://"):]) == seen_by_bridge:
                served = True
        if not served:
            problems.add(cw, f"{flex}: no sidecar serves {endpoint} (no container's --endpoint "
                             f"lands on the same volume and path)")


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def check_network_policy(obj, where, docs, problems):
    """A NetworkPolicy must select pods of this rendering (a typo in its selector protects
    nothing, silently), and a named port must be one those pods declare."""
    spec = obj.get("spec") or {}
    namespace = obj["metadata"].get("namespace")
    selected = []
    for d in docs:
        template = (d.get("spec") or {}).get("template")
        if d.get("kind") not in ("DaemonSet", "Deployment", "StatefulSet") or not template:
            continue
        if (d.get("metadata") or {}).get("namespace") != namespace:
            continue
        if selects(spec.get("podSelector") or {}, (template.get("metadata") or {}).get("labels")
                   or {}):
            selected.append(template.get("spec") or {})
    if not selected:
        problems.add(where, "podSelector selects no pod of this rendering")
        return
    for rule in spec.get("ingress") or []:
        for port in rule.get("ports") or []:
            named = port.get("port")
            if not isinstance(named, str):
                continue
            for pod in selected:
                if not any(p.get("name") == named for c in pod.get("containers") or []
                           for p in c.get("ports") or []):
                    problems.add(where, f"port \"{named}\" is not declared by every selected pod")
                    break


def check_cel(text, where, allowed_variables, problems):
    """Parses one expression and resolves what it reads; the parse tree, or None."""
    try:
        tree = cel_subset.parse(text)
    except cel_subset.CelError as e:
        problems.add(where, f"CEL expression does not parse: {e}: {text}")
        return None
    for root, field in cel_subset.references(tree):
        if root not in CEL_ROOTS:
            problems.add(where, f"CEL expression reads undeclared '{root}': {text}")
        elif root == "variables" and field not in allowed_variables:
            problems.add(where, f"CEL expression reads variables.{field}, not defined before it")
    return tree


def check_admission_policy(obj, where, problems):
    spec = obj.get("spec") or {}
    if spec.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
        problems.add(where, f"failurePolicy {spec.get('failurePolicy')} is not Fail or Ignore")
    rules = ((spec.get("matchConstraints") or {}).get("resourceRules")) or []
    if not rules:
        problems.add(where, "matchConstraints.resourceRules is empty: the policy matches nothing")
    for r in rules:
        for op in r.get("operations") or []:
            if op not in OPERATIONS:
                problems.add(where, f"operation {op} is not one of {sorted(OPERATIONS)}")
    for c in spec.get("matchConditions") or []:
        check_cel(c.get("expression", ""), f"{where} matchCondition {c.get('name')}", set(),
                  problems)
    defined = set()
    for v in spec.get("variables") or []:
        check_cel(v.get("expression", ""), f"{where} variable {v.get('name')}", defined,
                  problems)
        if v.get("name") in defined:
            problems.add(where, f"variable {v.get('name')} defined twice")
        defined.add(v.get("name"))
    if not spec.get("validations"):
        problems.add(where, "no validations: the policy admits everything")
    for i, v in enumerate(spec.get("validations") or []):
        vw = f"{where} validation {i}"
        check_cel(v.get("expression", ""), vw, defined, problems)
        if "messageExpression" in v:
            check_cel(v["messageExpression"], vw + " messageExpression", defined, problems)
        if v.get("reason", "Invalid") not in REASONS:
            problems.add(vw, f"reason {v.get('reason')} is not one of {sorted(REASONS)}")
        if "message" in v and "\n" in v["message"].strip():
            problems.add(vw, "message has a line break (the API server refuses it)")


def check_admission_binding(obj, where, rendered, problems):
    spec = obj.get("spec") or {}
    actions = spec.get("validationActions") or []
    if not actions or not set(actions) <= {"Deny", "Warn", "Audit"}:
        problems.add(where, f"validationActions {actions} must be some of Deny, Warn, Audit")
    if ("ValidatingAdmissionPolicy", None, spec.get("policyName")) not in rendered:
        problems.add(where, f"policyName {spec.get('policyName')} is not a policy of this "
                            f"rendering")


def validating_policy_denials(policy, request):
    """What the API server would answer `request` (an admission.k8s.io/v1 AdmissionRequest as a
    dict, with `object` and `oldObject`) with under `policy`, evaluated with cel_subset: None when
    the policy does not match the request, else the list of denial messages ([] = admitted).
    An expression that fails to evaluate denies (failurePolicy Fail) with the error."""
    spec = policy["spec"]
    group = request["resource"]["group"]
    version = request["resource"]["version"]
    resource = request["resource"]["resource"]

    def among(value, allowed):
        return "*" in allowed or value in allowed

    if not any(among(group, r.get("apiGroups") or []) and
               among(version, r.get("apiVersions") or []) and
               among(resource, r.get("resources") or []) and
               among(request["operation"], r.get("operations") or [])
               for r in spec["matchConstraints"]["resourceRules"]):
        return None
    roots = {"object": request.get("object"), "oldObject": request.get("oldObject"),
             "request": request, "params": None}
    for c in spec.get("matchConditions") or []:
        try:
            if not cel_subset.evaluate(c["expression"], roots):
                return None
        except cel_subset.CelError as e:
            return [f"matchCondition {c['name']} failed: {e}"]
    compute = {}
    variables = cel_subset.LazyMap(compute)
    for v in spec.get("variables") or []:
        compute[v["name"]] = (lambda text: lambda: cel_subset.evaluate(
            text, {**roots, "variables": variables}))(v["expression"])
    roots["variables"] = variables
    denials = []
    for v in spec.get("validations") or []:
        try:
            ok = cel_subset.evaluate(v["expression"], roots)
        except cel_subset.CelError as e:
            denials.append(f"expression '{v['expression']}' failed: {e}")
            continue
        if ok is True:
            continue
        message = v.get("message") or f"failed expression: {v['expression']}"
        if "messageExpression" in v:
            try:
                message = cel_subset.evaluate(v["messageExpression"], roots)
            except cel_subset.CelError:
                pass  # the API server falls back to message, too
        denials.append(message)
    return denials


def validate_rendering(name, text, problems):
    # A path var (base/node/kustomization.yaml) in a field kustomize does not substitute stays
    # as written and would reach the node as a path named "$(...)".
    for var in sorted(set(re.findall(r"\$\(FLEXCSI_[A-Z_]+\)", text))):
        problems.add(name, f"unresolved kustomize var {var} (not in a field listed in "
                           f"paths-varreference.yaml)")
    docs = [d for d in yaml.safe_load_all(text) if d]
    rendered = {}
    for d in docs:
        key = (d.get("kind"), (d.get("metadata") or {}).get("namespace"),
               (d.get("metadata") or {}).get("name"))
        if key in rendered:
            problems.add(name, f"{key} rendered twice")
        rendered[key] = d
    served_on_host = served_host_sockets(docs)
    for d in docs:
        kind = d.get("kind", "?")
        where = f"{name}: {kind}/{(d.get('metadata') or {}).get('name', '?')}"
        cls = model_class(d.get("apiVersion", ""), kind)
        if (d.get("apiVersion"), kind) in HAND_KINDS:
            check_schema(d, "Vap" + kind, where, problems)
            check_metadata(d, where, problems)
            if kind == "ValidatingAdmissionPolicy":
                check_admission_policy(d, where, problems)
            else:
                check_admission_binding(d, where, rendered, problems)
            continue
        if cls is None:
            problems.add(where, f"unknown apiVersion/kind {d.get('apiVersion')}/{kind}")
            continue
        check_schema(d, cls, where, problems)
        check_required(d, cls, where, problems)
        check_metadata(d, where, problems)
        namespace = (d.get("metadata") or {}).get("namespace")
        if kind == "NetworkPolicy":
            check_network_policy(d, where, docs, problems)
        spec = None
        if kind in ("DaemonSet", "Deployment", "StatefulSet", "Job"):
            template = (d.get("spec") or {}).get("template") or {}
            selector = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            labels = (template.get("metadata") or {}).get("labels") or {}
            for k, v in selector.items():
                if labels.get(k) != v:
                    problems.add(where, f"selector {k}={v} does not match the pod template")
            spec = template.get("spec") or {}
        elif kind == "Pod":
            spec = d.get("spec") or {}
        if spec is not None:
            try:
                volumes, containers = check_pod_spec(spec, where, rendered, namespace, problems)
                check_bridge_wiring(d, where, rendered, volumes, containers, problems,
                                    served_on_host)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                problems.add(where, f"malformed pod spec ({type(e).__name__}: {e})")
    return len(docs)


# ctest's SKIP_RETURN_CODE for this check: some directory could not be rendered by this kubectl.
EXIT_NOT_CHECKED = 77


def kustomize_predates_components(stderr):
    """`kubectl kustomize` failed because kubectl is older than 1.21 (Debian 12's is 1.20, with
    kustomize v2), which does not know kustomize components: the tool's limit, not the
    manifest's."""
    return 'unknown field "components"' in stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args()
    problems = Problems()
    unrenderable = []
    for d in args.dirs:
        result = subprocess.run([args.kubectl, "kustomize", d], capture_output=True, text=True)
        if result.returncode != 0 and kustomize_predates_components(result.stderr):
            unrenderable.append(d)  # reported as not checked rather than invalid
            print(f"NOT CHECKED {d}: {args.kubectl}'s kustomize predates components "
                  "(kubectl 1.21 or later renders it)")
            continue
        if result.returncode != 0:
            problems.add(d, "kubectl kustomize failed: " + result.stderr.strip())
            continue
        count = validate_rendering(d, result.stdout, problems)
        print(f"{d}: {count} objects rendered and checked")
    for p in problems.items:
        print("INVALID " + p)
    print(f"manifest problems: {len(problems.items)}")
    if problems.items:
        return 1
    return EXIT_NOT_CHECKED if unrenderable else 0


if __name__ == "__main__":
    sys.exit(main())
