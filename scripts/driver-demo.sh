#!/usr/bin/env bash
# Runs csi-loopback from a built tree and walks one volume through its life, printing every CSI
# call and its result: create, controller publish, stage, publish (a writable and a read-only
# target), write/read, expand, stats, unpublish, unstage, controller unpublish, delete.
#
# Usage: scripts/driver-demo.sh [BUILD_DIR]     (default: build-driver; FS_TYPE=ext4|xfs, xfs
#        default because it also grows online where the driver lacks CAP_SYS_RESOURCE;
#        DRIVER_FLAGS="--stage-without-mount --no-attach" etc. picks a driver shape, see
#        drivers/loopback/README.md; the demo makes only the calls that shape offers)
# Needs root. Builds nothing. Everything is mounted in a private mount namespace, and the loop
# device and temp dir are removed on exit, whatever happens.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-$repo/build-driver}
driver=$build_dir/drivers/loopback/csi-loopback
demo=$build_dir/drivers/loopback/csi-loopback-demo
fs_type=${FS_TYPE:-xfs}
read -r -a driver_flags <<<"${DRIVER_FLAGS:-}"

for binary in "$driver" "$demo"; do
  [[ -x $binary ]] || { echo "driver-demo: $binary not built (cmake --build $build_dir)" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "driver-demo: needs root (loop devices, mounts)" >&2; exit 2; }

# Re-run ourselves inside a private mount namespace; mounts there never reach the host and
# vanish with the namespace.
if [[ -z ${FLEXCSI_DEMO_IN_NAMESPACE:-} ]]; then
  exec unshare -m --propagation private env FLEXCSI_DEMO_IN_NAMESPACE=1 "$0" "$@"
fi

work=$(mktemp -d /tmp/flexcsi-demo-XXXXXX)
driver_pid=

cleanup() {
  local status=$?
  if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
    kill -TERM "$driver_pid" 2>/dev/null || true
    wait "$driver_pid" 2>/dev/null || true
  fi
  # Deepest mounts first (the demo unmounts itself unless it failed half-way).
  awk -v dir="$work/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r |
    while read -r target; do umount "$target" || umount -l "$target" || true; done
  # Loop devices are not namespaced: detach every one backed by a file in our work dir.
  losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
    awk -v dir="$work/" 'index($2, dir) == 1 {print $1}' |
    while read -r device; do losetup --detach "$device" || true; done
  if [[ $status -ne 0 && -f $work/driver.log ]]; then
    echo "---- csi-loopback log ----" >&2
    cat "$work/driver.log" >&2
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

socket=$work/csi.sock
echo "driver-demo: starting csi-loopback on unix://$socket (state in $work/state)" \
  "${driver_flags[@]}"
"$driver" --endpoint "unix://$socket" --nodeid demo-node --state-dir "$work/state" \
  "${driver_flags[@]}" 2>"$work/driver.log" &
driver_pid=$!

for _ in $(seq 1 100); do
  [[ -S $socket ]] && break
  kill -0 "$driver_pid" 2>/dev/null || { echo "driver-demo: csi-loopback exited" >&2; exit 1; }
  sleep 0.1
done
[[ -S $socket ]] || { echo "driver-demo: no socket after 10 s" >&2; exit 1; }

"$demo" --endpoint "unix://$socket" --work-dir "$work/paths" --node-id demo-node \
  --fs-type "$fs_type"
echo "driver-demo: loop devices of this demo still attached: $(losetup --list --noheadings \
  --output NAME,BACK-FILE | awk -v dir="$work/" 'index($2, dir) == 1' | wc -l)"
