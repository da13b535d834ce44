#!/usr/bin/env bash
# README command (1): install what is missing, build, and run the main job: flexcsi-bridge
# serving the bundled csi-loopback driver, walked through a kubelet-faithful volume lifecycle.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/as-root.sh" "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
"$repo/scripts/build.sh"
exec "$repo/scripts/lifecycle-demo.sh" "$BUILD_DIR"
