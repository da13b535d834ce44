#!/usr/bin/python3
"""Tests of the manifest validator itself and of what the manifests must agree with.

Every breakage case copies deploy/kubernetes into a temp dir, breaks one thing the way a typo
would, and requires validate_manifests.py to reject it naming the problem: a validator that
accepted everything would pass the shipped manifests too.

Usage: validate_manifests_test.py REPO_ROOT KUBECTL
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

import cel_subset
from validate_manifests import kustomize_predates_components
from validate_manifests import validating_policy_denials

REPO = KUBECTL = None
VALIDATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validate_manifests.py")


def run_validator(root, *dirs):
    result = subprocess.run([sys.executable, VALIDATOR, "--kubectl", KUBECTL] +
                            [os.path.join(root, d) for d in dirs], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


class BrokenManifestsAreRejected(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="flexcsi-manifests-")
        shutil.copytree(os.path.join(REPO, "deploy", "kubernetes"), os.path.join(self.tmp, "k"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, relpath, old, new):
        path = os.path.join(self.tmp, "k", relpath)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text, f"{old!r} not in {relpath}: the test needs updating")
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def assertRejected(self, expected, *dirs):
        rc, out = run_validator(os.path.join(self.tmp, "k"), *(dirs or ("base",)))
        self.assertEqual(rc, 1, out)
        self.assertIn(expected, out)

    def test_shipped_copy_is_accepted(self):
        rc, out = run_validator(os.path.join(self.tmp, "k"), "base", "overlays/loopback")
        self.assertEqual(rc, 0, out)

    def test_misspelled_field(self):
        self.edit("base/node/node-daemonset.yaml", "mountPropagation: Bidirectional",
                  "mountPropogation: Bidirectional")
        self.assertRejected('unknown field "mountPropogation"')

    def test_wrong_type(self):
        self.edit("base/node/node-daemonset.yaml", "containerPort: 9809", 'containerPort: "9809"')
        self.assertRejected("expected int")

    def test_missing_required_field(self):
        self.edit("base/controller/controller-daemonset.yaml", "- name: csi-controller\n",
                  "- stdin: false\n")
        self.assertRejected("must not be `None`")

    def test_mount_of_undefined_volume(self):
        self.edit("base/node/node-daemonset.yaml", "- name: dev\n              mountPath: /dev",
                  "- name: devices\n              mountPath: /dev")
        self.assertRejected('names missing volume "devices"')

    def test_bidirectional_without_privilege(self):
        self.edit("base/node/node-daemonset.yaml", "privileged: true", "privileged: false")
        self.assertRejected("Bidirectional mount propagation requires privileged")

    def test_probe_on_unnamed_port(self):
        self.edit("base/node/node-daemonset.yaml", "port: metrics", "port: metric")
        self.assertRejected('uses port "metric"')

    def test_csi_endpoint_typo_in_bridge_config(self):
        self.edit("base/node/bridge-node.yaml", "loopback.csi.flexcsi.io/csi.sock",
                  "loopback.csi.flexcsi.io/cs.sock")
        self.assertRejected("no sidecar serves")

    def test_bad_flex_driver_name(self):
        self.edit("base/node/bridge-node.yaml", "flexDriver: flexcsi/loopback", "flexDriver: loopback")
        self.assertRejected('"loopback" is not vendor/name')

    def test_socket_not_on_a_host_path(self):
        self.edit("base/node/bridge-node.yaml", "socket: /run/flexcsi/bridge.sock",
                  "socket: /tmp/bridge.sock")
        self.assertRejected("host's flexexec cannot reach it")

    def test_selector_not_matching_template(self):
        self.edit("base/node/node-daemonset.yaml", "      labels:\n        app.kubernetes.io/name: flexcsi\n"
                  "        app.kubernetes.io/component: node",
                  "      labels:\n        app.kubernetes.io/name: flexcsi\n"
                  "        app.kubernetes.io/component: nodes")
        self.assertRejected("does not match the pod template")

    def test_patch_guard_catches_reordered_base(self):
        # The loopback overlay removes containers by index behind JSON-patch `test` guards.
        self.edit("base/controller/controller-daemonset.yaml", "- name: csi-controller\n",
                  "- name: csi-ctrl\n")
        self.assertRejected("kubectl kustomize failed", "overlays/loopback")

    def test_path_var_where_kustomize_does_not_substitute(self):
        self.edit("base/node/node-daemonset.yaml", "prometheus.io/port: \"9809\"",
                  "prometheus.io/port: \"9809\"\n        root: $(FLEXCSI_KUBELET_ROOT)")
        self.assertRejected("unresolved kustomize var $(FLEXCSI_KUBELET_ROOT)")

    def test_broken_yaml(self):
        self.edit("base/node/namespace.yaml", "kind: Namespace", "kind: Namespace\n  bad: [")
        self.assertRejected("kubectl kustomize failed")


    def test_admission_policy_expression_typo(self):
        self.edit("components/node-restriction-policy/policy.yaml",
                  "!variables.isNode || !variables.isUpdate || object.spec == oldObject.spec",
                  "!variables.isNode || !variables.isUpdate || object.spec == oldObject.spec)")
        self.assertRejected("CEL expression does not parse", "overlays/restricted")

    def test_admission_policy_variable_used_before_defined(self):
        self.edit("components/node-restriction-policy/policy.yaml",
                  "expression: \"['csi.volume.kubernetes.io/nodeid']\"",
                  "expression: \"variables.nodeName == '' ? [] : ['x']\"")
        self.assertRejected("reads variables.nodeName, not defined before it",
                            "overlays/restricted")

    def test_admission_policy_unknown_field(self):
        self.edit("components/node-restriction-policy/policy.yaml", "  failurePolicy: Fail",
                  "  failurePolicies: Fail")
        self.assertRejected('unknown field "failurePolicies"', "overlays/restricted")

    def test_admission_binding_names_no_policy(self):
        self.edit("components/node-restriction-policy/policy.yaml",
                  "  policyName: flexcsi-node-restriction",
                  "  policyName: flexcsi-node-restrictions")
        self.assertRejected("is not a policy of this rendering", "overlays/restricted")

    def test_network_policy_selecting_nothing(self):
        self.edit("components/metrics-network-policy/networkpolicy.yaml",
                  "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: flexcsi",
                  "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: flexcs")
        self.assertRejected("podSelector selects no pod", "overlays/restricted")

    def test_network_policy_port_the_pods_do_not_name(self):
        self.edit("components/metrics-network-policy/networkpolicy.yaml", "port: metrics",
                  "port: metric")
        self.assertRejected('port "metric" is not declared', "overlays/restricted")


def render(overlay):
    result = subprocess.run([KUBECTL, "kustomize", os.path.join(REPO, "deploy", "kubernetes",
                                                                overlay)],
                            capture_output=True, text=True)
    if kustomize_predates_components(result.stderr):
        raise unittest.SkipTest("kubectl before 1.21 cannot render components")
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    return [d for d in yaml.safe_load_all(result.stdout) if d]


class NodeRoleIsWhatTheBridgeAsks(unittest.TestCase):
    """base/node/rbac.yaml grants exactly the requests bridge/node_registrar.cc,
    bridge/registration_watch.cc and bridge/cluster_objects.cc make (docs/operations.md, "What
    the node bridge may do"): a verb more is a grant nobody reviewed, a verb less a refusal on
    a real cluster."""

    EXPECTED = {("", "nodes"): {"get", "list", "watch", "patch"},
                ("storage.k8s.io", "csinodes"): {"get", "list", "watch", "create", "update"},
                ("", "persistentvolumes"): {"get", "list"},
                ("", "pods"): {"get", "list"}}

    def test_node_cluster_role(self):
        docs = render("base/node")
        role = next(d for d in docs if d["kind"] == "ClusterRole" and
                    d["metadata"]["name"] == "flexcsi-node")
        granted = {}
        for rule in role["rules"]:
            self.assertNotIn("resourceNames", rule)
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted.setdefault((group, resource), set()).update(rule["verbs"])
        self.assertEqual(granted, self.EXPECTED)
        binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "flexcsi-node",
                                                "namespace": "flexcsi"}])

    def test_secrets_role_adds_only_secret_reads(self):
        with open(os.path.join(REPO, "deploy", "kubernetes", "bridge-reads-secrets",
                               "rbac.yaml")) as f:
            role = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["secrets"],
                                          "verbs": ["get"]}])


class CelSubsetEvaluates(unittest.TestCase):
    """The evaluator the policy tests rely on, on CEL's own semantics."""

    def ev(self, text, **roots):
        return cel_subset.evaluate(text, roots)

    def test_operators_and_macros(self):
        m = {"a": "1", "b": "2"}
        self.assertEqual(self.ev("m.filter(k, m[k] != '1')", m=m), ["b"])
        self.assertTrue(self.ev("['x', 'y'].all(s, s in ['x', 'y', 'z'])"))
        self.assertTrue(self.ev("has(m.a) && !has(m.c) && size(m) == 2 && m.size() == 2", m=m))
        self.assertEqual(self.ev("true ? [1] + [2] : []"), [1, 2])
        self.assertEqual(self.ev("['a', 'b'].join(', ')"), "a, b")
        self.assertTrue(self.ev("{'k': [1, 2]} == {'k': [1, 2]} && 1 != 'x'"))
        self.assertEqual(self.ev("'a' + \"b\""), "ab")

    def test_errors_are_absorbed_only_where_cel_absorbs_them(self):
        # && and || are commutative in CEL: the side that decides wins over an error.
        self.assertFalse(self.ev("o.missing == 1 && false", o={}))
        self.assertTrue(self.ev("true || o.missing", o={}))
        with self.assertRaises(cel_subset.CelError):
            self.ev("o.missing == 1 && true", o={})
        with self.assertRaises(cel_subset.CelError):
            self.ev("1 + 'a'")
        with self.assertRaises(cel_subset.CelError):
            cel_subset.parse("a.b(")


class NodeRestrictionPolicyDecides(unittest.TestCase):
    """components/node-restriction-policy, as overlays/restricted renders it, evaluated on the
    writes the bridge makes and on the ones it must not (no Kubernetes 1.30 cluster here: the
    policy's CEL is evaluated by cel_subset.py)."""

    SA = "system:serviceaccount:flexcsi:flexcsi-node"
    NODE = "node-a"

    @classmethod
    def setUpClass(cls):
        docs = render("overlays/restricted")
        cls.policy = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy")
        binding = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding")
        assert binding["spec"]["policyName"] == cls.policy["metadata"]["name"]
        assert binding["spec"]["validationActions"] == ["Deny"]

    def node(self, name=NODE):
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": "u-" + name,
                             "labels": {"kubernetes.io/hostname": name,
                                        "kubernetes.io/os": "linux"},
                             "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {"podCIDR": "10.244.0.0/24",
                         "taints": [{"key": "dedicated", "value": "gpu",
                                     "effect": "NoSchedule"}]},
                "status": {}}

    def registered(self, node):
        """The Node after the bridge's merge patch (bridge/node_info_rules.cc)."""
        new = yaml.safe_load(yaml.safe_dump(node))
        new["metadata"]["labels"]["topology.loopback.csi.flexcsi.io/node"] = node["metadata"][
            "name"]
        new["metadata"]["annotations"]["csi.volume.kubernetes.io/nodeid"] = (
            '{"loopback.csi.flexcsi.io":"%s"}' % node["metadata"]["name"])
        return new

    def csinode(self, name=NODE, drivers=()):
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name, "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": name, "uid": "u-" + name}]},
                "spec": {"drivers": [{"name": d, "nodeID": name} for d in drivers]}}

    def decide(self, operation, new, old=None, user=SA, node_name=NODE):
        extra = {"authentication.kubernetes.io/pod-name": ["flexcsi-node-x"],
                 "authentication.kubernetes.io/pod-uid": ["p-1"]}
        if node_name is not None:
            extra["authentication.kubernetes.io/node-name"] = [node_name]
            extra["authentication.kubernetes.io/node-uid"] = ["u-" + node_name]
        resource = ({"group": "", "version": "v1", "resource": "nodes"}
                    if (new or old)["kind"] == "Node" else
                    {"group": "storage.k8s.io", "version": "v1", "resource": "csinodes"})
        request = {"uid": "r-1", "operation": operation, "resource": resource,
                   "name": (new or old)["metadata"]["name"],
                   "userInfo": {"username": user, "uid": "s-1",
                                "groups": ["system:serviceaccounts",
                                           "system:serviceaccounts:flexcsi",
                                           "system:authenticated"],
                                "extra": extra},
                   "object": new, "oldObject": old}
        return validating_policy_denials(self.policy, request)

    def assertAdmitted(self, *args, **kwargs):
        self.assertEqual(self.decide(*args, **kwargs), [])

    def assertDenied(self, expected, *args, **kwargs):
        denials = self.decide(*args, **kwargs)
        self.assertTrue(denials, "admitted")
        self.assertTrue(any(expected in d for d in denials), denials)

    def test_registration_of_its_own_node_is_admitted(self):
        old = self.node()
        self.assertAdmitted("UPDATE", self.registered(old), old)
        # and unregistration: the label and annotation go again
        self.assertAdmitted("UPDATE", old, self.registered(old))
        self.assertAdmitted("CREATE", self.csinode(drivers=["loopback.csi.flexcsi.io"]))
        kubelets = self.csinode(drivers=["ebs.csi.aws.com"])
        both = self.csinode(drivers=["ebs.csi.aws.com", "loopback.csi.flexcsi.io"])
        self.assertAdmitted("UPDATE", both, kubelets)
        self.assertAdmitted("UPDATE", kubelets, both)

    def test_another_nodes_objects_are_denied(self):
        old = self.node("node-b")
        self.assertDenied("may write only its own nodes, not the one of node node-b",
                          "UPDATE", self.registered(old), old)
        self.assertDenied("may write only its own csinodes, not the one of node node-b",
                          "CREATE", self.csinode("node-b", ["loopback.csi.flexcsi.io"]))

    def test_a_token_without_a_node_is_denied(self):
        old = self.node()
        self.assertDenied("token names no node", "UPDATE", self.registered(old), old,
                          node_name=None)

    def test_anything_but_its_labels_and_annotation_is_denied(self):
        old = self.node()
        untainted = self.registered(old)
        untainted["spec"]["taints"] = []
        self.assertDenied("may not change a Node's spec", "UPDATE", untainted, old)
        unschedulable = self.node()
        unschedulable["spec"]["unschedulable"] = True
        self.assertDenied("may not change a Node's spec", "UPDATE", unschedulable, old)
        role = self.registered(old)
        role["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
        self.assertDenied("not node-role.kubernetes.io/control-plane", "UPDATE", role, old)
        relabelled = self.node()
        relabelled["metadata"]["labels"]["kubernetes.io/hostname"] = "node-c"
        self.assertDenied("not kubernetes.io/hostname", "UPDATE", relabelled, old)
        annotated = self.registered(old)
        del annotated["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"]
        self.assertDenied("not node.alpha.kubernetes.io/ttl", "UPDATE", annotated, old)
        held = self.registered(old)
        held["metadata"]["finalizers"] = ["example.com/hold"]
        self.assertDenied("finalizers or owners", "UPDATE", held, old)

    def test_other_drivers_entries_are_denied(self):
        kubelets = self.csinode(drivers=["ebs.csi.aws.com"])
        self.assertDenied("only the CSINode entries of its drivers (loopback.csi.flexcsi.io)",
                          "UPDATE", self.csinode(drivers=[]), kubelets)
        self.assertDenied("only the CSINode entries of its drivers", "CREATE",
                          self.csinode(drivers=["ebs.csi.aws.com"]))
        relabelled = self.csinode(drivers=["ebs.csi.aws.com"])
        relabelled["metadata"]["labels"] = {"x": "y"}
        self.assertDenied("may not change a CSINode's labels", "UPDATE", relabelled, kubelets)

    def test_deletes_and_node_creation_are_denied(self):
        self.assertDenied("only updates Nodes", "DELETE", None, self.node())
        self.assertDenied("only updates Nodes", "DELETE", None, self.csinode())
        self.assertDenied("only updates Nodes", "CREATE", self.node())

    def test_other_users_are_not_matched(self):
        old = self.node("node-b")
        self.assertIsNone(self.decide("UPDATE", self.registered(old), old,
                                      user="system:node:node-b", node_name=None))
        self.assertIsNone(self.decide("UPDATE", self.registered(old), old,
                                      user="system:serviceaccount:flexcsi:flexcsi-controller"))


class NodePathsAreOneSettingEach(unittest.TestCase):
    """docs/operations.md, "Nodes that keep kubelet elsewhere": an overlay that sets kubeletRoot,
    kubeletPluginDir and controllerPluginDir moves every path that depends on them, in every
    overlay, and nothing else needs changing."""

    MOVED = {"kubeletRoot": "/srv/k/root", "kubeletPluginDir": "/srv/k/kubelet-plugins",
             "controllerPluginDir": "/srv/k/controller-plugins"}
    DEFAULTS = ["/var/lib/kubelet", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
                "/usr/libexec/kubernetes/controller-plugins/volume/exec"]
    # The bridge container sees kubelet's plugin dir at the default path whatever the host's
    # (read-only, for `flexcsi doctor`'s default); the one place a default may stay.
    DOCTOR_VIEW = "mountPath: /usr/libexec/kubernetes/kubelet-plugins/volume/exec"

    def render_moved(self, overlay, controller):
        tmp = tempfile.mkdtemp(prefix="flexcsi-moved-")
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copytree(os.path.join(REPO, "deploy", "kubernetes"), os.path.join(tmp, "k"))
        os.mkdir(os.path.join(tmp, "moved"))
        generators = [{"name": "flexcsi-node-paths", "namespace": "flexcsi", "behavior": "merge",
                       "literals": [f"{k}={self.MOVED[k]}" for k in ("kubeletRoot",
                                                                      "kubeletPluginDir")]}]
        if controller:
            generators.append({"name": "flexcsi-controller-paths", "namespace": "flexcsi",
                               "behavior": "merge", "literals": [
                                   "controllerPluginDir=" + self.MOVED["controllerPluginDir"]]})
        with open(os.path.join(tmp, "moved", "kustomization.yaml"), "w") as f:
            # `bases`, which kustomize v2 (kubectl 1.14-1.20) reads as later ones do
            yaml.safe_dump({"bases": [f"../k/{overlay}"],
                            "configMapGenerator": generators}, f)
        result = subprocess.run([KUBECTL, "kustomize", os.path.join(tmp, "moved")],
                                capture_output=True, text=True)
        if kustomize_predates_components(result.stderr):
            return None  # kubectl before 1.21: deploy_component_overlays_valid says so
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_every_overlay_follows_the_setting(self):
        for overlay, controller in (("overlays/loopback-provisioner", True),
                                    ("overlays/old-clusters", True),
                                    ("overlays/digitalocean", True), ("overlays/nfs", False),
                                    ("overlays/juicefs", False)):
            text = self.render_moved(overlay, controller)
            if text is None:
                self.assertEqual(overlay, "overlays/old-clusters", "made of no component")
                continue
            text = text.replace(self.DOCTOR_VIEW, "")
            for default in self.DEFAULTS:
                self.assertNotIn(default, text, f"{overlay} keeps {default}")
            self.assertIn("path: /srv/k/kubelet-plugins", text, overlay)
            self.assertIn("kubeletRoot: /srv/k/root", text, overlay)
            if controller:
                self.assertIn("path: /srv/k/controller-plugins", text, overlay)


class ConfigsAgreeWithProfiles(unittest.TestCase):
    def load(self, *parts):
        with open(os.path.join(REPO, *parts)) as f:
            return yaml.safe_load(f)

    def test_overlay_driver_entries_are_the_profiles(self):
        for name, profiles in (("nfs", ["nfs"]), ("digitalocean", ["digitalocean"]),
                               ("juicefs", ["juicefs"]), ("cephfs", ["rook-cephfs", "cephfs"])):
            wanted = [self.load("drivers", "profiles", f"{p}.yaml") for p in profiles]
            node = self.load("deploy", "kubernetes", "overlays", name, "bridge-node.yaml")
            for d in node["drivers"]:  # the manifests' kubelet root var, at its default
                d["csiEndpoint"] = d["csiEndpoint"].replace("$(FLEXCSI_KUBELET_ROOT)",
                                                            "/var/lib/kubelet")
            self.assertEqual(node["drivers"], wanted, name)

    def test_cephfs_provisioner_entry_is_the_profile_with_its_endpoint_and_provisioner(self):
        profile = self.load("drivers", "profiles", "cephfs.yaml")
        controller = self.load("deploy", "kubernetes", "overlays", "cephfs",
                               "bridge-provisioner.yaml")
        entry = dict(controller["drivers"][0])
        self.assertEqual(entry.pop("csiEndpoint"), "unix:///csi/csi.sock")
        self.assertEqual(entry.pop("provisioner"), "cephfs.csi.ceph.com")
        profile.pop("csiEndpoint")
        self.assertEqual(entry, profile)

    def test_digitalocean_controller_differs_from_profile_only_in_endpoint(self):
        profile = self.load("drivers", "profiles", "digitalocean.yaml")
        controller = self.load("deploy", "kubernetes", "overlays", "digitalocean",
                               "bridge-controller.yaml")
        entry = dict(controller["drivers"][0])
        self.assertEqual(entry.pop("csiEndpoint"), "unix:///csi/csi.sock")
        profile.pop("csiEndpoint")
        self.assertEqual(entry, profile)

    def test_package_default_config_matches_base_driver(self):
        package = self.load("deploy", "debian", "bridge.yaml")
        base = self.load("deploy", "kubernetes", "base", "node", "bridge-node.yaml")
        for d in base["drivers"]:  # kustomize's var, at its default (base/node/kustomization.yaml)
            d["csiEndpoint"] = d["csiEndpoint"].replace("$(FLEXCSI_KUBELET_ROOT)",
                                                        "/var/lib/kubelet")
        self.assertEqual(package["drivers"], base["drivers"])
        self.assertEqual(package["metricsAddress"], "127.0.0.1:9809")  # host: local only


class DockerfileIsConsistent(unittest.TestCase):
    """deploy_test_image builds the image's "prebuilt" stage from this build's .deb; these check
    what a build from the repository (the default target, whose compile takes 20 minutes) relies
    on, without building it."""

    def setUp(self):
        with open(os.path.join(REPO, "deploy", "docker", "Dockerfile")) as f:
            self.lines = [l.strip() for l in f.read().replace("\\\n", " ").splitlines()]
        self.args = dict(l.split()[1].split("=", 1) for l in self.lines
                         if l.startswith("ARG ") and "=" in l)

    def test_copy_sources_exist_in_the_repository(self):
        copies, stage = [], None
        for l in self.lines:
            if l.startswith("FROM "):
                stage = l.split()[-1] if " AS " in l else None
            elif l.startswith("COPY ") and stage != "prebuilt":  # its context is one .deb
                copies.append(l.split()[1:-1])
        self.assertTrue(copies)
        for sources in copies:
            for src in sources:
                if src.startswith("--"):
                    break  # COPY --from=stage: not from the build context
                self.assertTrue(os.path.exists(os.path.join(REPO, src)), src)

    def test_builds_the_packaged_programs_and_installs_the_deb(self):
        text = "\n".join(self.lines)
        for target in ("flexcsi", "flexcsi-bridge", "flexexec", "csi-loopback"):
            self.assertRegex(text, rf"--target [^\n]*\b{target}\b")
        self.assertIn("cpack -G DEB", text)
        self.assertIn("apt-get install -y --no-install-recommends /tmp/deb/flexcsi_*.deb", text)
        bases = [l.split()[1] for l in self.lines if l.startswith("FROM ")]
        bases = [self.args.get(b.strip("${}"), b) if b.startswith("$") else b for b in bases]
        self.assertTrue(all(b.startswith("debian:12") for b in bases), bases)
        # The parts named for the build exist in the tree.
        parts = re.search(r'FLEXCSI_PARTS="([^"]+)"', text).group(1).split(";")
        for part in parts:
            self.assertTrue(os.path.isdir(os.path.join(REPO, part)), part)

    def test_manifests_use_the_image_the_dockerfile_documents(self):
        text = "\n".join(self.lines)
        tags = set()
        for part in ("node", "controller"):
            with open(os.path.join(REPO, "deploy", "kubernetes", "base", part,
                                   "kustomization.yaml")) as f:
                images = yaml.safe_load(f)["images"]
            tags.add(f"{images[0]['newName']}:{images[0]['newTag']}")
        self.assertEqual(len(tags), 1, f"node and controller use different images: {tags}")
        self.assertIn(f"-t {tags.pop()}", text)


if __name__ == "__main__":
    REPO, KUBECTL = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
