"""flexcsi's Debian package installed on the test cluster's node as docs/operations.md ("Install
on hosts") has an operator do it, without touching this machine: `dpkg -i` writes into overlays
over /usr and /var/lib/dpkg that exist only in the suite's private mount namespace (the cluster's
own overlays of /usr and /var where it has them) (the
configuration dir /etc/flexcsi and the state dirs are the cluster's private host paths), and the
package's systemd units are started the way systemd would start them: their ExecStartPre and
ExecStart lines, run as children of the suite, in the cluster's cgroup.

There is no systemd here (PID 1 is not systemd), so "systemctl enable --now UNIT" is read as:
run the unit's commands, with %H (the host name) being the Kubernetes node name, as on a node
whose kubelet takes its node name from the host name."""
import os
import shlex
import subprocess

from cluster import Process
import namespace

OVERLAID = ["/usr", "/var/lib/dpkg"]
UNIT_DIR = "/lib/systemd/system"


class HostPackage:
    def __init__(self, cluster, deb):
        self.cluster = cluster
        self.deb = deb
        self.dir = os.path.join(cluster.dir, "host-package")
        self.mounted = []
        self.procs = {}

    def install(self):
        """`apt install ./flexcsi_*.deb`, into the namespace's overlays."""
        for target in OVERLAID:
            if any(target == top or target.startswith(top + "/") for top in self.cluster.overlays):
                continue  # the cluster's own overlay (namespace.overlay_top_dirs) takes the writes
            layer = os.path.join(self.dir, target.strip("/").replace("/", "-"))
            upper, work = layer + "/upper", layer + "/work"
            os.makedirs(upper, exist_ok=True)
            os.makedirs(work, exist_ok=True)
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            "lowerdir=%s,upperdir=%s,workdir=%s" % (target, upper, work), target],
                           check=True)
            self.mounted.append(target)
        # No dpkg log or trigger run: both would write outside the overlays.
        return subprocess.run(["dpkg", "--log=/dev/null", "--no-triggers", "-i", self.deb],
                              check=True, capture_output=True, text=True).stdout

    def start_unit(self, unit):
        """`systemctl start UNIT`: its StateDirectory and RuntimeDirectory, its ExecStartPre
        commands, then ExecStart as a process of the suite."""
        settings = self.unit_settings(unit)
        for key, base in (("StateDirectory", "/var/lib"), ("RuntimeDirectory", "/run")):
            for name in settings.get(key, []):
                os.makedirs(os.path.join(base, name), exist_ok=True)
        for command in settings.get("ExecStartPre", []):
            subprocess.run(self.argv(command), check=True)
        (command,) = settings["ExecStart"]
        self.procs[unit] = Process(unit, self.argv(command),
                                   os.path.join(self.cluster.logs, unit + ".log"))
        self.procs[unit].start()
        return self.procs[unit]

    def unit_settings(self, unit):
        settings = {}
        with open(os.path.join(UNIT_DIR, unit)) as f:
            for line in f:
                if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
                    key, value = line.strip().split("=", 1)
                    settings.setdefault(key, []).append(value)
        return settings

    def argv(self, command):
        return [arg.replace("%H", self.cluster.node_name) for arg in shlex.split(command)]

    def stop(self):
        """Stops the units' processes, then takes the overlays away (lazily: a container shim
        started from the overlaid /usr may still run; the namespace ends with the suite)."""
        for proc in reversed(list(self.procs.values())):
            proc.stop()
        self.procs = {}
        for target in reversed(self.mounted):
            subprocess.run(["umount", "-l", target], check=False)
        self.mounted = []
        namespace.unmount_below(self.dir)
