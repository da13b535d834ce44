"""A real JuiceFS for the JuiceFS suite: juicefs v1.1.6 and juicefs-csi-driver v0.24.6 from
$FLEXCSI_THIRD_PARTY_CSI (../shared/third-party-csi/README.md, "JuiceFS CSI"), redis-server on
127.0.0.1 as the metadata engine, objects in `--storage file` under the cluster's temp dir.

The driver has fixed paths: it runs /usr/local/bin/juicefs and /bin/mount.juicefs, mounts at
/var/lib/jfs/<volume id> and caches in /var/jfsCache. They exist only in the suite's private
mount namespace: read-only overlays put the two executables over /usr/local/bin and /usr/bin,
and the two folders are the cluster's host paths with a tmpfs on each. `juicefs mount` reports
usage over the network unless told not to; the suite runs in a network namespace of its own
whose only interface is loopback (start() refuses to run anywhere else).

stop() always leaves nothing: no FUSE mount of this file system, no process of this juicefs
binary, no redis-server, no overlay."""
import glob
import os
import signal
import subprocess
import time

import namespace
from cluster import Process, free_port
from clustertest import run, wait_for

TARBALL = "juicefs-csi-v0.24.6-linux-amd64.tar.xz"
VARIABLE = "FLEXCSI_THIRD_PARTY_CSI"
FS_NAME = "flexcsi-jfs"
MOUNT_ROOT = "/var/lib/jfs"
CACHE_ROOT = "/var/jfsCache"
HOST_PATHS = (MOUNT_ROOT, CACHE_ROOT)  # give these to Cluster(host_paths=...)
BIN_DIRS = ("/usr/local/bin", "/usr/bin")  # /bin is /usr/bin on Debian 12


def missing_reason():
    """Why the suite cannot run here (one line), or None."""
    folder = os.environ.get(VARIABLE)
    if not folder:
        return "%s is not set (the folder of %s)" % (VARIABLE, TARBALL)
    if not os.path.isfile(os.path.join(folder, TARBALL)):
        return "%s has no %s" % (folder, TARBALL)
    for program in ("redis-server", "fusermount3"):
        if subprocess.run(["sh", "-c", "command -v " + program],
                          capture_output=True).returncode != 0:
            return "%s is not installed (scripts/install-deps.sh)" % program
    return None


class JuiceFs:
    def __init__(self, cluster, node_id):
        self.cluster = cluster
        self.node_id = node_id
        self.dir = os.path.join(cluster.dir, "juicefs")
        self.bin = os.path.join(self.dir, "bin")
        self.juicefs = os.path.join(self.bin, "juicefs")
        self.socket = os.path.join(self.dir, "csi.sock")
        self.bucket = os.path.join(self.dir, "bucket") + "/"
        self.overlays = []
        self.redis = None
        self.driver = None
        self.meta_url = None

    # ----- life cycle -------------------------------------------------------------------

    def start(self):
        if not namespace.in_private_network_namespace():
            raise AssertionError("refusing to run juicefs outside a private network namespace: "
                                 "its mounts would report usage over the network")
        os.makedirs(self.dir)
        self._unpack()
        self._fixed_paths()
        self._start_redis()
        run([self.juicefs, "format", "--storage", "file", "--bucket", self.bucket,
             self.meta_url, FS_NAME])
        self.driver = Process("juicefs-csi-driver", [
            os.path.join(self.bin, "juicefs-csi-driver"), "--endpoint", "unix://" + self.socket,
            "--nodeid", self.node_id, "--by-process", "--v=2"],
            os.path.join(self.cluster.logs, "juicefs-csi-driver.log"),
            env=dict(os.environ, NODE_NAME=self.node_id,
                     # the node service runs only where the pod name says csi-node
                     POD_NAME="juicefs-csi-node-flexcsi",
                     JUICEFS_CSI_WEB_PORT=str(free_port())))
        self.start_driver()

    def start_driver(self):
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.driver.start()
        wait_for("juicefs-csi-driver to listen", lambda: self._listening(self.driver, self.socket),
                 30, 0.1)

    def kill_driver(self):
        self.driver.stop(signal.SIGKILL)

    def stop(self):
        """Leaves nothing of JuiceFS behind, even after a failed start; raises with what
        stayed."""
        if self.driver:
            self.driver.stop(signal.SIGKILL)
        left = self._unmount_all()
        for pid in self.processes():
            os.kill(pid, signal.SIGKILL)
        try:
            wait_for("every juicefs process to end", lambda: not self.processes(), 20, 0.1)
        except AssertionError:
            left.append("juicefs processes %s" % self.processes())
        if self.redis:
            self.redis.stop()
        # lazily where busy: the cluster's shims and runc started from the overlaid /usr/bin
        for target in reversed(self.overlays):
            if subprocess.run(["umount", target], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", target], capture_output=True)
        left += ["overlay " + m for m in namespace.mount_points()
                 if m in self.overlays and self._is_our_overlay(m)]
        self.overlays = []
        if left:
            raise AssertionError("JuiceFS left: " + ", ".join(left))

    # ----- what the tests look at -------------------------------------------------------

    def processes(self):
        """Pids of every process running this suite's juicefs binary (mount.juicefs and
        `juicefs mount` alike; those of other suites run other copies)."""
        ours = os.path.realpath(self.juicefs)
        pids = []
        for entry in glob.glob("/proc/[0-9]*"):
            try:
                if os.readlink(entry + "/exe") == ours:
                    pids.append(int(entry[len("/proc/"):]))
            except OSError:
                pass
        return pids

    def mount_options(self):
        """{pid: the -o argument} of every running mount.juicefs of this suite. (Its whole
        command line holds the meta URL, a secret's value: never print it.)"""
        options = {}
        for pid in self.processes():
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    # juicefs sets its process title: one NUL-less string, split at spaces
                    argv = f.read().decode(errors="replace").replace("\0", " ").split()
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == "mount.juicefs" and "-o" in argv[:-1]:
                options[pid] = argv[argv.index("-o") + 1]
        return options

    def mounts(self):
        """Mount points of this file system (its FUSE mounts and the binds of its folders)."""
        source = "JuiceFS:" + FS_NAME
        with open("/proc/self/mountinfo") as f:
            lines = [line.split() for line in f]
        return [namespace._unescape(f[4]) for f in lines
                if f[f.index("-") + 2] == source]

    def mount_by_hand(self, target):
        """An independent `juicefs mount` of the whole file system (its own cache), as a person
        checking the data would make; undo with umount()."""
        os.makedirs(target, exist_ok=True)
        run([self.juicefs, "mount", "-d", "--no-usage-report",
             "--cache-dir", os.path.join(self.dir, "cache-by-hand"),
             "--log", os.path.join(self.cluster.logs, "juicefs-by-hand.log"),
             self.meta_url, target])

    def umount(self, target):
        run([self.juicefs, "umount", target])

    def secret_data(self):
        """What a JuiceFS Secret carries for this file system (community edition keys)."""
        return {"name": FS_NAME, "metaurl": self.meta_url, "storage": "file",
                "bucket": self.bucket}

    # ----- pieces -----------------------------------------------------------------------

    def _unpack(self):
        folder = os.environ[VARIABLE]
        run(["tar", "-xJf", os.path.join(folder, TARBALL), "-C", self.dir])
        # only the JuiceFS tarball is unpacked: the ceph-csi files are absent
        run(["sha256sum", "--quiet", "-c", "--ignore-missing",
             os.path.join(folder, "SHA256SUMS")], cwd=self.dir)

    def _fixed_paths(self):
        """The executables at the driver's fixed paths, and tmpfs mounts over its folders (the
        cluster's host paths, so teardown unmounts below them too)."""
        layers = {"/usr/local/bin": ("juicefs", self.juicefs),
                  "/usr/bin": ("mount.juicefs", "/usr/local/bin/juicefs")}
        for target in BIN_DIRS:
            name, link = layers[target]
            layer = os.path.join(self.dir, "layer" + target.replace("/", "-"))
            os.makedirs(layer)
            os.symlink(link, os.path.join(layer, name))
            # two lower layers and no upper: read-only, nothing is ever written to the host
            run(["mount", "-t", "overlay", "overlay", "-o",
                 "lowerdir=%s:%s" % (layer, target), target])
            self.overlays.append(target)
        for path in HOST_PATHS:
            namespace.mount_tmpfs(path)
            # The host path is bound from a folder under the cluster's dir, its peer: without
            # this, every mount the driver makes here shows there too, and the driver, seeing
            # that second reference, never unmounts /var/lib/jfs/<id> after the last unpublish.
            run(["mount", "--make-private", path])

    def _start_redis(self):
        port = free_port()
        data = os.path.join(self.dir, "redis")
        os.makedirs(data)
        self.redis = Process("redis-server", [
            "redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", data,
            "--save", "", "--appendonly", "yes", "--daemonize", "no"],
            os.path.join(self.cluster.logs, "redis-server.log"))
        self.meta_url = "redis://127.0.0.1:%d/1" % port
        self.start_redis()

    def stop_redis(self):
        """The metadata engine lost: killed, as a crashed or unreachable server would be."""
        self.redis.stop(signal.SIGKILL)

    def start_redis(self):
        """redis-server (again) on the same port and data (append-only: nothing is lost)."""
        self.redis.start()
        wait_for("redis-server to answer", self._redis_answers, 30, 0.1)

    def _redis_answers(self):
        if not self.redis.alive():
            raise AssertionError("redis-server exited:\n" + self.redis.tail())
        port = self.meta_url.rsplit(":", 1)[1].split("/")[0]
        done = subprocess.run(["redis-cli", "-p", port, "ping"], capture_output=True, text=True)
        return done.stdout.strip() == "PONG"

    def _is_our_overlay(self, target):
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == target and self.dir in line for line in f)

    @staticmethod
    def _listening(proc, socket_path):
        if not proc.alive():
            raise AssertionError("%s exited:\n%s" % (proc.name, proc.tail()))
        return os.path.exists(socket_path)

    def _unmount_all(self):
        """Unmounts every mount of this file system, deepest first (FUSE: a lazy unmount where
        a plain one is refused); returns those that stayed."""
        for target in sorted(set(self.mounts()), key=lambda m: -m.count("/")):
            if subprocess.run(["umount", target], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", target], capture_output=True)
        deadline = time.monotonic() + 10
        while self.mounts() and time.monotonic() < deadline:
            time.sleep(0.1)
        return ["mount " + m for m in self.mounts()]
