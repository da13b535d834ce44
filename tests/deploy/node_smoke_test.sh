#!/usr/bin/env bash
# A node assembled from the real programs, the way the package or the DaemonSet assembles it:
# csi-loopback + flexcsi-bridge on a temp kubelet root, `flexcsi install-driver` into a temp
# plugin dir, then `flexcsi doctor` must pass every check, `flexcsi state` must answer, a
# FlexVolume call through the installed flexexec must show up in the bridge's /metrics, and
# that scrape must pass the real `promtool check metrics`.
#
# Runs itself inside a private mount namespace whose mounts are shared (unshare), so that the
# kubelet-root propagation check has a definite answer and nothing leaks to this machine.
# Usage: node_smoke_test.sh BUILD_DIR
set -euo pipefail
build=$1
if [[ ${FLEXCSI_SMOKE_IN_NS:-} != 1 ]]; then
  exec env FLEXCSI_SMOKE_IN_NS=1 unshare -m --propagation shared bash "$(readlink -f "$0")" "$@"
fi

tmp=$(mktemp -d /tmp/flexcsi-smoke-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/kubelet/pods" "$tmp/kubelet/plugins/loopback" "$tmp/plugins" "$tmp/state"
cat >"$tmp/bridge.yaml" <<YAML
kubeletRoot: $tmp/kubelet
socket: $tmp/bridge.sock
stateDatabase: $tmp/state/state.db
metricsAddress: 127.0.0.1:$port
# a node without a cluster: registration off on purpose, which doctor passes quietly
registerDrivers: false
# and so no cluster to tell a PV's call from an inline volume's (docs/security.md)
trustPodAuthors: true
drivers:
  - flexDriver: flexcsi/loopback
    csiEndpoint: unix://$tmp/kubelet/plugins/loopback/csi.sock
    attach: true
    rule:
      csiDriver: loopback.csi.flexcsi.io
      volumeHandle: {fromOption: volumeID}
      defaultFsType: ext4
YAML

"$build/drivers/loopback/csi-loopback" --endpoint "unix://$tmp/kubelet/plugins/loopback/csi.sock" \
  --nodeid node-1 --state-dir "$tmp/loopback" >"$tmp/loopback.log" 2>&1 &
pids+=($!)
"$build/bridge/flexcsi-bridge" --config "$tmp/bridge.yaml" >"$tmp/bridge.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -S $tmp/bridge.sock ]] && break; sleep 0.1; done
[[ -S $tmp/bridge.sock ]] || { cat "$tmp/bridge.log"; echo "FAIL: bridge socket never appeared"; exit 1; }

flexcsi=$build/cli/flexcsi
if "$flexcsi" install-driver --config "$tmp/bridge.yaml" --plugin-dir "$tmp/plugins" \
     --flexexec "$build/flexexec/flexexec" >"$tmp/install.log" 2>&1; then
  pass "install-driver with the real flexexec"
else
  cat "$tmp/install.log"; fail "install-driver"
fi

# doctor: every check passes on this node (CSI driver Probe-ready through the bridge, etc.).
doctor_rc=0
"$flexcsi" doctor --config "$tmp/bridge.yaml" --plugin-dir "$tmp/plugins" >"$tmp/doctor.txt" 2>&1 || doctor_rc=$?
cat "$tmp/doctor.txt"
# (9: "kubelet root", the bridge's own check that kubelet's pods/ and plugins/ are there;
# 12: the installed flexexec's and the running bridge's versions, and their skew)
if [[ $doctor_rc == 0 ]] && grep -q "^12 checks: 12 pass, 0 warn, 0 fail" "$tmp/doctor.txt" &&
   grep -q "^kubelet root  *PASS" "$tmp/doctor.txt"; then
  pass "doctor: all checks pass against the real bridge and csi-loopback"
else
  fail "doctor exited $doctor_rc"
fi
grep -q "PUBLISH_UNPUBLISH_VOLUME" "$tmp/doctor.txt" && pass "doctor lists csi-loopback's capabilities" ||
  fail "doctor did not list capabilities"

# One release on this node: the bridge says it in its first log line, over bridge.health (what
# doctor shows) and in its metrics (below), as its --version does; doctor shows the installed
# flexexec's --version. (Each program's own: in a shared build tree the programs may have been
# linked after different configures, hence with different commits.)
# "0.2.0 (git aa82685)"
release=$("$build/bridge/flexcsi-bridge" --version | sed -E 's/^flexcsi-bridge //')
flexexec_release=$("$tmp/plugins/flexcsi~loopback/loopback" --version | sed -E 's/^flexexec //')
row() { grep -E "^$1 +PASS +" "$tmp/doctor.txt" | sed -E "s|^$1 +PASS +||"; }
grep -qF "flexcsi-bridge $release starting" "$tmp/bridge.log" &&
  pass "the bridge's log names its release: $release" || fail "no start line naming $release"
if [[ $(row "bridge version") == "$release" &&
      $(row "flexexec version flexcsi/loopback") == "$flexexec_release: $tmp/plugins/flexcsi~loopback/loopback" ]] &&
   grep -qE "^version skew +PASS" "$tmp/doctor.txt"; then
  pass "doctor reports the bridge's and flexexec's release, no skew"
else
  fail "doctor's version rows do not name $release and $flexexec_release"
fi

# doctor must notice when the CSI driver goes away.
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
"$flexcsi" doctor --config "$tmp/bridge.yaml" --plugin-dir "$tmp/plugins" >"$tmp/doctor2.txt" 2>&1 &&
  fail "doctor passed with csi-loopback stopped" ||
  { grep -q "^CSI endpoint flexcsi/loopback  *FAIL" "$tmp/doctor2.txt" &&
      pass "doctor fails the CSI endpoint once csi-loopback is stopped" ||
      { cat "$tmp/doctor2.txt"; fail "doctor did not flag the stopped CSI driver"; }; }

if "$flexcsi" state --config "$tmp/bridge.yaml" -o json >"$tmp/state.json" 2>&1 &&
   /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"]=="Success"' "$tmp/state.json"; then
  pass "state -o json answered Success"
else
  cat "$tmp/state.json"; fail "state"
fi

# One FlexVolume call through the installed executable, then scrape the bridge.
"$tmp/plugins/flexcsi~loopback/loopback" isattached '{"volumeID":"vol-1"}' node-1 >"$tmp/call.json" || true
echo "isattached -> $(cat "$tmp/call.json")"
http_get() {  # path -> full HTTP response on stdout
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3
  cat <&3
  exec 3<&-
}
http_get /metrics | tr -d '\r' | sed '1,/^$/d' >"$tmp/metrics.txt"
if grep -q '^flexcsi_flexvolume_calls_total{operation="isattached"' "$tmp/metrics.txt"; then
  pass "the call is counted in flexcsi_flexvolume_calls_total"
else
  fail "no flexcsi_flexvolume_calls_total sample for isattached"; cat "$tmp/metrics.txt"
fi
grep -q '^flexcsi_records{kind="attachments"}' "$tmp/metrics.txt" && pass "flexcsi_records exported" ||
  fail "flexcsi_records missing"
version=${release%% *} commit=$(sed -nE 's/.*\(git (.*)\)$/\1/p' <<<"$release")
grep -qxF "flexcsi_bridge_build_info{version=\"$version\",commit=\"$commit\"} 1" "$tmp/metrics.txt" &&
  pass "flexcsi_bridge_build_info names $version, commit '$commit'" ||
  { grep build_info "$tmp/metrics.txt"; fail "no flexcsi_bridge_build_info for $version"; }
if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1; then
  pass "promtool check metrics accepts the bridge's scrape"
else
  cat "$tmp/promtool.txt"; fail "promtool check metrics"
fi
http_get /healthz | head -1 | grep -q "^HTTP/1.1 [25]0[03]" && pass "/healthz answers" || fail "/healthz"

echo "smoke checks failed: $failures"
exit $((failures > 0))
