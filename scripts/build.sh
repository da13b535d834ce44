#!/usr/bin/env bash
# Installs what is missing, then configures and builds flexcsi into BUILD_DIR (default: build).
# Shared by scripts/demo.sh and scripts/test.sh, the README's two commands.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$repo/build}

[[ $(id -u) -eq 0 ]] || { echo "flexcsi: run as root (apt-get, loop devices, mounts)" >&2; exit 2; }
"$repo/scripts/install-deps.sh"

# Two cores on the reference machines; more where there are more.
jobs=${JOBS:-$(nproc)}
# ccache, where the machine has it, makes a second build tree (a git worktree) cost minutes.
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"
