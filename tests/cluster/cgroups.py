"""One cgroup subtree per test cluster (cgroup v1 hierarchies, as on these machines), so that
teardown finds every process the cluster started: control plane, containerd shims, containers,
a hand-restarted kubelet, and whatever the tests started beside them.

Layout, the same relative path in every hierarchy (kubelet's --cgroup-root must be one path):
  <base>/flexcsi-cluster-<pid>/          <base> = the harness's own memory cgroup, so the whole
  <base>/flexcsi-cluster-<pid>/procs     cluster stays inside the limits the harness had
  <base>/flexcsi-cluster-<pid>/pods      kubelet's --cgroup-root
"""
import os
import signal
import time

ROOT = "/sys/fs/cgroup"
PREFIX = "flexcsi-cluster-"


def _hierarchies():
    """{mount dir: current path} for every v1 hierarchy this process is in."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if not controllers:
                continue  # the v2 unified entry of a hybrid setup
            name = controllers.replace("name=", "")
            for candidate in (name, name.split(",")[0]):
                mount = os.path.join(ROOT, candidate)
                if os.path.isdir(mount):
                    out[mount] = path
                    break
    return out


def _copy_cpuset(mount, directory):
    """A new v1 cpuset group is unusable until it has cpus and mems: take the parent's."""
    if not os.path.basename(mount).startswith("cpuset"):
        return
    parent = os.path.dirname(directory)
    for knob in ("cpuset.cpus", "cpuset.mems"):
        target = os.path.join(directory, knob)
        with open(os.path.join(parent, knob)) as f:
            value = f.read().strip()
        with open(target) as f:
            if f.read().strip():
                continue
        with open(target, "w") as f:
            f.write(value)


def _base(hierarchies):
    """Where cluster groups go: the deepest of our groups, the memory limit's."""
    return max(hierarchies.values(), key=len)


def pid_alive(pid):
    return os.path.exists("/proc/%d" % pid)


class ClusterCgroups:
    def __init__(self, owner_pid=None):
        """The groups of the harness `owner_pid` (default: this process)."""
        self.hierarchies = _hierarchies()
        if not self.hierarchies or "pids" not in {os.path.basename(m) for m in self.hierarchies}:
            raise RuntimeError("the test cluster needs cgroup v1 hierarchies (pids among them)")
        self.relative = os.path.join(_base(self.hierarchies),
                                     PREFIX + str(owner_pid or os.getpid()))

    @property
    def pods_root(self):
        return os.path.join(self.relative, "pods")

    def create_node_root(self, node_name):
        """A pods root of its own for one node of a multi-node cluster (kubelet's
        --cgroup-root), inside the cluster's subtree so teardown removes it with the rest."""
        relative = os.path.join(self.relative, "pods-" + node_name)
        for mount in self.hierarchies:
            _make_group(mount, self._dir(mount, relative))
        return relative

    def _dir(self, mount, relative):
        return os.path.join(mount, relative.lstrip("/"))

    def create(self):
        for mount in self.hierarchies:
            for relative in (self.relative, self.pods_root, os.path.join(self.relative, "procs")):
                _make_group(mount, self._dir(mount, relative))

    def join(self):
        """Moves this process (and so everything it starts from now on) into the cluster's
        `procs` group of every hierarchy."""
        for mount in self.hierarchies:
            with open(os.path.join(self._dir(mount, self.relative), "procs", "cgroup.procs"),
                      "w") as f:
                f.write(str(os.getpid()))

    def leave(self):
        for mount, path in self.hierarchies.items():
            with open(os.path.join(self._dir(mount, path), "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def pids(self):
        """Every process in the subtree, this one excepted."""
        found = set()
        for mount in self.hierarchies:
            if not os.path.basename(mount).startswith("pids"):
                continue
            for directory, _, files in os.walk(self._dir(mount, self.relative)):
                if "cgroup.procs" in files:
                    with open(os.path.join(directory, "cgroup.procs")) as f:
                        found.update(int(p) for p in f.read().split())
        found.discard(os.getpid())
        return found

    def kill_all(self, timeout=20):
        """SIGKILL until the subtree is empty (forks racing the kill are caught next round)."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def remove(self):
        """Removes every group below ours (kubelet's and runc's too), ours, and the empty ones
        above it. Returns the directories of ours that could not be removed."""
        left = []
        for mount in self.hierarchies:
            top = self._dir(mount, self.relative)
            if not os.path.isdir(top):
                continue
            for directory, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                for _ in range(50):  # a group whose last task just died can be busy briefly
                    try:
                        os.rmdir(directory)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.1)
                else:
                    left.append(directory)
        # The groups above ours (<base> in the hierarchies where the harness is at the root) are
        # shared with any other cluster running beside this one, whichever of them made them:
        # each harness removes them when empty, and one still holding another cluster's group
        # is that cluster's, not a leak of ours.
        for mount in self.hierarchies:
            for directory in _ancestors_to_base(self._dir(mount, self.relative), mount,
                                                self._dir(mount, self.hierarchies[mount])):
                try:
                    os.rmdir(directory)
                except FileNotFoundError:
                    pass
                except OSError:
                    break
        return left


def _make_group(mount, path):
    """mkdir -p for a cgroup, when another cluster's harness may be making or removing the
    same empty groups above it at the same moment."""
    for _ in range(20):
        missing, probe = [], path
        while not os.path.isdir(probe):
            missing.append(probe)
            probe = os.path.dirname(probe)
        try:
            for directory in reversed(missing):
                try:
                    os.mkdir(directory)
                except FileExistsError:
                    continue
                _copy_cpuset(mount, directory)
            return
        except FileNotFoundError:
            continue  # a parent was removed under us: walk again
    raise RuntimeError("could not create cgroup " + path)


def _ancestors_to_base(group, mount, own):
    """The directories between `group` and the hierarchy's root, deepest first, stopping at
    `own` (the group the harness itself started in, which is not ours to remove)."""
    out = []
    directory = os.path.dirname(group)
    while directory != mount and directory.startswith(mount + "/"):
        if directory == own:
            break
        out.append(directory)
        directory = os.path.dirname(directory)
    return out


def stale_owners():
    """Pids of harnesses that are gone (killed with -9) but whose cluster groups are left."""
    hierarchies = _hierarchies()
    base = _base(hierarchies)
    owners = set()
    for mount in hierarchies:
        parent = os.path.join(mount, base.lstrip("/"))
        if os.path.isdir(parent):
            owners.update(int(name[len(PREFIX):]) for name in os.listdir(parent)
                          if name.startswith(PREFIX) and name[len(PREFIX):].isdigit())
    return sorted(pid for pid in owners if not pid_alive(pid))
