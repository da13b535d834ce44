#!/usr/bin/env bash
# build_release.sh's refusals, each one line naming what is wrong, before anything is built: no
# CHANGELOG.md, a CHANGELOG.md naming no release commit, and a commit not in the history (what a
# shallow clone gives).
set -euo pipefail
script=${1:?usage: build_release_refusals_test.sh <build_release.sh>}
repo=$(mktemp -d /tmp/flexcsi-build-release-test.XXXXXX)
trap 'rm -rf "$repo"' EXIT
git -C "$repo" init -q
git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
export FLEXCSI_RELEASE_CACHE=$repo/cache
unset FLEXCSI_UPGRADE_REPO  # the repo under test is this one

expect_refusal() {  # <what> <expected text>
  local out
  if out=$("$script" "$repo" 2>&1); then
    echo "FAIL ($1): build_release.sh succeeded: $out"; exit 1
  fi
  if [[ $(wc -l <<<"$out") -ne 1 || $out != *"$2"* ]]; then
    echo "FAIL ($1): expected one line with '$2', got:"; echo "$out"; exit 1
  fi
  echo "ok ($1): $out"
}

expect_refusal "no changelog" "CHANGELOG.md is missing"
printf '# Changelog\n\n## 0.2.0 — unreleased\n' >"$repo/CHANGELOG.md"
expect_refusal "no release commit" "names no release commit"
printf '# Changelog\n\n## 0.2.0 — unreleased\n\n## 0.1.0 — commit deadbee\n' >"$repo/CHANGELOG.md"
expect_refusal "commit not in history" "release 0.1.0's commit deadbee (CHANGELOG.md) is not in"
[[ ! -e $repo/cache ]] || { echo "FAIL: a refusal created the cache"; exit 1; }
