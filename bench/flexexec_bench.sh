#!/usr/bin/env bash
# Measures what flexexec costs kubelet:
#   1. `flexexec init` wall time per call next to /bin/true, in the same hyperfine run
#      (both exec'd directly, no shell: hyperfine -N);
#   2. a pod volume mount+unmount round trip through flexexec and flexcsi-bridge next to the
#      same NodePublish/NodeUnpublish sent straight to csi-loopback (bench/flexexec_bench.cc),
#      inside a private mount namespace.
# Usage: bench/flexexec_bench.sh [build-dir] [iterations]   (as root; build target
#        flexexec_bench first). Prints figures; asserts nothing.
set -euo pipefail

build=${1:-$(dirname "$0")/../build}
iterations=${2:-50}
flexexec="$build/flexexec/flexexec"
bench="$build/bench/flexexec_bench"
[[ -x $flexexec ]] || { echo "no $flexexec; build target flexexec" >&2; exit 1; }

tmp=$(mktemp -d /tmp/flexexec-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Installed the way kubelet finds it: <plugindir>/<vendor~name>/<name> + flexcsi.json.
driver_dir="$tmp/plugins/flexcsi~loopback"
mkdir -p "$driver_dir"
cp "$flexexec" "$driver_dir/loopback"
cat >"$driver_dir/flexcsi.json" <<'JSON'
{"capabilities": {"attach": true, "selinuxRelabel": true, "supportsMetrics": true,
                  "fsGroup": true, "requiresFSResize": true},
 "bridgeSocket": "/run/flexcsi/bridge.sock"}
JSON

echo "== flexexec init vs /bin/true =="
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 50 --runs 1000 --style basic \
    /bin/true "$driver_dir/loopback init"
else
  echo "hyperfine not installed (scripts/install-deps.sh installs it); see the figures below"
fi

echo
echo "== mount+unmount round trip: flexexec via bridge vs direct gRPC =="
if [[ -x $bench ]]; then
  unshare -m --propagation private "$bench" --iterations "$iterations"
else
  echo "no $bench; build target flexexec_bench (needs flexcsi-bridge and csi-loopback)" >&2
  exit 1
fi
