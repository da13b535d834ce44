"""Mount-namespace plumbing for the test cluster: everything it mounts stays in the private
mount namespace the tests run in, and is undone at teardown."""
import os
import subprocess
import sys


def _ns(kind, pid):
    try:
        return os.readlink("/proc/%s/ns/%s" % (pid, kind))
    except OSError:
        return None


# Set by enter_private_namespaces to the namespaces a process left through unshare: where PID
# 1's are unreadable (some sandboxes) and the parent is PID 1 (a suite run detached), nothing
# else tells the host's namespace, and the suite would re-run itself under unshare forever.
_OUTER = "FLEXCSI_OUTER_NS_"


def _in_private(kind):
    """True when this process's `kind` namespace is not the host's (PID 1's, or where that is
    unreadable, the one it left through unshare, or the parent's: the shell that ran unshare)."""
    own = _ns(kind, "self")
    host = _ns(kind, 1) or os.environ.get(_OUTER + kind) or _ns(kind, os.getppid())
    return own is not None and host is not None and own != host


def enter_private_namespaces(argv, network=False):
    """Unless this process already has a private mount namespace, re-runs `argv` (a Python
    script and its arguments) under `unshare -m` (with `network`, also `-n`); then it does not
    return."""
    if in_private_mount_namespace():
        return
    if os.environ.get(_OUTER + "mnt") and os.environ[_OUTER + "mnt"] == _ns("mnt", "self"):
        raise RuntimeError("unshare -m left this process in the host's mount namespace")
    for kind in ("mnt", "net"):
        os.environ[_OUTER + kind] = _ns(kind, "self") or ""
    os.execvp("unshare", ["unshare", "-m", *(["-n"] if network else []), "--propagation",
                          "private", sys.executable, *argv])


def in_private_mount_namespace():
    return _in_private("mnt")


def in_private_network_namespace():
    return _in_private("net")


def _mount(*args):
    subprocess.run(["mount", *args], check=True, stderr=subprocess.PIPE)


def make_rshared_root():
    """Inside the private namespace, mounts propagate among its own peers again: kubelet's
    volume mounts must reach the containers' mount namespaces (and the bridge's)."""
    _mount("--make-rshared", "/")


def bind(source, target):
    _mount("--bind", source, target)


def mount_tmpfs(target, create=False):
    if create and not os.path.isdir(target):
        os.makedirs(target)
    _mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", target)


def overlay_top_dirs(paths, scratch):
    """Puts an overlay over the top-level folder (/usr, /var, /run, ...) of each of `paths`, in
    this mount namespace alone, with its writes under `scratch`; returns the mount points. Then
    the folders a cluster needs at a node's paths can be made there without ever writing the
    host, so clusters side by side (and a harness killed with -9) leave the host as it was. It
    has to happen before anything is mounted below those folders: an overlay shows its lower
    folder without the mounts under it."""
    tops = sorted({"/" + p.strip("/").split("/")[0] for p in paths} - {"/"})
    # a folder holding `scratch` cannot be overlaid with writes inside itself (and is temp)
    tops = [t for t in tops if not os.path.abspath(scratch).startswith(t + "/")]
    for i, top in enumerate(tops):
        layer = os.path.join(scratch, "overlay-%d" % i)
        upper, work = os.path.join(layer, "upper"), os.path.join(layer, "work")
        os.makedirs(upper)
        os.makedirs(work)
        _mount("-t", "overlay", "overlay", "-o",
               "lowerdir=%s,upperdir=%s,workdir=%s" % (top, upper, work), top)
    return tops


def remove_overlays(tops, scratch):
    """Takes away the overlays overlay_top_dirs made (everything mounted below them must be gone
    already); returns those that stayed."""
    for top in tops:
        if subprocess.run(["umount", top], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", top], capture_output=True)
    with open("/proc/self/mountinfo") as f:
        ours = [_unescape(line.split()[4]) for line in f if " overlay " in line and scratch in line]
    return ["overlay " + m for m in ours if m in tops]


def _unescape(field):
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_points():
    with open("/proc/self/mountinfo") as f:
        return [_unescape(line.split()[4]) for line in f]


def unmount_below(directory, extra=()):
    """Unmounts every mount at or below `directory` (and the `extra` targets), deepest first;
    returns those that stayed."""
    prefix = directory.rstrip("/") + "/"
    targets = [m for m in mount_points()
               if m.startswith(prefix) or m == directory or m in extra]
    for target in sorted(set(targets), key=lambda m: (-m.count("/"), m)):
        r = subprocess.run(["umount", target], capture_output=True)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)
    left = [m for m in mount_points() if m.startswith(prefix) or m in extra]
    return ["mount " + m for m in left]


def loop_devices():
    """[(device, backing file)] of every attached loop device."""
    r = subprocess.run(["losetup", "--list", "--noheadings", "--raw", "--output",
                        "NAME,BACK-FILE"], capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split(" ", 1)
        if len(parts) == 2:
            out.append((parts[0], _unescape(parts[1]).strip()))
    return out


def loop_devices_of_files_below(directory):
    """Loop devices bound to a file below `directory`, compared by device and inode: a device a
    pod attached names its file by the pod's path, or once that pod's mount is gone, by the path
    within it."""
    files = set()
    for root, _, names in os.walk(directory):
        for name in names:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            files.add(("%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), str(st.st_ino)))
    r = subprocess.run(["losetup", "--list", "--noheadings", "--raw", "--output",
                        "NAME,BACK-MAJ:MIN,BACK-INO"], capture_output=True, text=True)
    # --raw still pads MAJ:MIN, with the blanks written as \x20
    rows = [line.replace("\\x20", "").split() for line in r.stdout.splitlines()]
    return [row[0] for row in rows if len(row) == 3 and (row[1], row[2]) in files]


def detach_loop_devices_of_files_below(directory):
    """Detaches loop_devices_of_files_below(directory); returns those that stayed."""
    for device in loop_devices_of_files_below(directory):
        subprocess.run(["losetup", "--detach", device], capture_output=True)
    return ["loop device %s (a file below %s)" % (d, directory)
            for d in loop_devices_of_files_below(directory)]


def detach_loop_devices_below(prefix):
    """Detaches loop devices whose backing file lies under `prefix` (also once deleted, when
    losetup shows it with a ' (deleted)' suffix); returns those that stayed."""
    for device, backing in loop_devices():
        if backing.startswith(prefix):
            subprocess.run(["losetup", "--detach", device], capture_output=True)
    return ["loop device %s (%s)" % (d, b) for d, b in loop_devices() if b.startswith(prefix)]
