#!/usr/bin/env bash
# Builds the flexcsi container image with podman from deploy/docker/Dockerfile, without a registry:
# the Debian 12 base is made here by mmdebstrap (once; kept as localhost/flexcsi-debian:12).
#
#   scripts/build-image.sh                       # compile inside the image build (about 20 min on 2 cores)
#   scripts/build-image.sh --deb build/flexcsi_0.2.0_amd64.deb   # install a .deb built here (cpack)
#   scripts/build-image.sh --archive flexcsi.tar # also save it for `ctr -n k8s.io images import`
#
# Options: --tag NAME (default localhost/flexcsi:<version>), --base IMAGE (use this Debian 12
# image, e.g. debian:12 from a registry, instead of making one), --root DIR (a podman store of its
# own, as the tests use). With a registry, `docker build -f deploy/docker/Dockerfile .` works too.
# The image is tagged only once every step has succeeded: a failed build leaves no image behind.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The release of CMakeLists.txt's project() (the one place for it); the commit, for a build from
# the repository, whose context leaves .git out.
version=$(sed -n 's/^project(flexcsi VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
commit=$(git -C "$repo" rev-parse --short=7 HEAD 2>/dev/null || true)
tag=localhost/flexcsi:$version
deb="" base="" archive="" store=()

usage() { sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2; }
while (($#)); do
  case $1 in
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --deb) deb=$(realpath "${2:?--deb needs a file}"); shift 2 ;;
    --base) base=${2:?--base needs an image}; shift 2 ;;
    --archive) archive=$(realpath -m "${2:?--archive needs a file}"); shift 2 ;;
    --root) store=(--root "${2:?--root needs a folder}/storage" --runroot "$2/run"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "build-image: unknown argument $1" >&2; usage ;;
  esac
done

need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "build-image: $1 is not installed; on Debian 12: apt-get install $1" >&2
  echo "  (or, with a registry and docker: docker build -f deploy/docker/Dockerfile -t flexcsi:$version .)" >&2
  exit 2
}
need podman
[[ -z $deb || -f $deb ]] || { echo "build-image: no such .deb: $deb" >&2; exit 2; }

# RUN steps fetch Debian packages; the host's network avoids needing a container network
# (netavark, iptables) just for that.
podman=(podman "${store[@]}")
build=("${podman[@]}" build --network=host --pull=never)

if [[ -z $base ]]; then
  base=localhost/flexcsi-debian:12
  if ! "${podman[@]}" image exists "$base"; then
    need mmdebstrap
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "build-image: making $base with mmdebstrap (once)"
    mmdebstrap --quiet --variant=minbase bookworm "$work/base.tar"
    "${podman[@]}" import --quiet "$work/base.tar" "$base" >/dev/null
    rm -rf "$work"
  fi
fi
# A registry's debian:12 has a -slim sibling; a local base serves both stages.
runtime=$base
[[ $base == debian:12 || $base == docker.io/library/debian:12 ]] && runtime=$base-slim

started=$SECONDS
if [[ -n $deb ]]; then
  # The build context is a folder with only the .deb, so nothing else is sent or copied.
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  cp "$deb" "$context/"
  "${build[@]}" -f "$repo/deploy/docker/Dockerfile" --target prebuilt \
    --build-arg RUNTIME_IMAGE="$runtime" -t "$tag" "$context"
else
  # podman reads no Dockerfile.dockerignore beside the Dockerfile on its own: without
  # --ignorefile the build trees (GBs) would be sent as context.
  "${build[@]}" -f "$repo/deploy/docker/Dockerfile" \
    --ignorefile "$repo/deploy/docker/Dockerfile.dockerignore" \
    --build-arg BUILD_IMAGE="$base" --build-arg RUNTIME_IMAGE="$runtime" \
    --build-arg FLEXCSI_GIT_COMMIT="$commit" -t "$tag" "$repo"
fi
size=$("${podman[@]}" image inspect --format '{{.Size}}' "$tag")
echo "build-image: $tag built in $((SECONDS - started)) s, $((size / 1000000)) MB"

if [[ -n $archive ]]; then
  rm -f "$archive"
  "${podman[@]}" save --quiet --format docker-archive -o "$archive" "$tag"
  echo "build-image: saved to $archive"
fi
