#!/usr/bin/env bash
# README command (2): install what is missing, build, run the whole test suite.
# Tests that mount run in private mount namespaces of their own and clean up after themselves.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
"$repo/scripts/build.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j "${JOBS:-1}"
