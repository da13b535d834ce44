"""Finds the Kubernetes binaries for the test cluster, as envtest finds KUBEBUILDER_ASSETS.

FLEXCSI_KUBE_ASSETS names a folder holding either bin/ (already unpacked) or the release
tarball with its SHA256SUMS (../shared/kube-assets); the tarball is unpacked once into a cache
folder of its own (one per release) and every file is checked against SHA256SUMS.

FLEXCSI_KUBE_RELEASE (ctest sets it for the `_v1_10` entries) asks for an older release kept
beside the default one: v1.10 takes $FLEXCSI_KUBE_ASSETS/v1.10 (or $FLEXCSI_KUBE_ASSETS itself
where it is that folder). Which release the binaries are is read from them (kube_version.py)."""
import fcntl
import glob
import hashlib
import os
import subprocess

VARIABLE = "FLEXCSI_KUBE_ASSETS"
RELEASE_VARIABLE = "FLEXCSI_KUBE_RELEASE"
NEEDED = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")


class AssetsMissing(Exception):
    """The cluster suites cannot run here; the message says why in one line."""


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify(folder, sums):
    with open(sums) as f:
        for line in f:
            digest, name = line.split()
            if _sha256(os.path.join(folder, name)) != digest:
                raise RuntimeError("%s/%s does not match %s" % (folder, name, sums))


def locate(cache_dir):
    """Returns the folder with kube-apiserver & co; raises AssetsMissing to skip."""
    source = os.environ.get(VARIABLE, "")
    if not source:
        raise AssetsMissing("%s is not set: the real-cluster suites are skipped (CI sets it to "
                            "../shared/kube-assets)" % VARIABLE)
    source = os.path.abspath(source)
    release = os.environ.get(RELEASE_VARIABLE, "")
    if release and os.path.basename(source) != release:
        if not os.path.isdir(os.path.join(source, release)):
            raise AssetsMissing("%s=%s has no %s/: the Kubernetes %s suites are skipped"
                                % (VARIABLE, source, release, release))
        source = os.path.join(source, release)
    if all(os.access(os.path.join(source, "bin", n), os.X_OK) for n in NEEDED):
        return os.path.join(source, "bin")
    tarballs = sorted(glob.glob(os.path.join(source, "kubernetes-*-linux-amd64.tar.xz")))
    if not tarballs:
        raise AssetsMissing("%s=%s holds neither bin/ nor a kubernetes-*-linux-amd64.tar.xz"
                            % (VARIABLE, source))
    tarball = tarballs[-1]
    # one folder per release: suites of two releases may run one after the other
    cache_dir = os.path.join(cache_dir, os.path.basename(tarball)[:-len(".tar.xz")])
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel ctest entries unpack once
        stamp = os.path.join(cache_dir, ".unpacked")
        key = "%s %d %d\n" % (tarball, os.path.getsize(tarball), int(os.path.getmtime(tarball)))
        if not os.path.exists(stamp) or open(stamp).read() != key:
            subprocess.run(["tar", "-xJf", tarball, "-C", cache_dir], check=True)
            sums = os.path.join(source, "SHA256SUMS")
            if os.path.exists(sums):
                _verify(cache_dir, sums)
            with open(stamp, "w") as f:
                f.write(key)
    return os.path.join(cache_dir, "bin")


def crds_dir(bin_dir):
    return os.path.join(os.path.dirname(bin_dir), "crds")
