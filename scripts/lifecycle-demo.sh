#!/usr/bin/env bash
# Walks flexcsi-bridge, serving csi-loopback, through the FlexVolume calls kubelet and
# kube-controller-manager make (shared/spec/flexvolume.md), printing every call and its reply:
#   attachable driver:     init, attach, waitforattach, mountdevice, mount for two pods, data
#                          written in one pod and read in the other, isattached, unmount both,
#                          unmountdevice, detach, isattached
#   non-attachable driver: init, mount for two pods, data shared, unmount both (the bridge stages
#                          on the first mount and unstages when the last pod leaves)
#   attachable driver whose NodeStageVolume mounts nothing (csi-loopback --stage-without-mount,
#                          csi-driver-host-path's shape): the bridge leaves its marker at the device
#                          mount path, so kubelet's mount-point test passes and unmountdevice comes
# Each call execs the installed flexexec exactly as kubelet does, with kubelet's options JSON, and
# does kubelet's own part around it (mkdir before mount, rmdir after unmount).
#
# Usage: scripts/lifecycle-demo.sh [BUILD_DIR]. Needs root. Builds nothing. Everything is mounted
# inside a private mount namespace; processes, mounts, loop devices and files are removed on exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
driver=$build/drivers/loopback/csi-loopback
bridge=$build/bridge/flexcsi-bridge
flexcsi=$build/cli/flexcsi
flexexec=$build/flexexec/flexexec
for binary in "$driver" "$bridge" "$flexcsi" "$flexexec"; do
  [[ -x $binary ]] || { echo "demo: $binary is not built" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "demo: needs root (loop devices, mounts)" >&2; exit 2; }
if [[ -z ${FLEXCSI_DEMO_IN_NAMESPACE:-} ]]; then
  exec unshare -m --propagation private env FLEXCSI_DEMO_IN_NAMESPACE=1 "$0" "$@"
fi

work=$(mktemp -d /tmp/flexcsi-demo-XXXXXX)
kubelet=$work/kubelet           # kubelet --root-dir
plugins=$work/volume-plugins    # kubelet --volume-plugin-dir
pids=()

cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  awk -v dir="$work/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r |
    while read -r target; do umount "$target" 2>/dev/null || umount -l "$target" || true; done
  losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
    awk -v dir="$work/" 'index($2, dir) == 1 {print $1}' |
    while read -r device; do losetup --detach "$device" || true; done
  if [[ $status -ne 0 ]]; then
    for log in "$work"/*.log; do [[ -f $log ]] && { echo "---- $log" >&2; tail -20 "$log" >&2; }; done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

wait_for_socket() {
  for _ in $(seq 100); do [[ -S $1 ]] && return 0; sleep 0.1; done
  echo "demo: $1 did not appear" >&2
  return 1
}

# kubelet's run of the driver: argv exactly as kubelet builds it, stdout and stderr together.
flex() {
  local exe=$1; shift
  printf '\033[36mkubelet>\033[0m %s' "${exe#"$plugins"/}"
  local arg
  for arg in "$@"; do  # as a shell would need it quoted; the JSON is exactly what kubelet sends
    if [[ $arg =~ ^[A-Za-z0-9_./~:=-]+$ ]]; then printf ' %s' "$arg"; else printf " '%s'" "${arg//\'/\'\\\'\'}"; fi
  done
  printf '\n'
  local reply
  reply=$("$exe" "$@" 2>&1) && rc=0 || rc=$?
  printf '\033[32mreply<\033[0m   %s   (exit %d)\n' "$reply" "$rc"
  REPLY_JSON=$reply
  [[ $(jq -r .status <<<"$reply") != Failure ]] || { echo "demo: $1 failed" >&2; exit 1; }
}

# kubelet removes a pod volume dir or device mount path after a successful unmount with a plain
# rmdir, if the driver did not remove it already (flexvolume.md 2.9, 2.11).
kubelet_rmdir() { [[ ! -d $1 ]] || rmdir "$1"; }

# Go's encoding/json of a map: compact, keys sorted (jq -S -c gives the same bytes here).
options() { jq -S -c -n "$@"; }

say "Starting csi-loopback (two instances: with and without controller attach) and flexcsi-bridge"
mkdir -p "$kubelet/pods" "$kubelet/plugins" "$plugins"  # as kubelet makes them at start
"$driver" --endpoint "unix://$work/csi.sock" --nodeid node-1 --state-dir "$work/csi-state" \
  2>"$work/csi-loopback.log" &
pids+=($!)
"$driver" --endpoint "unix://$work/csi-shared.sock" --nodeid node-1 --no-attach \
  --state-dir "$work/csi-shared-state" 2>"$work/csi-loopback-shared.log" &
pids+=($!)
"$driver" --endpoint "unix://$work/csi-hostpath.sock" --nodeid node-1 --stage-without-mount \
  --state-dir "$work/csi-hostpath-state" 2>"$work/csi-loopback-hostpath.log" &
pids+=($!)
wait_for_socket "$work/csi.sock"
wait_for_socket "$work/csi-shared.sock"
wait_for_socket "$work/csi-hostpath.sock"

cat >"$work/bridge.yaml" <<YAML
kubeletRoot: $kubelet
socket: $work/bridge.sock
stateDatabase: $work/state.db
# No cluster in the demo: kubelet's calls come from this script, so every call is the admin's
# (docs/security.md).
trustPodAuthors: true
drivers:
  - flexDriver: flexcsi/loopback
    csiEndpoint: unix://$work/csi.sock
    attach: true
    rule: {csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}, defaultFsType: ext4}
  - flexDriver: flexcsi/loopback-shared
    csiEndpoint: unix://$work/csi-shared.sock
    attach: false
    rule: {csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}, defaultFsType: ext4}
  - flexDriver: flexcsi/loopback-hostpath
    csiEndpoint: unix://$work/csi-hostpath.sock
    attach: true
    rule: {csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}, defaultFsType: ext4}
YAML
echo "bridge configuration:"; sed 's/^/    /' "$work/bridge.yaml"
"$bridge" --config "$work/bridge.yaml" 2>"$work/bridge.log" &
pids+=($!)
wait_for_socket "$work/bridge.sock"

say "Installing flexexec as both FlexVolume drivers (flexcsi install-driver)"
"$flexcsi" install-driver --config "$work/bridge.yaml" --plugin-dir "$plugins" \
  --flexexec "$flexexec" --socket "$work/bridge.sock"
find "$plugins" -type f | sed "s|$plugins/|    |"

say "Provisioning three CSI volumes (FlexVolume PVs are pre-provisioned)"
vol=$("$flexcsi" volume create --endpoint "unix://$work/csi.sock" --name pv-demo --size 64Mi)
shared=$("$flexcsi" volume create --endpoint "unix://$work/csi-shared.sock" --name pv-shared \
  --size 64Mi)
hostpath=$("$flexcsi" volume create --endpoint "unix://$work/csi-hostpath.sock" --name pv-hostpath \
  --size 64Mi)
echo "    pv-demo     -> CSI volume $vol"
echo "    pv-shared   -> CSI volume $shared"
echo "    pv-hostpath -> CSI volume $hostpath"

# ---------------------------------------------------------------------------------------------
say "Attachable driver flexcsi/loopback: one PV, two pods on node-1"
exe=$plugins/flexcsi~loopback/loopback
J=$(options --arg v "$vol" '{"kubernetes.io/fsType":"ext4","kubernetes.io/pvOrVolumeName":"pv-demo",
  "kubernetes.io/readwrite":"rw",volumeID:$v}')
pod_options() {  # name uid: the mount JSON (base keys + pod keys + a secret + fsGroup)
  options --arg v "$vol" --arg n "$1" --arg u "$2" '{"kubernetes.io/fsType":"ext4",
    "kubernetes.io/mounterArgs.FsGroup":"2000","kubernetes.io/pod.name":$n,
    "kubernetes.io/pod.namespace":"shop","kubernetes.io/pod.uid":$u,
    "kubernetes.io/pvOrVolumeName":"pv-demo","kubernetes.io/readwrite":"rw",
    "kubernetes.io/secret/password":"czNjcjN0","kubernetes.io/serviceAccount.name":"default",
    volumeID:$v}'
}
dmp=$kubelet/plugins/kubernetes.io/flexvolume/flexcsi/loopback/mounts/pv-demo
pod_a=$kubelet/pods/6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10/volumes/flexcsi~loopback/pv-demo
pod_b=$kubelet/pods/0b8e7c52-1f0a-4c39-8d2e-5a6b7c8d9e01/volumes/flexcsi~loopback/pv-demo

flex "$exe" init
echo "-- kube-controller-manager attaches the volume to node-1"
flex "$exe" attach "$J" node-1
device=$(jq -r .device <<<"$REPLY_JSON")
echo "-- kubelet on node-1"
flex "$exe" waitforattach "$device" "$J"
mkdir -p -m 0750 "$dmp"
flex "$exe" mountdevice "$dmp" "$device" "$J"
mkdir -p -m 0750 "$pod_a" "$pod_b"
flex "$exe" mount "$pod_a" "$(pod_options web-0 6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10)"
flex "$exe" mount "$pod_b" "$(pod_options web-1 0b8e7c52-1f0a-4c39-8d2e-5a6b7c8d9e01)"
echo "hello from web-0" >"$pod_a/greeting"
echo "-- web-1 reads what web-0 wrote: $(cat "$pod_b/greeting")"
findmnt -n -o TARGET,SOURCE,FSTYPE,OPTIONS "$pod_a" | sed 's/^/    mounted: /'
echo "-- kube-controller-manager's periodic check"
flex "$exe" isattached "$J" node-1
echo "-- both pods deleted"
flex "$exe" unmount "$pod_a"; kubelet_rmdir "$pod_a"
flex "$exe" unmount "$pod_b"; kubelet_rmdir "$pod_b"
flex "$exe" unmountdevice "$dmp"; kubelet_rmdir "$dmp"
flex "$exe" detach pv-demo node-1
flex "$exe" isattached "$J" node-1

# ---------------------------------------------------------------------------------------------
say "Non-attachable driver flexcsi/loopback-shared: two pods share a PV, no mountdevice"
exe=$plugins/flexcsi~loopback-shared/loopback-shared
shared_options() {
  options --arg v "$shared" --arg n "$1" --arg u "$2" '{"kubernetes.io/fsType":"",
    "kubernetes.io/pod.name":$n,"kubernetes.io/pod.namespace":"default",
    "kubernetes.io/pod.uid":$u,"kubernetes.io/pvOrVolumeName":"pv-shared",
    "kubernetes.io/readwrite":"rw","kubernetes.io/serviceAccount.name":"default",volumeID:$v}'
}
pod_c=$kubelet/pods/11111111-2222-3333-4444-555555555555/volumes/flexcsi~loopback-shared/pv-shared
pod_d=$kubelet/pods/66666666-7777-8888-9999-000000000000/volumes/flexcsi~loopback-shared/pv-shared
flex "$exe" init
mkdir -p -m 0750 "$pod_c" "$pod_d"
flex "$exe" mount "$pod_c" "$(shared_options app-0 11111111-2222-3333-4444-555555555555)"
flex "$exe" mount "$pod_d" "$(shared_options app-1 66666666-7777-8888-9999-000000000000)"
echo "shared by app-0" >"$pod_c/note"
echo "-- app-1 reads: $(cat "$pod_d/note")"
echo "-- the bridge staged the volume once and counts its two publications:"
"$flexcsi" state --socket "$work/bridge.sock" | sed 's/^/    /'
flex "$exe" unmount "$pod_c"; kubelet_rmdir "$pod_c"
flex "$exe" unmount "$pod_d"; kubelet_rmdir "$pod_d"

# ---------------------------------------------------------------------------------------------
say "Attachable driver flexcsi/loopback-hostpath: NodeStageVolume mounts nothing"
exe=$plugins/flexcsi~loopback-hostpath/loopback-hostpath
H=$(options --arg v "$hostpath" '{"kubernetes.io/fsType":"ext4",
  "kubernetes.io/pvOrVolumeName":"pv-hostpath","kubernetes.io/readwrite":"rw",volumeID:$v}')
hp_options() {
  options --arg v "$hostpath" '{"kubernetes.io/fsType":"ext4","kubernetes.io/pod.name":"db-0",
    "kubernetes.io/pod.namespace":"default","kubernetes.io/pod.uid":"77777777-8888-9999-aaaa-bbbbbbbbbbbb",
    "kubernetes.io/pvOrVolumeName":"pv-hostpath","kubernetes.io/readwrite":"rw",
    "kubernetes.io/serviceAccount.name":"default",volumeID:$v}'
}
hp_dmp=$kubelet/plugins/kubernetes.io/flexvolume/flexcsi/loopback-hostpath/mounts/pv-hostpath
pod_e=$kubelet/pods/77777777-8888-9999-aaaa-bbbbbbbbbbbb/volumes/flexcsi~loopback-hostpath/pv-hostpath
flex "$exe" init
flex "$exe" attach "$H" node-1
device=$(jq -r .device <<<"$REPLY_JSON")
flex "$exe" waitforattach "$device" "$H"
mkdir -p -m 0750 "$hp_dmp"
flex "$exe" mountdevice "$hp_dmp" "$device" "$H"
echo "-- kubelet calls unmountdevice only for a mount point; the driver mounted nothing there, the"
echo "   bridge's marker keeps the device mount path one:"
findmnt -n -o TARGET,SOURCE,FSTYPE,OPTIONS "$hp_dmp" | sed 's/^/    mounted: /'
mkdir -p -m 0750 "$pod_e"
flex "$exe" mount "$pod_e" "$(hp_options)"
findmnt -n -o TARGET,SOURCE,FSTYPE "$pod_e" | sed 's/^/    mounted: /'
flex "$exe" unmount "$pod_e"; kubelet_rmdir "$pod_e"
flex "$exe" unmountdevice "$hp_dmp"; kubelet_rmdir "$hp_dmp"
flex "$exe" detach pv-hostpath node-1

# ---------------------------------------------------------------------------------------------
say "Afterwards"
"$flexcsi" state --socket "$work/bridge.sock" | sed 's/^/    /'
left_mounts=$(awk -v dir="$kubelet/" 'index($2, dir) == 1' /proc/self/mounts | wc -l)
left_loops=$(losetup --list --noheadings --output BACK-FILE | grep -c "^$work/" || true)
echo "    mounts left under the kubelet root: $left_mounts; loop devices left: $left_loops"
[[ $left_mounts -eq 0 && $left_loops -eq 0 ]] || { echo "demo: something leaked" >&2; exit 1; }
echo
echo "demo complete: every FlexVolume call was served through CSI, and nothing leaked."
