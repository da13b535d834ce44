"""A real single-host Ceph cluster with one CephFS, for the suites that run ceph-csi behind
flexcsi: the scripts and binaries come from the third-party folder FLEXCSI_THIRD_PARTY_CSI
names (its README has every measured fact: /work/shared/third-party-csi/README.md in CI).

The daemons are started by the folder's ceph-cluster-start.sh under a directory of the test
(about 16 s) and stopped by ceph-cluster-stop.sh, which only touches the pids it recorded.
Everything here runs in the suite's private mount namespace."""
import json
import os
import subprocess

from clustertest import run

VARIABLE = "FLEXCSI_THIRD_PARTY_CSI"
TARBALL = "ceph-csi-v3.8.1-linux-amd64.tar.xz"
FS_NAME = "cephfs"
SUBVOLUME_GROUP = "csi"  # config.json's cephFS.subvolumeGroup: where CreateVolume puts volumes


class Missing(Exception):
    """The third-party folder is not given or lacks the ceph-csi tarball: the suite skips."""


def third_party_folder():
    folder = os.environ.get(VARIABLE)
    if not folder:
        raise Missing("%s is unset (the folder with %s)" % (VARIABLE, TARBALL))
    if not os.path.isfile(os.path.join(folder, TARBALL)):
        raise Missing("%s=%s has no %s" % (VARIABLE, folder, TARBALL))
    return folder


def unpack(folder, dest):
    """Unpacks the ceph-csi tarball into `dest` and checks it against the folder's SHA256SUMS
    (only the files of this tarball are there); returns `dest`."""
    os.makedirs(dest, exist_ok=True)
    run(["tar", "-xJf", os.path.join(folder, TARBALL), "-C", dest])
    run(["sha256sum", "--quiet", "-c", "--ignore-missing",
         os.path.join(os.path.abspath(folder), "SHA256SUMS")], cwd=dest)
    return dest


class CephCluster:
    """mon, mgr, osd (BlueStore on a sparse file), mds and the file system `cephfs`, all state
    under `directory` (which must not exist yet or be empty)."""

    def __init__(self, unpacked, directory, address=None):
        """`address`: where every daemon listens, when not 127.0.0.1 (a multi-node cluster's
        nodes each have a loopback of their own: they reach the suite at its bridge's
        address)."""
        self.scripts = os.path.join(unpacked, "scripts")
        self.dir = directory
        self.conf = os.path.join(directory, "ceph.conf")
        self.address = address
        self.env = {}
        self.started = False

    def start(self, timeout=180):
        self.started = True  # even a failed start may have left daemons for stop()
        r = subprocess.run([self._start_script(), self.dir],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("ceph-cluster-start.sh: exit %d\n%s\n%s"
                                 % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        with open(os.path.join(self.dir, "env")) as f:
            self.env = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)

    def _start_script(self):
        """ceph-cluster-start.sh, or for another address a copy of it beside this cluster's
        directory: the script has no option for the address, and 127.0.0.1 is all it names
        (ports, mon_host, public_addr, the monmap, env)."""
        script = os.path.join(self.scripts, "ceph-cluster-start.sh")
        if self.address is None:
            return script
        with open(script) as f:
            text = f.read()
        moved = text.replace("127.0.0.0/8", self.address + "/32").replace(
            "127.0.0.1", self.address)
        if "127.0.0" in moved or moved == text:
            raise AssertionError("%s no longer names 127.0.0.1 the way this copy expects"
                                 % script)
        copy = self.dir.rstrip("/") + "-start.sh"
        with open(copy, "w") as f:
            f.write(moved)
        os.chmod(copy, 0o755)
        return copy

    def stop(self):
        """Kills the recorded daemons, then lets ceph-cluster-stop.sh unmount what is mounted
        under the directory and remove it. The cluster is thrown away, so nothing needs the
        script's graceful TERM: the mds alone takes 8-9 s over it, and under load the script
        waited out its 20 s before its KILL (24 s in all beside stress-ng --cpu 2)."""
        if not self.started:
            return
        self.started = False
        pids = os.path.join(self.dir, "pids")
        for name in os.listdir(pids) if os.path.isdir(pids) else []:
            try:
                with open(os.path.join(pids, name)) as f:
                    pid = int(f.read().strip())
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    ours = self.dir.encode() in f.read()  # as the script checks: not reused
                if ours:
                    os.kill(pid, 9)
            except (OSError, ValueError):
                continue
        run([os.path.join(self.scripts, "ceph-cluster-stop.sh"), self.dir, "--purge"])

    def kill_daemon(self, name):
        """kill -9 of one daemon by its recorded pid (`name` as in DIR/pids: "mds.a",
        "mon.a"), as a host losing it; start_daemon brings it back."""
        with open(os.path.join(self.dir, "pids", name + ".pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if self.dir.encode() not in f.read():
                raise AssertionError("pid %d is no longer %s of %s" % (pid, name, self.dir))
        os.kill(pid, 9)

    def start_daemon(self, name, argv):
        """Starts one daemon again as ceph-cluster-start.sh did (in the foreground, its output
        appended to DIR/log/NAME.out, its pid in DIR/pids), so that stop() kills it too.
        `argv`: e.g. ["ceph-mds", "-i", "a"]; the cluster's ceph.conf is added."""
        with open(os.path.join(self.dir, "log", name + ".out"), "ab") as out:
            child = subprocess.Popen(argv + ["-c", self.conf, "-f"], stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        with open(os.path.join(self.dir, "pids", name + ".pid"), "w") as f:
            f.write("%d\n" % child.pid)
        return child

    @property
    def monitor(self):
        """The monitor's msgr v1 address, as ceph-csi's config.json lists monitors."""
        return self.env["MON_V1"]

    def user_key(self, user):
        """The cephx key of client.<user>, read from the cluster (never logged)."""
        return run(["ceph", "-c", self.conf, "auth", "get-key", "client." + user]).strip()

    def subvolumes(self):
        """The names of the subvolumes in ceph-csi's group, as `ceph fs subvolume ls` lists
        them; [] while the group does not exist."""
        r = subprocess.run(["ceph", "-c", self.conf, "fs", "subvolume", "ls", FS_NAME,
                            SUBVOLUME_GROUP, "-f", "json"], capture_output=True, text=True)
        if r.returncode != 0:
            if "ENOENT" in r.stderr or "does not exist" in r.stderr:
                return []
            raise AssertionError("ceph fs subvolume ls: %s" % r.stderr.strip())
        return [s["name"] for s in json.loads(r.stdout or "[]")]

    def mkdir(self, path):
        """Makes `path` in the file system through a short-lived admin mount."""
        mnt = os.path.join(self.dir, "mkdir-mnt")
        with self.admin_mount("/", mnt):
            os.makedirs(os.path.join(mnt, path.lstrip("/")), exist_ok=True)

    def admin_mount(self, path, mountpoint):
        """A context manager: an independent `ceph-fuse -n client.admin` mount of `path` at
        `mountpoint`, the way an operator looks at the file system without any CSI driver."""
        return _AdminMount(self.conf, path, mountpoint)


class _AdminMount:
    def __init__(self, conf, path, mountpoint):
        self.conf, self.path, self.mountpoint = conf, path, mountpoint

    def __enter__(self):
        os.makedirs(self.mountpoint, exist_ok=True)
        run(["ceph-fuse", "-c", self.conf, "-n", "client.admin", "-r", self.path,
             self.mountpoint])
        return self.mountpoint

    def __exit__(self, *exc):
        # umount ends the ceph-fuse process (README: "umount MNT ends the ceph-fuse process")
        subprocess.run(["umount", self.mountpoint], capture_output=True)
        return False


def ceph_fuse_pids(below):
    """The ceph-fuse processes whose command line names a path under `below` (the test's own
    temp dir: its staging mounts and its admin mounts), not those of anyone else."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"ceph-fuse" and any(
                a.startswith(below.encode()) for a in argv):
            pids.append(int(pid))
    return pids
