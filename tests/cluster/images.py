"""Container images for the test cluster, made from Debian packages with no registry.

- busybox: busybox-static's /bin/busybox with a link per applet.
- pause: the sandbox process every pod starts with (a few lines of static C).

Each is written as a docker-archive tar (what `docker save` writes), which
`ctr -n k8s.io images import` reads. Pods use them with imagePullPolicy: Never."""
import hashlib
import io
import json
import os
import subprocess
import tarfile

BUSYBOX = "localhost/flexcsi/busybox:1"
PAUSE = "localhost/flexcsi/pause:1"

_PAUSE_C = r"""
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
/* Sleeps until told to stop; reaps children so that a shared PID namespace has no zombies. */
static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
"""


def _add_file(tar, name, data, mode=0o755):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar, name, mode=0o755):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
    tar.addfile(info)


def _add_link(tar, name, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, 0
    tar.addfile(info)


def _write_archive(path, tag, layer, config):
    """One-layer docker archive: manifest.json, the image config and the layer."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    image_config = {
        "architecture": "amd64", "os": "linux", "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(image_config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [tag], "Layers": ["layer.tar"]}]
    with tarfile.open(path, "w") as tar:
        _add_file(tar, "layer.tar", layer, 0o644)
        _add_file(tar, config_name, config_bytes, 0o644)
        _add_file(tar, "manifest.json", json.dumps(manifest).encode(), 0o644)
    return path


def _base_dirs(tar):
    for d in ("bin", "dev", "etc", "proc", "sys", "tmp", "var", "data"):
        _add_dir(tar, d, 0o1777 if d == "tmp" else 0o755)
    _add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
    _add_file(tar, "etc/group", b"root:x:0:\n", 0o644)


def build_busybox(path, busybox="/bin/busybox"):
    if not os.path.exists(busybox):
        raise RuntimeError("%s is missing: install Debian's busybox-static" % busybox)
    applets = subprocess.run([busybox, "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _base_dirs(tar)
        with open(busybox, "rb") as f:
            _add_file(tar, "bin/busybox", f.read())
        for applet in applets:
            if applet != "busybox":
                _add_link(tar, "bin/" + applet, "busybox")
    return _write_archive(path, BUSYBOX, buf.getvalue(),
                          {"Cmd": ["sh"], "Env": ["PATH=/bin"], "WorkingDir": "/"})


def build_pause(path, workdir):
    source, binary = os.path.join(workdir, "pause.c"), os.path.join(workdir, "pause")
    with open(source, "w") as f:
        f.write(_PAUSE_C)
    subprocess.run(["cc", "-static", "-O2", "-o", binary, source], check=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _base_dirs(tar)
        with open(binary, "rb") as f:
            _add_file(tar, "pause", f.read())
    return _write_archive(path, PAUSE, buf.getvalue(), {"Entrypoint": ["/pause"]})
