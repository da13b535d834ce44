"""Mount-namespace plumbing for the test cluster: everything it mounts stays in the private
mount namespace the tests run in, and is undone at teardown."""
import os
import subprocess


def _mnt_ns(pid):
    try:
        return os.readlink("/proc/%s/ns/mnt" % pid)
    except OSError:
        return None


def in_private_mount_namespace():
    """True when this process's mount namespace is not the host's (PID 1's, or where that is
    unreadable, the parent's: ctest or the shell that ran unshare)."""
    own = _mnt_ns("self")
    host = _mnt_ns(1) or _mnt_ns(os.getppid())
    return own is not None and host is not None and own != host


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


def detach_loop_devices_below(prefix):
    """Detaches loop devices whose backing file lies under `prefix` (also once deleted, when
    losetup shows it with a ' (deleted)' suffix); returns those that stayed."""
    for device, backing in loop_devices():
        if backing.startswith(prefix):
            subprocess.run(["losetup", "--detach", device], capture_output=True)
    return ["loop device %s (%s)" % (d, b) for d, b in loop_devices() if b.startswith(prefix)]
