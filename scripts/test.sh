#!/usr/bin/env bash
# README command (2): install what is missing, build, run the whole test suite.
# Tests that mount run in private mount namespaces of their own and clean up after themselves.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
"$repo/scripts/build.sh"
cd "$BUILD_DIR"
# Three tests at a time on two cores: the real-cluster suites spend most of their time waiting
# on Kubernetes, and every test keeps to its own namespaces, ports and temp dirs
# (tests/cluster/README.md, "side by side"). Three releases' suites fit CI's time only so.
ctest --output-on-failure --timeout 600 -j "${TEST_JOBS:-3}"
