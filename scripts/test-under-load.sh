#!/usr/bin/env bash
# The whole test suite (scripts/test.sh) on a busy machine: stress-ng keeps two cores busy while
# the suite runs N times in a row (default 3). Prints each run's time and result; exits non-zero
# when any run failed. stress-ng is stopped on every exit, a failure or Ctrl-C included.
#   scripts/test-under-load.sh [N]     (FLEXCSI_KUBE_ASSETS as for scripts/test.sh)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]   (N runs, default 3)" >&2; exit 2; }

"$repo/scripts/install-deps.sh"  # stress-ng among the rest

stress_pid=
stop_stress() {
  if [[ -n $stress_pid ]]; then
    kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    stress_pid=
  fi
}
trap stop_stress EXIT
trap 'exit 130' INT TERM

stress-ng --cpu 2 --quiet &
stress_pid=$!

results=()
failed=0
for ((i = 1; i <= runs; i++)); do
  echo "test-under-load: run $i of $runs (stress-ng --cpu 2 beside it)"
  start=$SECONDS
  if "$repo/scripts/test.sh"; then result=passed; else result=FAILED; failed=$((failed + 1)); fi
  results+=("run $i: $result in $((SECONDS - start)) s")
  echo "test-under-load: ${results[-1]}"
done
stop_stress

echo "test-under-load: $((runs - failed)) of $runs runs passed under stress-ng --cpu 2" \
     "(FLEXCSI_KUBE_ASSETS=${FLEXCSI_KUBE_ASSETS:-unset})"
printf '  %s\n' "${results[@]}"
((failed == 0))
