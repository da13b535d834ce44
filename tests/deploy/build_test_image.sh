#!/usr/bin/env bash
# Builds the container image the real-cluster deploy suite installs: the .deb of this build
# (cpack), put into deploy/docker/Dockerfile's image by scripts/build-image.sh --deb, on a
# Debian 12 base made here by mmdebstrap, and saved as an archive for the cluster's containerd.
# podman keeps its store under OUT_DIR (the base is made once per build tree).
#
# Usage: build_test_image.sh BUILD_DIR OUT_DIR      -> OUT_DIR/flexcsi-image.tar
set -euo pipefail
build=$1 out=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

mkdir -p "$out"
rm -rf "$out/deb" "$out/flexcsi-image.tar"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out/deb" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(ls "$out"/deb/flexcsi_*.deb)
# podman mounts its store's layers: a private mount namespace keeps them off the host and
# takes them away when the build ends, whatever happens.
unshare -m --propagation private \
  "$repo/scripts/build-image.sh" --deb "$deb" --root "$out/podman" --archive "$out/flexcsi-image.tar"

# The full build (the Dockerfile's default target) sends the repository as its context: with
# podman too, build trees, .git and image archives must stay out of it (podman reads the ignore
# file only when told, which build-image.sh does). Checked with the same ignore file on the base
# image, with an archive where docs/operations.md's `--archive flexcsi.tar` puts one (the
# repository root, when run from there); a name of our own, removed whatever happens.
probe="$repo/flexcsi-context-probe-$$.tar"
trap 'rm -f "$probe"' EXIT
head -c 1048576 /dev/zero >"$probe"
unshare -m --propagation private podman --root "$out/podman/storage" --runroot "$out/podman/run" \
  build --quiet --network=host --pull=never -f - \
  --ignorefile "$repo/deploy/docker/Dockerfile.dockerignore" "$repo" >/dev/null <<'DOCKERFILE'
FROM localhost/flexcsi-debian:12
COPY . /src
RUN test -f /src/CMakeLists.txt && ! test -e /src/.git \
    && ! find /src -name CMakeCache.txt | grep . && ! find /src -name '*.tar' | grep . \
    && echo "context: $(du -sh /src | cut -f1)"
DOCKERFILE
echo "ok: the repository's build context leaves out build trees, .git and image archives"
