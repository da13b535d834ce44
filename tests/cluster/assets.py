"""Finds the Kubernetes binaries for the test cluster, as envtest finds KUBEBUILDER_ASSETS.

FLEXCSI_KUBE_ASSETS names a folder holding either bin/ (already unpacked) or the release
tarball with its SHA256SUMS (../shared/kube-assets); the tarball is unpacked once into a cache
folder and every file is checked against SHA256SUMS."""
import fcntl
import glob
import hashlib
import os
import subprocess

VARIABLE = "FLEXCSI_KUBE_ASSETS"
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
    if all(os.access(os.path.join(source, "bin", n), os.X_OK) for n in NEEDED):
        return os.path.join(source, "bin")
    tarballs = sorted(glob.glob(os.path.join(source, "kubernetes-*-linux-amd64.tar.xz")))
    if not tarballs:
        raise AssetsMissing("%s=%s holds neither bin/ nor a kubernetes-*-linux-amd64.tar.xz"
                            % (VARIABLE, source))
    tarball = tarballs[-1]
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
