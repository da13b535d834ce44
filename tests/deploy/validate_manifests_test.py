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

from validate_manifests import kustomize_predates_components

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
