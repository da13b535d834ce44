"""The previous release's container image, for the multi-node suite's upgrade and downgrade
(issue #37): this build's test image (tests/deploy/build_test_image.sh, ctest's
deploy_test_image) with the previous release's flexexec, flexcsi-bridge and flexcsi-controller
copied over its own. Those binaries are tests/upgrade/build_release.sh's, from the commit
CHANGELOG.md names (ctest's upgrade_previous_release_build builds them into the cache; nothing is
built here).

Only those three programs are the release's: csi-loopback and the flexcsi CLI (install-driver,
which copies the image's flexexec into the plugin dir) stay this tree's. The skew at stake in a
rollout is between flexexec and the bridge (their protocol), the bridge's state database, and
flexcsi-controller's intent journal and leader-election Lease, which these three carry; a whole
image of the release would need its .deb built from history, minutes of CI for programs whose
skew nothing exercises here."""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

# Where the image puts each program (deploy/CMakeLists.txt's install rules).
IMAGE_PATHS = {"flexcsi-bridge": "/usr/bin/flexcsi-bridge",
               "flexcsi-controller": "/usr/bin/flexcsi-controller",
               "flexexec": "/usr/lib/flexcsi/flexexec"}
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Missing(Exception):
    """The previous release's binaries are not in the cache (the reason in one line)."""


def release_binaries():
    """(release, {program: path}) of the previous release in build_release.sh's cache: the
    newest `## X.Y.Z — commit <sha>` heading of CHANGELOG.md, looked up as that script does
    (same knobs: FLEXCSI_UPGRADE_REPO, FLEXCSI_RELEASE_CACHE), without building anything."""
    repo = os.environ.get("FLEXCSI_UPGRADE_REPO") or REPO
    try:
        with open(os.path.join(repo, "CHANGELOG.md")) as f:
            heading = re.search(r"^## (\d+\.\d+\.\d+) — commit ([0-9a-f]{7,40})\b",
                                f.read(), re.MULTILINE)
    except OSError as e:
        raise Missing("no CHANGELOG.md to name the release: %s" % e)
    if not heading:
        raise Missing("CHANGELOG.md names no release commit")
    release, short = heading.groups()
    found = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q",
                            short + "^{commit}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise Missing("release %s's commit %s is not in the history" % (release, short))
    bin_dir = os.path.join(os.environ.get("FLEXCSI_RELEASE_CACHE")
                           or "/var/cache/flexcsi-test-releases", found.stdout.strip(), "bin")
    binaries = {p: os.path.join(bin_dir, p) for p in IMAGE_PATHS}
    absent = [p for p, path in binaries.items() if not os.access(path, os.X_OK)]
    if absent:
        raise Missing("release %s's %s not in %s (ctest's upgrade_previous_release_build "
                      "builds them: tests/upgrade/build_release.sh)" % (
                          release, ", ".join(absent), bin_dir))
    return release, binaries


def run(argv):
    """Runs argv; a failure raises with its stderr (the reason the test reports)."""
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), done.stderr.strip()))


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build_archive(store, image, current_tag, archive):
    """Builds `image`:<previous release> FROM `image`:`current_tag` in the podman store under
    `store` (build_test_image.sh's) and saves both tags into one docker archive, whose shared
    layers a node's containerd then reads once. Returns (release, {program: sha256 of the copy
    in the image}). The previous tag is removed from the store again: only the archive has it."""
    release, binaries = release_binaries()
    podman = ["unshare", "-m", "--propagation", "private",  # podman's mounts stay in here
              "podman", "--root", os.path.join(store, "storage"),
              "--runroot", os.path.join(store, "run")]
    current, previous = "%s:%s" % (image, current_tag), "%s:%s" % (image, release)
    context = tempfile.mkdtemp(prefix="flexcsi-previous-image-")
    try:
        copies = {}
        for program, path in binaries.items():
            # Without the release build's debug info (the cache's are -O0 builds): smaller layers.
            copy = os.path.join(context, program)
            run(["strip", "-o", copy, path])
            copies[program] = sha256(copy)
        with open(os.path.join(context, "Containerfile"), "w") as f:
            f.write("FROM %s\n" % current)
            f.writelines("COPY %s %s\n" % (p, IMAGE_PATHS[p]) for p in binaries)
        # One run at a time per store: another suite's run would retag or remove the image
        # between this build and its save.
        with open(os.path.join(store, "previous-release.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            run([*podman, "build", "--quiet", "--pull=never", "--network=none", "-t", previous,
                 context])
            try:
                run([*podman, "save", "--quiet", "--multi-image-archive", "--format",
                     "docker-archive", "-o", archive, current, previous])
            finally:
                subprocess.run([*podman, "rmi", previous], capture_output=True)
        return release, copies
    finally:
        shutil.rmtree(context, ignore_errors=True)
