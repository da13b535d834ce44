# Sourced by the README's commands: re-runs the calling script as root. Root (containers, CI)
# runs it as it is; a sudo user is asked once by sudo; anyone else gets a plain error.
# Usage, first thing in a script: source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo --preserve-env=BUILD_DIR,BUILD_TYPE,JOBS,TEST_JOBS,CI,FLEXCSI_KUBE_ASSETS -- "$0" "$@"
  fi
  echo "flexcsi: $(basename "$0") needs root (apt-get, loop devices, mounts) and there is no sudo;" \
       "run it as root" >&2
  exit 2
fi
